import { notFound } from '../errors.ts'
import { messageContent } from '../store/messages.ts'
import type { MessageRow } from '../store/rows.ts'
import type { Store } from '../store/store.ts'

/** A message as read for a streamed update: its content is read only if a client selects it. */
export type ContentlessMessage = Omit<MessageRow, 'content'> & { content?: undefined }

/** What a `Message` resolves from. */
export type MessageValue = MessageRow | ContentlessMessage

/**
 * The rows of a session event are shared by every subscriber of the event on this instance, so
 * keying by the row object reads a content once per event whatever the number of subscribers
 * that select it; the entry goes with the event.
 */
const contents = new WeakMap<ContentlessMessage, Promise<string>>()

export function contentOf(store: Store, message: MessageValue): string | Promise<string> {
  if (message.content !== undefined) return message.content
  let read = contents.get(message)
  if (!read) {
    read = messageContent(store, message.id).then((content) => {
      if (content === undefined) throw notFound('Message', message.id)
      return content
    })
    contents.set(message, read)
  }
  return read
}

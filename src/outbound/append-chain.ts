/**
 * `MessageUpdated.append` on one subscription: which published appends a client may apply (it
 * holds the base they extend), and how an append is cut into slices of at most 16 KiB of text (or
 * of the send window's room). The frames that carry them are append-frame.ts.
 *
 * The rule a client can rely on: a non-null append extends the content of the last frame of that
 * message this subscription delivered (MessageAdded, the SessionJoined snapshot or MessageUpdated);
 * a status-only change is an empty append; anything that breaks the chain (a dropped publication,
 * an evicted frame, an errored frame, a change that may touch content, a message not tracked any
 * more) makes the next frame's append null, and the client reads `message.content` once.
 */
export interface Append {
  /** Length of the content before `text`, in UTF-16 code units. */
  offset: number
  text: string
}

/** Messages per subscription whose delivered version is remembered; an older one just gets append null. */
export const TRACKED_MESSAGES = 32

/** (contract v1.3) The most text one MessageUpdated frame appends, in UTF-8 bytes. */
export const APPEND_SLICE_BYTES = 16 * 1024

/**
 * The least text of a slice cut to fit the send window: below it a frame's own fields (~0.5 KB)
 * would cost more than the text, and a nearly full window would be filled by frames of a few bytes.
 */
export const MIN_SLICE_BYTES = 2 * 1024

/**
 * The text bound of the next slice of a frame whose other bytes (JSON envelope, message fields)
 * are `envelope`, when the send window takes `room` more bytes (undefined: no window): the
 * slice fills the window, between MIN_SLICE_BYTES and APPEND_SLICE_BYTES. A slow reader gets
 * smaller slices, so that a response written after one waits about the window, not 16 KiB.
 */
export function sliceBound(room: number | undefined, envelope: number): number {
  if (room === undefined) return APPEND_SLICE_BYTES
  return Math.min(APPEND_SLICE_BYTES, Math.max(MIN_SLICE_BYTES, room - envelope))
}

/**
 * How many UTF-16 code units of `text`, from its start, encode in at most `maxBytes` of UTF-8,
 * never ending between the two halves of a surrogate pair (a lone surrogate counts as U+FFFD,
 * 3 bytes, as the wire encodes it). At least one code point, so that a cut always progresses.
 */
export function utf8Cut(text: string, maxBytes: number): number {
  // Every code unit is at most 3 bytes (a pair: 4 for two units).
  if (text.length * 3 <= maxBytes) return text.length
  let bytes = 0
  let i = 0
  while (i < text.length) {
    const unit = text.charCodeAt(i)
    let width = 1
    let size: number
    if (unit < 0x80) size = 1
    else if (unit < 0x800) size = 2
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      size = 4
      width = 2
    } else size = 3
    if (bytes + size > maxBytes) return i === 0 ? width : i
    bytes += size
    i += width
  }
  return i
}

/**
 * The first slice of `append` (at most `maxBytes` of UTF-8 text) and what follows it (undefined
 * when it all fits): contiguous offsets, no surrogate pair cut in two.
 */
export function sliceAppend(append: Append, maxBytes = APPEND_SLICE_BYTES): { head: Append; rest: Append | undefined } {
  const cut = utf8Cut(append.text, maxBytes)
  if (cut >= append.text.length) return { head: append, rest: undefined }
  return {
    head: { offset: append.offset, text: append.text.slice(0, cut) },
    rest: { offset: append.offset + cut, text: append.text.slice(cut) },
  }
}

/** What a subscription's client holds of one message: its version, and its content's length when known. */
interface Held {
  version: number
  length: number | undefined
}

/**
 * Per subscription, for the most recent messages: the version whose content the client holds
 * (or will hold once what is queued is written). Bounded: forgetting a message only costs that
 * client one content read.
 */
export class AppendChain {
  readonly #held = new Map<string, Held>()

  get size(): number {
    return this.#held.size
  }

  /** The subscription delivers the message at `version` with its content (snapshot, MessageAdded, a full update). */
  seed(messageId: string, version: number, length: number): void {
    const known = this.#held.get(messageId)
    if (known === undefined || version >= known.version) this.#set(messageId, { version, length })
  }

  /**
   * The append to deliver for a publication of `version` whose content grew by `change` (or did
   * not change): `stale` when the client holds that version already (skip the frame), the append
   * when it extends exactly what the client holds, null otherwise (the client reads content).
   */
  advance(messageId: string, version: number, change: Append | 'unchanged'): Append | null | 'stale' {
    const known = this.#held.get(messageId)
    if (known !== undefined && version <= known.version) return 'stale'
    const chained = known !== undefined && known.version === version - 1 ? known : undefined
    if (change === 'unchanged') {
      // An empty append keeps the chain (and spares the client a content read) across a status change.
      const length = chained?.length
      this.#set(messageId, { version, length })
      return length === undefined ? null : { offset: length, text: '' }
    }
    this.#set(messageId, { version, length: change.offset + change.text.length })
    return chained && (chained.length === undefined || chained.length === change.offset) ? change : null
  }

  /**
   * When the frame advanced to `version` is queued: true when nothing broke the chain in between
   * (an eviction of the frame before it, while this one was being executed). Either way the
   * frame is now the client's base.
   */
  intact(messageId: string, version: number, length: number): boolean {
    if (this.#held.get(messageId)?.version === version) return true
    this.#set(messageId, { version, length })
    return false
  }

  forget(messageId: string): void {
    this.#held.delete(messageId)
  }

  #set(messageId: string, held: Held): void {
    // Delete first so the map's order is recency: the oldest entry is the one to let go.
    this.#held.delete(messageId)
    this.#held.set(messageId, held)
    if (this.#held.size > TRACKED_MESSAGES) this.#held.delete(this.#held.keys().next().value!)
  }
}

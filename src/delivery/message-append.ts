/**
 * `MessageUpdated.append` end to end on one subscription: which published appends a client may
 * apply (it holds the base they extend), and how undelivered appends of one message merge in the
 * replaceable lane so that no text is ever dropped.
 *
 * The rule a client can rely on: a non-null append extends the content of the last frame of that
 * message this subscription delivered (MessageAdded, the SessionJoined snapshot or MessageUpdated);
 * a status-only change is an empty append; anything that breaks the chain (a dropped publication,
 * an evicted frame, an errored frame, a change that may touch content, a message not tracked any
 * more) makes the next frame's append null, and the client reads `message.content` once.
 */
import type { ReplaceableFrame } from './outbound-scheduler.ts'

export interface Append {
  /** Length of the content before `text`, in UTF-16 code units. */
  offset: number
  text: string
}

/** Messages per subscription whose delivered version is remembered; an older one just gets append null. */
export const TRACKED_MESSAGES = 32

type Path = readonly (string | number)[]

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

/** What the resolvers of one MessageUpdated frame record for the gateway. */
export interface StreamTag {
  messageId: string
  version: number
  /** The append this frame carries (null: the client reads content). */
  append: Append | null
  chain: AppendChain
  /** Response paths (aliases included) of every `append` field of the frame that resolved non-null. */
  appendPaths: Path[]
  /** Response paths of the `offset` and `text` fields under them. */
  leaves: { path: Path; field: keyof Append }[]
}

export function streamTag(messageId: string, version: number, append: Append | null, chain: AppendChain): StreamTag {
  return { messageId, version, append, chain, appendPaths: [], leaves: [] }
}

/**
 * The replaceable entry of one serialized MessageUpdated frame. Merges are kept structured and
 * the frame is re-serialized once, when written (JSON.parse / stringify only for a frame whose
 * append changed).
 */
class StreamFrame implements ReplaceableFrame {
  constructor(
    private readonly frame: string,
    private readonly tag: StreamTag,
    readonly append: Append | null,
  ) {}

  render(): string {
    return this.append === this.tag.append ? this.frame : patchAppend(this.frame, this.tag, this.append)
  }

  supersede(previous: ReplaceableFrame): ReplaceableFrame {
    if (this.append === null) return this
    const before = previous instanceof StreamFrame ? previous.append : null
    // The client never got `previous`: without its text in front, this append has no base.
    if (before === null || before.offset + before.text.length !== this.append.offset) return this.#with(null)
    return this.#with({ offset: before.offset, text: before.text + this.append.text })
  }

  evicted(): void {
    this.tag.chain.forget(this.tag.messageId)
  }

  #with(append: Append | null): StreamFrame {
    return new StreamFrame(this.frame, this.tag, append)
  }
}

/** The scheduler entry for a MessageUpdated frame, its append checked against the chain once more. */
export function streamFrame(frame: string, tag: StreamTag): ReplaceableFrame {
  if (tag.append === null) return new StreamFrame(frame, tag, null)
  // An error may have cut the append out of the frame: the client cannot extend its copy.
  // (Inside JSON string values quotes are escaped, so this matches a key, never content.)
  if (frame.includes('"errors":')) {
    tag.chain.forget(tag.messageId)
    return new StreamFrame(frame, tag, null)
  }
  const intact = tag.chain.intact(tag.messageId, tag.version, tag.append.offset + tag.append.text.length)
  return new StreamFrame(frame, tag, intact ? tag.append : null)
}

function patchAppend(frame: string, tag: StreamTag, append: Append | null): string {
  const message = JSON.parse(frame) as { payload?: { data?: unknown } }
  const data = message.payload?.data
  if (append === null) for (const path of tag.appendPaths) setAt(data, path, null)
  else for (const { path, field } of tag.leaves) setAt(data, path, append[field])
  return JSON.stringify(message)
}

function setAt(root: unknown, path: Path, value: unknown): void {
  let node = root
  for (const key of path.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return
    node = (node as Record<string | number, unknown>)[key]
  }
  if (typeof node === 'object' && node !== null) (node as Record<string | number, unknown>)[path[path.length - 1]!] = value
}

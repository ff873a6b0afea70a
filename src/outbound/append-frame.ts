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

/**
 * What the resolvers of one MessageUpdated frame record while it is executed, for the frame's
 * replaceable entry (streamFrame) once it is serialized. One per frame and subscription: the
 * event carries it (SessionEventValue.stream), so every resolver under the event reaches it.
 */
export class StreamTag {
  /** Response paths (aliases included) of every `append` field of the frame that resolved non-null. */
  readonly appendPaths: Path[] = []
  /** Response paths of the `offset` and `text` fields under them. */
  readonly leaves: { path: Path; field: keyof Append }[] = []
  /** The frame selects `message.content` (it carries the whole content anyway). */
  withContent = false
  /** The frame parsed once, for a frame re-serialized with other appends (its slices). */
  parsed?: { payload?: { data?: unknown } }

  constructor(
    readonly messageId: string,
    readonly version: number,
    /** The append this frame carries (null: the client reads content). */
    readonly append: Append | null,
    readonly chain: AppendChain,
  ) {}
}

/** The frame's length without its append's text: about the bytes every slice of it carries besides text. */
function envelopeOf(frame: string, tag: StreamTag): number {
  return frame.length - (tag.append?.text.length ?? 0)
}

export function streamTag(messageId: string, version: number, append: Append | null, chain: AppendChain): StreamTag {
  return new StreamTag(messageId, version, append, chain)
}

/**
 * The replaceable entry of one serialized MessageUpdated frame. Merges are kept structured and
 * the frame is re-serialized when written (JSON.parse / stringify only for a frame whose append
 * changed). An append of more than APPEND_SLICE_BYTES (or than the send window's room, see
 * sliceBound) is written in slices, one per turn of the lane, each a copy of the frame (the same
 * `message`: slices share its version) with its part of the text; the unsent rest stays queued,
 * and a newer update of the message merges into it.
 */
class StreamFrame implements ReplaceableFrame {
  constructor(
    private readonly frame: string,
    private readonly tag: StreamTag,
    readonly append: Append | null,
  ) {}

  take(room?: number): { frame: string; rest?: ReplaceableFrame } {
    const append = this.append
    // No `append` in the selection: the frame as serialized (the newest one absorbed the others).
    if (this.tag.appendPaths.length === 0) return { frame: this.frame }
    const unchanged = append === this.tag.append
    if (append === null) return { frame: unchanged ? this.frame : patchAppend(this.frame, this.tag, null) }
    // The frame carries the whole content already: it is the client's copy, never sliced; its
    // append only within the contract's bound.
    if (this.tag.withContent) {
      if (sliceAppend(append).rest === undefined) return { frame: unchanged ? this.frame : patchAppend(this.frame, this.tag, append) }
      return { frame: patchAppend(this.frame, this.tag, null) }
    }
    const { head, rest } = sliceAppend(append, sliceBound(room, envelopeOf(this.frame, this.tag)))
    if (rest === undefined) return { frame: unchanged ? this.frame : patchAppend(this.frame, this.tag, head) }
    return { frame: patchAppend(this.frame, this.tag, head), rest: this.#with(rest) }
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
  if (append === null) {
    // The last rendering of this frame (a null append ends the chain): parsed for it alone.
    const message = JSON.parse(frame) as NonNullable<StreamTag['parsed']>
    for (const path of tag.appendPaths) setAt(message.payload?.data, path, null)
    return JSON.stringify(message)
  }
  // Parsed once per frame however many slices it is written in: each sets every leaf.
  const message = (tag.parsed ??= JSON.parse(frame) as NonNullable<StreamTag['parsed']>)
  for (const { path, field } of tag.leaves) setAt(message.payload?.data, path, append[field])
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

/**
 * The MessageUpdated frames that carry appends (append-chain.ts says which append a frame carries):
 * how undelivered appends of one message merge in the replaceable lane so that no text is ever
 * dropped, and how a frame is written in slices.
 *
 * A frame is serialized once, as a template: its `append { offset text }` leaves are rendered as
 * markers (a number no offset takes, a string no text holds), found once per frame, and each slice
 * or merge is the template with its values spliced in, the text JSON-escaped as JSON.stringify
 * does. No frame is parsed and re-serialized per slice.
 */
import { randomInt } from 'node:crypto'
import type { ReplaceableFrame } from './replaceable-lanes.ts'
import { sliceAppend, sliceBound, type Append, type AppendChain } from './append-chain.ts'

export * from './append-chain.ts'

type Path = readonly (string | number)[]

/** What `offset` renders in a template: negative, so never a real offset; random, so no other field's value by chance. */
const OFFSET_MARK = -(2 ** 30) - randomInt(2 ** 30 - 1)
/** What `text` renders in a template (JSON.stringify escapes its NUL: `"\u0000append…"`). */
const TEXT_MARK = `\u0000append ${randomInt(2 ** 47).toString(36)}`
const TEXT_JSON = JSON.stringify(TEXT_MARK)
const OFFSET_JSON = `:${OFFSET_MARK}`

/**
 * What the resolvers of one MessageUpdated frame record while it is executed, for the frame's
 * replaceable entry (streamFrame) once it is serialized. One per frame and subscription: the
 * event carries it (SessionEventValue.stream), so every resolver under the event reaches it.
 */
export class StreamTag {
  /** Response paths (aliases included) of every `append` field of the frame that resolved non-null. */
  readonly appendPaths: Path[] = []
  /** `offset` and `text` leaves rendered as markers. */
  leaves = 0
  /** The frame selects `message.content` (it carries the whole content anyway). */
  withContent = false
  /**
   * The frame goes to the outbound scheduler through streamFrame (delivery-tags.ts), which splices
   * each slice's values into it: its leaves render markers. Otherwise (no scheduler) real values.
   */
  templated = false

  constructor(
    readonly messageId: string,
    readonly version: number,
    /** The append this frame carries (null: the client reads content). */
    readonly append: Append | null,
    readonly chain: AppendChain,
  ) {}

  /** What the `offset` leaf of `append` renders. */
  offset(append: Append): number {
    if (!this.templated) return append.offset
    this.leaves++
    return OFFSET_MARK
  }

  /** What the `text` leaf of `append` renders. */
  text(append: Append): string {
    if (!this.templated) return append.text
    this.leaves++
    return TEXT_MARK
  }
}

export function streamTag(messageId: string, version: number, append: Append | null, chain: AppendChain): StreamTag {
  return new StreamTag(messageId, version, append, chain)
}

/**
 * One serialized frame cut at its markers: `parts[i]`, the value of `holes[i]`, `parts[i + 1]`, …;
 * and the spans of its append objects, for the frame with append null.
 */
class Template {
  readonly parts: string[] = []
  readonly holes: (keyof Append)[] = []
  /** [start, end) of each `{…}` append object. */
  readonly spans: [number, number][] = []
  /** The frame's bytes besides the text, about (for the slice bound). */
  readonly envelope: number
  #nulled: string | undefined

  constructor(readonly frame: string) {
    const found: [number, keyof Append][] = []
    for (let at = frame.indexOf(TEXT_JSON); at >= 0; at = frame.indexOf(TEXT_JSON, at + 1)) found.push([at, 'text'])
    for (let at = frame.indexOf(OFFSET_JSON); at >= 0; at = frame.indexOf(OFFSET_JSON, at + 1)) {
      const after = frame[at + OFFSET_JSON.length]
      if (after === ',' || after === '}') found.push([at + 1, 'offset'])
    }
    found.sort((a, b) => a[0] - b[0])
    let from = 0
    for (const [at, field] of found) {
      this.parts.push(frame.slice(from, at))
      this.holes.push(field)
      from = at + (field === 'text' ? TEXT_JSON.length : OFFSET_JSON.length - 1)
      // An append object holds only scalars (its offset and text, the text a marker): no brace inside.
      const start = frame.lastIndexOf('{', at)
      if (this.spans.at(-1)?.[0] !== start) this.spans.push([start, frame.indexOf('}', at) + 1])
    }
    this.parts.push(frame.slice(from))
    this.envelope = frame.length - (TEXT_JSON.length - 2) * this.holes.filter((h) => h === 'text').length
  }

  /** Whether the markers found are the leaves and appends the resolvers rendered (else a text held a marker). */
  matches(tag: StreamTag): boolean {
    return this.holes.length === tag.leaves && this.spans.length === tag.appendPaths.length
  }

  render(append: Append): string {
    const text = this.holes.includes('text') ? JSON.stringify(append.text) : ''
    let out = this.parts[0]!
    for (let i = 0; i < this.holes.length; i++) out += (this.holes[i] === 'text' ? text : String(append.offset)) + this.parts[i + 1]!
    return out
  }

  /** The frame with every append null (the client reads content). */
  nulled(): string {
    if (this.#nulled === undefined) {
      let out = ''
      let from = 0
      for (const [start, end] of this.spans) {
        out += this.frame.slice(from, start) + 'null'
        from = end
      }
      this.#nulled = out + this.frame.slice(from)
    }
    return this.#nulled
  }
}

/**
 * How a frame is rendered: from its template; as serialized (no append field rendered non-null);
 * or, should its markers not be where its resolvers put them (a text or a content holding a
 * marker: never by chance), parsed and re-serialized.
 */
type Rendering = Template | 'as serialized' | 'parsed'

/**
 * The replaceable entry of one serialized MessageUpdated frame. Merges are kept structured and
 * the frame is rendered from its template when written. An append of more than
 * APPEND_SLICE_BYTES (or than the send window's room, see sliceBound) is written in slices, one
 * per turn of the lane, each a copy of the frame (the same `message`: slices share its version)
 * with its part of the text; the unsent rest stays queued, and a newer update of the message
 * merges into it.
 */
class StreamFrame implements ReplaceableFrame {
  constructor(
    private readonly frame: string,
    private readonly rendering: Rendering,
    private readonly tag: StreamTag,
    readonly append: Append | null,
  ) {}

  take(room?: number): { frame: string; rest?: ReplaceableFrame } {
    const { rendering: template, append } = this
    if (template === 'as serialized') return { frame: this.frame }
    if (template === 'parsed') return { frame: parsedRendering(this.frame, this.tag, append) }
    if (append === null) return { frame: template.nulled() }
    // The frame carries the whole content already: it is the client's copy, never sliced; its
    // append only within the contract's bound.
    if (this.tag.withContent) return { frame: sliceAppend(append).rest === undefined ? template.render(append) : template.nulled() }
    const { head, rest } = sliceAppend(append, sliceBound(room, template.envelope))
    return rest === undefined ? { frame: template.render(head) } : { frame: template.render(head), rest: this.#with(rest) }
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
    return new StreamFrame(this.frame, this.rendering, this.tag, append)
  }
}

/**
 * The scheduler entry for a MessageUpdated frame rendered with `tag.templated` (markers), its
 * append checked against the chain once more. Its template is cut once, here.
 */
export function streamFrame(frame: string, tag: StreamTag): ReplaceableFrame {
  const entry = (append: Append | null) => new StreamFrame(frame, renderingOf(frame, tag), tag, append)
  if (tag.append === null) return entry(null)
  // An error may have cut the append out of the frame: the client cannot extend its copy.
  // (Inside JSON string values quotes are escaped, so this matches a key, never content.)
  if (frame.includes('"errors":')) {
    tag.chain.forget(tag.messageId)
    return entry(null)
  }
  const intact = tag.chain.intact(tag.messageId, tag.version, tag.append.offset + tag.append.text.length)
  return entry(intact ? tag.append : null)
}

function renderingOf(frame: string, tag: StreamTag): Rendering {
  if (tag.appendPaths.length === 0 || !tag.templated) return 'as serialized'
  const template = new Template(frame)
  return template.matches(tag) ? template : 'parsed'
}

/** A frame whose markers are not only where its resolvers put them: parsed, every append set (null past the bound). Unsliced. */
function parsedRendering(frame: string, tag: StreamTag, append: Append | null): string {
  const message = JSON.parse(frame) as { payload?: { data?: unknown } }
  const fits = append !== null && sliceAppend(append).rest === undefined
  for (const path of tag.appendPaths) {
    const object = path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string | number, unknown> | null)?.[key], message.payload?.data)
    const key = path.at(-1)!
    const value = (object as Record<string | number, unknown> | null | undefined)?.[key] as Record<string, unknown> | null | undefined
    if (!value) continue
    if (!fits) (object as Record<string | number, unknown>)[key] = null
    else for (const [k, v] of Object.entries(value)) value[k] = v === OFFSET_MARK ? append.offset : v === TEXT_MARK ? append.text : v
  }
  return JSON.stringify(message)
}

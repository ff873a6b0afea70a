// What a tool call does, as the agent described it (ACP `tool_call` / `tool_call_update` and the
// tool call of a permission request), bounded so that one call can never carry a whole file
// system into a message row, a frame or a page: the contract's ToolCallDetail (v1.4).
// Pure: no IO, so the bounds are table-tested.
import { truncateUtf8 } from '../summary/bounds.ts'

export const MAX_LOCATIONS = 32
export const MAX_DIFFS = 16
/** oldText and newText of every diff of one call together. */
export const DIFF_TEXT_MAX_BYTES = 64 * 1024
export const RAW_INPUT_MAX_BYTES = 16 * 1024
/** A path longer than any real one is cut rather than stored whole. */
export const PATH_MAX_BYTES = 4096
const KIND_MAX_BYTES = 64

export interface ToolCallLocation {
  path: string
  line: number | null
}

export interface ToolCallDiff {
  path: string
  oldText: string | null
  newText: string
}

export interface ToolCallDetail {
  kind: string | null
  locations: ToolCallLocation[]
  diffs: ToolCallDiff[]
  /** JSON text of the tool's input, cut to its bound (then no longer valid JSON: `truncated` says so). */
  rawInput: string | null
  truncated: boolean
}

/** The parts of an ACP ToolCall or ToolCallUpdate this reads; anything else the agent sends is ignored. */
export interface AcpToolCallFields {
  kind?: string | null
  locations?: readonly { path?: unknown; line?: unknown }[] | null
  content?: readonly { type?: unknown; path?: unknown; oldText?: unknown; newText?: unknown }[] | null
  rawInput?: unknown
}

const EMPTY: ToolCallDetail = { kind: null, locations: [], diffs: [], rawInput: null, truncated: false }

/**
 * The detail of a tool call: `previous` (what was stored) with the fields the agent sent now
 * replacing it, as ACP's tool_call_update does: a field that is present replaces, an absent one
 * keeps. Null when the agent never sent any detail.
 */
export function toolCallDetail(fields: AcpToolCallFields, previous: ToolCallDetail | null = null): ToolCallDetail | null {
  const base = previous ?? EMPTY
  let truncated = previous?.truncated ?? false
  const cut = (text: string, max: number) => {
    const kept = truncateUtf8(text, max)
    if (kept.length !== text.length) truncated = true
    return kept
  }

  const kind = typeof fields.kind === 'string' ? cut(fields.kind, KIND_MAX_BYTES) : base.kind

  let locations = base.locations
  if (Array.isArray(fields.locations)) {
    const valid = fields.locations.filter((l) => typeof l?.path === 'string')
    if (valid.length > MAX_LOCATIONS) truncated = true
    locations = valid.slice(0, MAX_LOCATIONS).map((l) => ({
      path: cut(l.path as string, PATH_MAX_BYTES),
      line: Number.isSafeInteger(l.line) && (l.line as number) >= 0 ? (l.line as number) : null,
    }))
  }

  let diffs = base.diffs
  if (Array.isArray(fields.content)) {
    const valid = fields.content.filter((c) => c?.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string')
    if (valid.length > MAX_DIFFS) truncated = true
    let budget = DIFF_TEXT_MAX_BYTES
    diffs = valid.slice(0, MAX_DIFFS).map((d) => {
      const oldText = typeof d.oldText === 'string' ? cut(d.oldText, budget) : null
      budget -= oldText === null ? 0 : Buffer.byteLength(oldText, 'utf8')
      const newText = cut(d.newText as string, budget)
      budget -= Buffer.byteLength(newText, 'utf8')
      return { path: cut(d.path as string, PATH_MAX_BYTES), oldText, newText }
    })
  }

  let rawInput = base.rawInput
  if (fields.rawInput !== undefined) rawInput = fields.rawInput === null ? null : cut(jsonText(fields.rawInput), RAW_INPUT_MAX_BYTES)

  const detail = { kind, locations, diffs, rawInput, truncated }
  const sentNothing = kind === null && locations.length === 0 && diffs.length === 0 && rawInput === null
  return sentNothing && previous === null ? null : detail
}

/** rawInput is whatever JSON the agent sent; a value JSON cannot hold (a cycle cannot arrive over JSON-RPC) reads as null text. */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return 'null'
  }
}

/** The detail as stored in a message's metadata (parsed by parseMetadata); anything malformed reads as none. */
export function storedToolCallDetail(metadata: Record<string, unknown>): ToolCallDetail | null {
  const parsed = metadata.toolCall as ToolCallDetail | undefined
  if (!parsed || typeof parsed !== 'object' || !Array.isArray(parsed.locations) || !Array.isArray(parsed.diffs)) return null
  return parsed
}

/** A message's metadata object (kind-specific JSON written by the agent layer); malformed reads as empty. */
export function parseMetadata(metadata: string | null | undefined): Record<string, unknown> {
  if (!metadata) return {}
  try {
    const value = JSON.parse(metadata) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

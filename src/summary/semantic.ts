import { CATEGORY_MAX_BYTES, MAX_RECOVERY_ACTIONS, PREVIEW_MAX_BYTES } from './bounds.ts'
import {
  INTERRUPTION_REASONS,
  PULL_REQUEST_AGGREGATE_STATES,
  RECOVERY_ACTIONS,
  SESSION_STATES,
  type SummaryPayload,
} from './types.ts'

/** Empty collections are equivalent to null, so both serialize the same way. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? null : value.map(canonical)
  if (value instanceof Date) return value.toISOString()
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const v = canonical((value as Record<string, unknown>)[key])
      out[key] = v === undefined ? null : v
    }
    return out
  }
  return value === undefined ? null : value
}

/** Null, omitted and empty recovery-action lists mean the same: an empty list. */
function normalized(payload: SummaryPayload): SummaryPayload {
  if (!payload.activeError || Array.isArray(payload.activeError.recoveryActions)) return payload
  return { ...payload, activeError: { ...payload.activeError, recoveryActions: [] } }
}

/**
 * The one canonical semantic payload: sorted keys, no revision or projection time, empty
 * collections as null. Stored as is; the compare-and-update no-op check compares these strings.
 */
export function semanticJson(payload: SummaryPayload): string {
  return JSON.stringify(canonical(normalized(payload)))
}

export class InvalidSummaryError extends Error {}

const isCount = (n: unknown) => Number.isInteger(n) && (n as number) >= 0
const isIsoDate = (s: unknown) => typeof s === 'string' && !Number.isNaN(new Date(s).getTime())
const utf8 = (s: string) => Buffer.byteLength(s, 'utf8')

/** Throws InvalidSummaryError naming the first broken bound; a valid payload passes silently. */
export function validateSummary(payload: SummaryPayload): void {
  const p = normalized(payload)
  const fail = (what: string) => {
    throw new InvalidSummaryError(`invalid summary: ${what}`)
  }
  if (p.lastActivityAt !== null && !isIsoDate(p.lastActivityAt)) fail('lastActivityAt')
  if (p.primarySession && !SESSION_STATES.includes(p.primarySession.state)) fail('primarySession.state')
  if (p.foregroundActivity !== null && !['GENERATING', 'BACKGROUND'].includes(p.foregroundActivity)) fail('foregroundActivity')
  if (!isCount(p.activeSubagentCount)) fail('activeSubagentCount')
  if (p.pendingAction !== null && !['PERMISSION', 'CLARIFICATION'].includes(p.pendingAction)) fail('pendingAction')
  // waitingSince is the time of the request behind pendingAction: one without the other is not a summary.
  if ((p.waitingSince === null) !== (p.pendingAction === null) || (p.waitingSince !== null && !isIsoDate(p.waitingSince))) fail('waitingSince')
  if (!isCount(p.queuedPromptCount)) fail('queuedPromptCount')
  const i = p.interruption
  if (i && (!i.sessionId || !INTERRUPTION_REASONS.includes(i.reason) || !isIsoDate(i.at))) fail('interruption')
  const e = p.activeError
  if (e) {
    if (!e.stamp || !isIsoDate(e.occurredAt)) fail('activeError.stamp/occurredAt')
    if (utf8(e.preview) > PREVIEW_MAX_BYTES) fail('activeError.preview')
    if (e.category !== null && utf8(e.category) > CATEGORY_MAX_BYTES) fail('activeError.category')
    const actions = e.recoveryActions
    if (
      actions.length > MAX_RECOVERY_ACTIONS ||
      new Set(actions).size !== actions.length ||
      actions.some((a) => !RECOVERY_ACTIONS.includes(a))
    )
      fail('activeError.recoveryActions')
  }
  const g = p.git
  if (g && ![g.additions, g.deletions, g.changedFiles, g.ahead, g.behind].every(isCount)) fail('git')
  const pr = p.pullRequest
  if (pr) {
    if (!isCount(pr.count) || !isCount(pr.openCount) || pr.openCount > pr.count) fail('pullRequest.count')
    if (!PULL_REQUEST_AGGREGATE_STATES.includes(pr.aggregateState)) fail('pullRequest.aggregateState')
  }
}

/**
 * SemanticEqual: both must be valid (an invalid value never passes as a no-op), then their
 * canonical payloads must match.
 */
export function semanticEqual(a: SummaryPayload, b: SummaryPayload): boolean {
  validateSummary(a)
  validateSummary(b)
  return semanticJson(a) === semanticJson(b)
}

/** Reads a stored payload back; empty collections come back as the empty arrays the type promises. */
export function parseStoredPayload(json: string): SummaryPayload {
  const raw = JSON.parse(json) as SummaryPayload
  if (raw.activeError) raw.activeError.recoveryActions ??= []
  // Rows stored before the attention fields existed read as "none" until they are rebuilt.
  raw.waitingSince ??= null
  raw.queuedPromptCount ??= 0
  raw.interruption ??= null
  return raw
}

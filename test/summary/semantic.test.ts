import { describe, expect, it } from 'vitest'
import { deriveSummary } from '../../src/summary/derive.ts'
import type { SummaryInputs } from '../../src/summary/inputs.ts'
import {
  InvalidSummaryError,
  parseStoredPayload,
  semanticEqual,
  semanticJson,
  validateSummary,
} from '../../src/summary/semantic.ts'
import type { RecoveryAction, SummaryPayload } from '../../src/summary/types.ts'
import {
  activeErrorPayload,
  ascii,
  at,
  clarification,
  git,
  inputs,
  iso,
  launchError,
  payload,
  permission,
  pr,
  session,
  sessionError,
  turn,
} from './builders.ts'

/** The same value with every object's keys in reverse insertion order. */
function reverseKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reverseKeys) as T
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    ) as T
  }
  return value
}

/** Every object's keys, depth first, must be sorted in the serialized text. */
function assertSortedKeys(value: unknown, path = '$'): void {
  if (Array.isArray(value)) return value.forEach((v, i) => assertSortedKeys(v, `${path}[${i}]`))
  if (value && typeof value === 'object') {
    const keys = Object.keys(value)
    expect(keys, path).toEqual([...keys].sort())
    for (const k of keys) assertSortedKeys((value as Record<string, unknown>)[k], `${path}.${k}`)
  }
}

const withError = (e: Partial<SummaryPayload['activeError'] & object>) => payload({ activeError: activeErrorPayload(e) })
const withPr = (p: Partial<NonNullable<SummaryPayload['pullRequest']>>) =>
  payload({ pullRequest: { ...payload().pullRequest!, ...p } })
const withGit = (g: Partial<NonNullable<SummaryPayload['git']>>) => payload({ git: { ...payload().git!, ...g } })

describe('semanticJson', () => {
  it('the empty summary serializes with sorted keys', () => {
    expect(semanticJson(deriveSummary(inputs()))).toBe(
      '{"activeError":null,"activeSubagentCount":0,"foregroundActivity":null,"git":null,"interruption":null,' +
        '"lastActivityAt":"2026-01-01T00:00:00.000Z","pendingAction":null,"primarySession":null,"pullRequest":null,' +
        '"queuedPromptCount":0,"waitingSince":null}',
    )
  })

  it('nested keys are sorted too', () => {
    const json = semanticJson(reverseKeys(payload()))
    assertSortedKeys(JSON.parse(json))
    expect(json).toContain(
      '"activeError":{"category":"AGENT_CRASHED","occurredAt":"2026-01-01T00:03:00.000Z","preview":"boom",' +
        '"recoveryActions":["RETRY_DEFAULT"],"sessionId":"s1","stamp":"e1","taskRepositoryId":null}',
    )
    expect(json).toContain('"representative":{"number":7,"repository":"acme/app","url":"https://github.com/acme/app/pull/7"}')
  })

  it.each([
    { name: 'full payload', p: payload() },
    { name: 'no error, no git, no PR', p: payload({ activeError: null, git: null, pullRequest: null }) },
    { name: 'no representative', p: withPr({ representative: null }) },
  ])('is identical for payloads differing only in key order: $name', ({ p }) => {
    expect(semanticJson(reverseKeys(p))).toBe(semanticJson(p))
    expect(semanticEqual(reverseKeys(p), p)).toBe(true)
  })

  it.each([
    { name: 'null', value: null },
    { name: 'undefined (omitted)', value: undefined },
  ])('treats recoveryActions [] and $name the same', ({ value }) => {
    const empty = withError({ recoveryActions: [] })
    const other = withError({ recoveryActions: value as unknown as RecoveryAction[] })
    expect(semanticJson(other)).toBe(semanticJson(empty))
    expect(semanticJson(empty)).toContain('"recoveryActions":null')
  })

  it('a key holding undefined serializes as null', () => {
    const undefinedRepo = withError({ taskRepositoryId: undefined as unknown as null })
    expect(semanticJson(undefinedRepo)).toBe(semanticJson(payload()))
    expect(semanticJson(undefinedRepo)).toContain('"taskRepositoryId":null')
  })

  it('a Date and its ISO string serialize identically (timestamp metadata is not a change)', () => {
    const asDate = withError({ occurredAt: at(3) as unknown as string })
    expect(semanticJson(asDate)).toBe(semanticJson(withError({ occurredAt: '2026-01-01T00:03:00.000Z' })))
  })

  it('the recovery action order is part of the semantics', () => {
    const a = withError({ recoveryActions: ['RETRY_DEFAULT', 'RESUME_SESSION'] })
    const b = withError({ recoveryActions: ['RESUME_SESSION', 'RETRY_DEFAULT'] })
    expect(semanticJson(a)).not.toBe(semanticJson(b))
  })
})

describe('semanticEqual', () => {
  it('true for a structurally equal copy', () => {
    expect(semanticEqual(payload(), structuredClone(payload()))).toBe(true)
    expect(semanticEqual(deriveSummary(inputs()), deriveSummary(inputs()))).toBe(true)
  })

  it('true for empty vs stored-and-parsed recovery actions', () => {
    const empty = withError({ recoveryActions: [] })
    expect(semanticEqual(empty, parseStoredPayload(semanticJson(empty)))).toBe(true)
  })

  it.each<{ name: string; changed: SummaryPayload }>([
    { name: 'lastActivityAt', changed: payload({ lastActivityAt: iso(11) }) },
    { name: 'lastActivityAt to null', changed: payload({ lastActivityAt: null }) },
    { name: 'primarySession id', changed: payload({ primarySession: { id: 's2', state: 'RUNNING' } }) },
    { name: 'primarySession state', changed: payload({ primarySession: { id: 's1', state: 'WAITING_FOR_INPUT' } }) },
    { name: 'primarySession to null', changed: payload({ primarySession: null }) },
    { name: 'foregroundActivity', changed: payload({ foregroundActivity: 'BACKGROUND' }) },
    { name: 'foregroundActivity to null', changed: payload({ foregroundActivity: null }) },
    { name: 'activeSubagentCount', changed: payload({ activeSubagentCount: 3 }) },
    { name: 'pendingAction', changed: payload({ pendingAction: 'CLARIFICATION' }) },
    { name: 'pendingAction to null', changed: payload({ pendingAction: null, waitingSince: null }) },
    { name: 'waitingSince', changed: payload({ waitingSince: iso(9) }) },
    { name: 'queuedPromptCount', changed: payload({ queuedPromptCount: 2 }) },
    { name: 'queuedPromptCount to 0', changed: payload({ queuedPromptCount: 0 }) },
    { name: 'interruption to null', changed: payload({ interruption: null }) },
    { name: 'interruption.reason', changed: payload({ interruption: { sessionId: 's1', reason: 'OWNER_LOST', at: iso(9) } }) },
    { name: 'interruption.at', changed: payload({ interruption: { sessionId: 's1', reason: 'SERVER_RESTART', at: iso(10) } }) },
    { name: 'interruption.sessionId', changed: payload({ interruption: { sessionId: 's2', reason: 'SERVER_RESTART', at: iso(9) } }) },
    { name: 'activeError to null', changed: payload({ activeError: null }) },
    { name: 'activeError.sessionId', changed: withError({ sessionId: null }) },
    { name: 'activeError.taskRepositoryId', changed: withError({ taskRepositoryId: 'repo-1' }) },
    { name: 'activeError.stamp', changed: withError({ stamp: 'e2' }) },
    { name: 'activeError.occurredAt', changed: withError({ occurredAt: iso(4) }) },
    { name: 'activeError.preview', changed: withError({ preview: 'bang' }) },
    { name: 'activeError.category', changed: withError({ category: 'OTHER' }) },
    { name: 'activeError.category to null', changed: withError({ category: null }) },
    { name: 'activeError.recoveryActions', changed: withError({ recoveryActions: ['RESUME_SESSION'] }) },
    { name: 'activeError.recoveryActions to empty', changed: withError({ recoveryActions: [] }) },
    { name: 'git to null', changed: payload({ git: null }) },
    { name: 'git.additions', changed: withGit({ additions: 11 }) },
    { name: 'git.deletions', changed: withGit({ deletions: 4 }) },
    { name: 'git.changedFiles', changed: withGit({ changedFiles: 3 }) },
    { name: 'git.ahead', changed: withGit({ ahead: 2 }) },
    { name: 'git.behind', changed: withGit({ behind: 1 }) },
    { name: 'git.comparisonUnavailable', changed: withGit({ comparisonUnavailable: true }) },
    { name: 'pullRequest to null', changed: payload({ pullRequest: null }) },
    { name: 'pullRequest.count', changed: withPr({ count: 3 }) },
    { name: 'pullRequest.openCount', changed: withPr({ openCount: 2 }) },
    { name: 'pullRequest.aggregateState', changed: withPr({ aggregateState: 'FAILURE' }) },
    { name: 'pullRequest.representative to null', changed: withPr({ representative: null }) },
    {
      name: 'pullRequest.representative.number',
      changed: withPr({ representative: { repository: 'acme/app', number: 8, url: 'https://github.com/acme/app/pull/7' } }),
    },
    {
      name: 'pullRequest.representative.url',
      changed: withPr({ representative: { repository: 'acme/app', number: 7, url: 'https://example.com/7' } }),
    },
    {
      name: 'pullRequest.representative.repository',
      changed: withPr({ representative: { repository: 'acme/web', number: 7, url: 'https://github.com/acme/app/pull/7' } }),
    },
    { name: 'pullRequest.autoFixEnabled', changed: withPr({ autoFixEnabled: false }) },
    { name: 'pullRequest.autoMergeEnabled', changed: withPr({ autoMergeEnabled: true }) },
  ])('false when $name changes (both directions)', ({ changed }) => {
    validateSummary(changed)
    expect(semanticEqual(payload(), changed)).toBe(false)
    expect(semanticEqual(changed, payload())).toBe(false)
  })

  const invalid: { name: string; bad: SummaryPayload }[] = [
    { name: 'lastActivityAt not a date', bad: payload({ lastActivityAt: 'yesterday' }) },
    { name: 'unknown session state', bad: payload({ primarySession: { id: 's1', state: 'SLEEPING' as never } }) },
    { name: 'unknown foregroundActivity', bad: payload({ foregroundActivity: 'BUSY' as never }) },
    { name: 'negative activeSubagentCount', bad: payload({ activeSubagentCount: -1 }) },
    { name: 'fractional activeSubagentCount', bad: payload({ activeSubagentCount: 1.5 }) },
    { name: 'NaN activeSubagentCount', bad: payload({ activeSubagentCount: Number.NaN }) },
    { name: 'unknown pendingAction', bad: payload({ pendingAction: 'QUESTION' as never }) },
    { name: 'empty error stamp', bad: withError({ stamp: '' }) },
    { name: 'error occurredAt not a date', bad: withError({ occurredAt: 'soon' }) },
    { name: 'preview over 512 bytes (ASCII)', bad: withError({ preview: ascii(513) }) },
    { name: 'preview over 512 bytes but 511 UTF-16 units (multi-byte)', bad: withError({ preview: ascii(509) + '😀' }) },
    { name: 'preview 257 × é = 514 bytes', bad: withError({ preview: 'é'.repeat(257) }) },
    { name: 'category over 64 bytes', bad: withError({ category: ascii(65) }) },
    { name: 'category 63 + é = 65 bytes', bad: withError({ category: ascii(63) + 'é' }) },
    {
      name: '4 recovery actions',
      bad: withError({ recoveryActions: ['RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'MARK_REVIEW_DONE', 'RESUME_SESSION'] }),
    },
    { name: 'duplicate recovery actions', bad: withError({ recoveryActions: ['RETRY_DEFAULT', 'RETRY_DEFAULT'] }) },
    { name: 'unknown recovery action', bad: withError({ recoveryActions: ['REBOOT' as RecoveryAction] }) },
    { name: 'negative git additions', bad: withGit({ additions: -1 }) },
    { name: 'negative git behind', bad: withGit({ behind: -2 }) },
    { name: 'fractional git changedFiles', bad: withGit({ changedFiles: 0.5 }) },
    { name: 'negative PR count', bad: withPr({ count: -1, openCount: 0 }) },
    { name: 'negative PR openCount', bad: withPr({ openCount: -1 }) },
    { name: 'openCount > count', bad: withPr({ count: 1, openCount: 2 }) },
    { name: 'unknown aggregateState', bad: withPr({ aggregateState: 'GREEN' as never }) },
    { name: 'waitingSince without a pendingAction', bad: payload({ pendingAction: null }) },
    { name: 'a pendingAction without waitingSince', bad: payload({ waitingSince: null }) },
    { name: 'waitingSince not a date', bad: payload({ waitingSince: 'a while' }) },
    { name: 'negative queuedPromptCount', bad: payload({ queuedPromptCount: -1 }) },
    { name: 'fractional queuedPromptCount', bad: payload({ queuedPromptCount: 0.5 }) },
    { name: 'unknown interruption reason', bad: payload({ interruption: { sessionId: 's1', reason: 'POWER_CUT' as never, at: iso(9) } }) },
    { name: 'interruption at not a date', bad: payload({ interruption: { sessionId: 's1', reason: 'OWNER_LOST', at: 'then' } }) },
    { name: 'interruption without a session', bad: payload({ interruption: { sessionId: '', reason: 'OWNER_LOST', at: iso(9) } }) },
  ]

  it.each(invalid)('throws InvalidSummaryError when either side is invalid: $name', ({ bad }) => {
    expect(() => validateSummary(bad)).toThrow(InvalidSummaryError)
    expect(() => semanticEqual(bad, payload())).toThrow(InvalidSummaryError)
    expect(() => semanticEqual(payload(), bad)).toThrow(InvalidSummaryError)
    // An invalid value never passes as a no-op, not even against an identical copy.
    expect(() => semanticEqual(bad, structuredClone(bad))).toThrow(InvalidSummaryError)
  })

  it.each<{ name: string; p: SummaryPayload }>([
    { name: 'preview of exactly 512 bytes with a trailing emoji', p: withError({ preview: ascii(508) + '😀' }) },
    { name: 'category of exactly 64 bytes with a trailing é', p: withError({ category: ascii(62) + 'é' }) },
    { name: 'three distinct recovery actions', p: withError({ recoveryActions: ['RESUME_SESSION', 'RETRY_DEFAULT', 'MARK_REVIEW_DONE'] }) },
    { name: 'no recovery actions', p: withError({ recoveryActions: [] }) },
    { name: 'openCount equal to count', p: withPr({ count: 2, openCount: 2 }) },
    { name: 'zero counts', p: withPr({ count: 0, openCount: 0 }) },
    { name: 'all-null summary', p: payload({ lastActivityAt: null, primarySession: null, foregroundActivity: null, activeSubagentCount: 0, pendingAction: null, activeError: null, git: null, pullRequest: null, waitingSince: null, queuedPromptCount: 0, interruption: null }) },
  ])('boundary values are valid: $name', ({ p }) => {
    expect(() => validateSummary(p)).not.toThrow()
    expect(semanticEqual(p, structuredClone(p))).toBe(true)
  })
})

/** Derived summaries from across the rules: each must validate and round-trip through storage. */
const derived: { name: string; input: SummaryInputs }[] = [
  { name: 'empty task', input: inputs() },
  {
    name: 'generating with permission',
    input: inputs({ sessions: [session({ state: 'RUNNING', recentTurns: [turn('t1', 1)], pendingRequests: [permission('t1')] })] }),
  },
  {
    name: 'waiting with clarification and subagents',
    input: inputs({
      sessions: [
        session({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 2, recentTurns: [turn('t1', 1)], pendingRequests: [clarification('t1')] }),
      ],
    }),
  },
  {
    name: 'oversized multi-byte session error',
    input: inputs({
      sessions: [
        session({ state: 'FAILED', error: sessionError('e1', 3, { message: 'é'.repeat(400), code: '😀'.repeat(20) }) }),
      ],
    }),
  },
  { name: 'launch error with no actions', input: inputs({ launchError: launchError({ recoveryActions: '[]' }) }) },
  {
    name: 'launch error with too many actions',
    input: inputs({
      launchError: launchError({
        recoveryActions: '["RETRY_DEFAULT","RETRY_DEFAULT","PICK_BASE_BRANCH","MARK_REVIEW_DONE","RESUME_SESSION","X"]',
      }),
    }),
  },
  {
    name: 'git and pull requests',
    input: inputs({
      git: [git({ taskRepositoryId: 'r1', additions: 1 }), git({ taskRepositoryId: 'r2', comparisonUnavailable: true })],
      pullRequests: [pr({ number: 1, state: 'MERGED', autoMerge: true }), pr({ number: 2, checks: 'FAILURE', autoFix: true })],
    }),
  },
  { name: 'terminal pull requests only', input: inputs({ pullRequests: [pr({ state: 'CLOSED' })] }) },
  {
    name: 'monotonic activity',
    input: inputs({ previousLastActivityAt: at(30), activity: { lastUserPromptAt: at(5), lastConversationalTurnAt: at(6) } }),
  },
]

describe('validateSummary and parseStoredPayload on derived summaries', () => {
  it.each(derived)('$name: validates', ({ input }) => {
    expect(() => validateSummary(deriveSummary(input))).not.toThrow()
  })

  it.each(derived)('$name: parseStoredPayload(semanticJson(p)) round-trips', ({ input }) => {
    const p = deriveSummary(input)
    const parsed = parseStoredPayload(semanticJson(p))
    expect(semanticEqual(parsed, p)).toBe(true)
    expect(semanticJson(parsed)).toBe(semanticJson(p))
    expect(parsed).toEqual(p)
  })

  it('a stored empty action list comes back as an empty array', () => {
    const p = deriveSummary(inputs({ launchError: launchError({ recoveryActions: '[]' }) }))
    const json = semanticJson(p)
    expect(json).toContain('"recoveryActions":null')
    expect(parseStoredPayload(json).activeError?.recoveryActions).toEqual([])
  })

  it('a stored payload without an error stays without one', () => {
    expect(parseStoredPayload(semanticJson(payload({ activeError: null }))).activeError).toBeNull()
  })
})

/**
 * Edge cases the spec pins down: nil and empty collections are equivalent, and malformed
 * error metadata is ignored rather than making the whole summary invalid.
 */
describe('nil/empty equivalence and malformed error metadata', () => {
  const empty = withError({ recoveryActions: [] })
  const nullActions = withError({ recoveryActions: null as unknown as RecoveryAction[] })
  const { recoveryActions: _dropped, ...withoutActions } = activeErrorPayload()
  const absentActions = payload({ activeError: withoutActions as SummaryPayload['activeError'] })

  // Spec: "Nil and empty omitted error collections are equivalent" for SemanticEqual.
  it('semanticEqual treats recoveryActions null like []', () => {
    expect(semanticEqual(empty, nullActions)).toBe(true)
  })

  it('semanticJson treats an omitted recoveryActions key like []', () => {
    expect(semanticJson(absentActions)).toBe(semanticJson(empty))
  })

  it('semanticEqual treats an omitted recoveryActions key like []', () => {
    expect(semanticEqual(empty, absentActions)).toBe(true)
  })

  // Spec: malformed task-owned launch-error metadata makes the projector ignore that record; it
  // does not reject the summary.
  it('a launch error with an empty stamp is ignored, not made into an invalid summary', () => {
    const summary = deriveSummary(inputs({ launchError: launchError({ stamp: '' }) }))
    expect(() => validateSummary(summary)).not.toThrow()
    expect(summary.activeError).toBeNull()
  })
})

// TaskStatusSummary is served from a SummaryView (src/summary/view.ts) through fields with no
// resolvers: every response must stay what the former per-field resolvers answered, byte for
// byte, on the default executor and on graphql-jit (queries run on it: use-jit-queries.ts).
import { describe, expect, it } from 'vitest'
import { execute, parse, print, type DocumentNode } from 'graphql'
import { compileQuery, isCompiledQuery } from 'graphql-jit'
import { getSchema } from '../../src/schema/schema.ts'
import { summaryView } from '../../src/summary/view.ts'
import type { StoredSummary } from '../../src/summary/types.ts'
import { StatusSummaryFieldsFragmentDoc } from '../../packages/client/src/generated/graphql.ts'

const stored: StoredSummary = {
  taskId: 't1',
  workspaceId: 'w1',
  revision: 7,
  updatedAt: new Date('2026-12-02T16:23:08.123Z'),
  payload: {
    // Not in toISOString's form: served as the instant it names, in that form.
    lastActivityAt: '2026-12-01T00:00:00Z',
    primarySession: { id: 's1', state: 'RUNNING' },
    foregroundActivity: 'GENERATING',
    activeSubagentCount: 2,
    pendingAction: 'PERMISSION',
    activeError: {
      sessionId: null,
      taskRepositoryId: 'r1',
      stamp: 'e1',
      occurredAt: '2026-12-01T10:00:00.000+02:00',
      preview: 'quote " backslash \\ newline \n tab \t',
      category: null,
      recoveryActions: ['RETRY_DEFAULT', 'RESUME_SESSION'],
    },
    git: { additions: 1, deletions: 2, changedFiles: 3, ahead: 4, behind: 0, comparisonUnavailable: true },
    pullRequest: {
      count: 2,
      openCount: 1,
      aggregateState: 'PENDING',
      representative: { repository: 'o/r', number: 12, url: 'https://github.com/o/r/pull/12' },
      autoFixEnabled: false,
      autoMergeEnabled: true,
    },
    waitingSince: '2026-12-02T16:00:00.000Z',
    queuedPromptCount: 1,
    interruption: { sessionId: 's1', reason: 'OWNER_LOST', at: '2026-12-02T15:00:00.5Z' },
  },
}

/** What the type's former per-field resolvers answered for `stored`. */
const EXPECTED = {
  id: 't1',
  taskId: 't1',
  revision: 7,
  updatedAt: '2026-12-02T16:23:08.123Z',
  lastActivityAt: '2026-12-01T00:00:00.000Z',
  primarySession: { id: 's1', state: 'RUNNING' },
  foregroundActivity: 'GENERATING',
  activeSubagentCount: 2,
  pendingAction: 'PERMISSION',
  activeError: {
    sessionId: null,
    taskRepositoryId: 'r1',
    stamp: 'e1',
    occurredAt: '2026-12-01T08:00:00.000Z',
    preview: 'quote " backslash \\ newline \n tab \t',
    category: null,
    recoveryActions: ['RETRY_DEFAULT', 'RESUME_SESSION'],
  },
  git: { additions: 1, deletions: 2, changedFiles: 3, ahead: 4, behind: 0, comparisonUnavailable: true },
  pullRequest: {
    count: 2,
    openCount: 1,
    aggregateState: 'PENDING',
    representative: { repository: 'o/r', number: 12, url: 'https://github.com/o/r/pull/12' },
    autoFixEnabled: false,
    autoMergeEnabled: true,
  },
  waitingSince: '2026-12-02T16:00:00.000Z',
  queuedPromptCount: 1,
  interruption: { sessionId: 's1', reason: 'OWNER_LOST', at: '2026-12-02T15:00:00.500Z' },
}

const schema = getSchema()
const QUERY = parse(`query Summaries($ids: [ID!]!) { taskStatusSummaries(taskIds: $ids) { ...StatusSummaryFields } }
  ${print(StatusSummaryFieldsFragmentDoc as DocumentNode)}`)

/** Just enough context for taskStatusSummaries: a principal, a readable task, its summary. */
function context(summary: StoredSummary | null) {
  return {
    principal: { userId: 'u1', isAdmin: false },
    loaders: {
      task: { loadMany: async (ids: string[]) => ids.map((id) => ({ id, workspaceId: 'w1' })) },
      isMember: { load: async () => true },
      statusSummary: { load: async () => (summary ? summaryView(summary) : null) },
    },
  }
}

describe('TaskStatusSummary from its SummaryView', () => {
  it('answers what the per-field resolvers answered, on the default executor and on graphql-jit', async () => {
    const variables = { ids: ['t1'] }
    const plain = await execute({ schema, document: QUERY, variableValues: variables, contextValue: context(stored) })
    const jit = compileQuery(schema, QUERY)
    if (!isCompiledQuery(jit)) throw new Error('not compiled')
    const compiled = await jit.query(undefined, context(stored), variables)
    expect(plain).toEqual({ data: { taskStatusSummaries: [EXPECTED] } })
    expect(JSON.stringify(compiled)).toBe(JSON.stringify(plain))
  })

  it('serves null parts and instants as null', async () => {
    const bare: StoredSummary = {
      ...stored,
      payload: { ...stored.payload, lastActivityAt: null, activeError: null, git: null, pullRequest: null, pendingAction: null, waitingSince: null, interruption: null, primarySession: null },
    }
    const result = await execute({ schema, document: QUERY, variableValues: { ids: ['t1'] }, contextValue: context(bare) })
    expect(result.errors).toBeUndefined()
    expect(result.data).toEqual({
      taskStatusSummaries: [{ ...EXPECTED, lastActivityAt: null, activeError: null, git: null, pullRequest: null, pendingAction: null, waitingSince: null, interruption: null, primarySession: null }],
    })
  })
})

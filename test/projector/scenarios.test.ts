// The spec's summary scenarios (shared/spec/bounded-task-status-delivery.md, "Scenarios"),
// driven through the store layer on a real database of each provider.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { insertMessage, deleteMessage, updateMessage } from '../../src/store/messages.ts'
import { clearSessionError, deleteSession, setSessionError, updateSession } from '../../src/store/sessions.ts'
import { completeTurn, startTurn } from '../../src/store/turns.ts'
import { recordGitObservation } from '../../src/store/git-observations.ts'
import { setLaunchError } from '../../src/store/launch-errors.ts'
import { recordPullRequest } from '../../src/store/pull-requests.ts'
import { linkRepository } from '../../src/store/github-links.ts'
import { updateTask } from '../../src/store/tasks.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'

const git = (sessionId: string, taskRepositoryId: string, n: number, extra: object = {}) => ({
  sessionId,
  taskRepositoryId,
  additions: n,
  deletions: n,
  changedFiles: 1,
  ahead: 0,
  behind: 0,
  comparisonUnavailable: false,
  ...extra,
})

const pr = (workspaceId: string, taskId: string, number: number, extra: object = {}) => ({
  workspaceId,
  repository: 'acme/web',
  number,
  taskId,
  taskRepositoryId: null,
  url: `https://github.com/acme/web/pull/${number}`,
  title: 'Fix',
  headBranch: 'fix',
  state: 'OPEN' as const,
  draft: false,
  checks: 'NONE' as const,
  reviewDecision: null,
  mergeableState: null,
  ...extra,
})

describe.each(PROVIDERS)('summary scenarios (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => {
    w = await projectorWorld(provider)
    await linkRepository(w.store, w.workspaceId, 'acme/web') // pull-request observations exist only under a link
  })
  afterEach(() => w?.close())

  it('GIVEN a background task asks a question, errors, changes Git or gets a PR update, THEN its row updates from the feed without a session subscription', async () => {
    const task = await w.newTask('bg', [{ name: 'acme/web' }])
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    const turn = await startTurn(w.store, { sessionId: session })
    await insertMessage(w.store, { id: 'q1', sessionId: session, turnId: turn.id, author: 'AGENT', kind: 'CLARIFICATION', content: 'Which branch?', status: 'PENDING', pendingId: 'p1' })
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.pendingAction).toBe('CLARIFICATION')

    await setSessionError(w.store, session, { code: 'rate_limited', message: 'slow down', stamp: 'e1', occurredAt: w.clock.advance(1000) })
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.activeError).toMatchObject({ sessionId: session, category: 'rate_limited', preview: 'slow down' })

    await recordGitObservation(w.store, git(session, task.repositoryIds[0]!, 3))
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.git).toMatchObject({ additions: 3, deletions: 3, changedFiles: 1 })

    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 7, { checks: 'FAILURE' }))
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.pullRequest).toMatchObject({ aggregateState: 'FAILURE', count: 1 })
    const revisions = w.published.filter((p) => p.taskId === task.id).map((p) => p.revision)
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b))
    expect(new Set(revisions).size).toBe(revisions.length)
  })

  it('GIVEN an active linked PR changes auto-fix or auto-merge, THEN the automation indicators update in the replacement summary', async () => {
    const task = await w.newTask()
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 1))
    expect((await w.summary(task.id)).payload.pullRequest).toMatchObject({ autoFixEnabled: false, autoMergeEnabled: false })
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 1, { autoMerge: true }))
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.pullRequest).toMatchObject({ autoFixEnabled: false, autoMergeEnabled: true })
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 1, { state: 'MERGED' }))
    expect((await w.summary(task.id)).payload.pullRequest).toMatchObject({ aggregateState: 'MERGED', autoMergeEnabled: false })
  })

  it('GIVEN an idle task receives Git or PR summary changes, THEN updatedAt advances while lastActivityAt stays', async () => {
    const task = await w.newTask('idle', [{ name: 'acme/web' }])
    const session = await w.newSession(task.id)
    const before = await w.summary(task.id)
    w.clock.advance(60_000)
    await recordGitObservation(w.store, git(session, task.repositoryIds[0]!, 5))
    const afterGit = await w.summary(task.id)
    expect(afterGit.revision).toBeGreaterThan(before.revision)
    expect(afterGit.updatedAt.getTime()).toBeGreaterThan(before.updatedAt.getTime())
    expect(afterGit.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
    w.clock.advance(60_000)
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 3))
    const afterPr = await w.summary(task.id)
    expect(afterPr.updatedAt.getTime()).toBeGreaterThan(afterGit.updatedAt.getTime())
    expect(afterPr.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
  })

  it('GIVEN an idle task after a restart, WHEN resuming creates only a lifecycle turn, THEN lastActivityAt is unchanged', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id, { state: 'CANCELLED' })
    const before = await w.summary(task.id)
    w.restartedProjector()
    w.clock.advance(3_600_000)
    await updateSession(w.store, session, { state: 'STARTING' })
    const boot = await startTurn(w.store, { sessionId: session, lifecycleOnly: true })
    await completeTurn(w.store, boot.id, 'agent_boot')
    await updateSession(w.store, session, { state: 'WAITING_FOR_INPUT' })
    const after = await w.summary(task.id)
    expect(after.payload.primarySession).toEqual({ id: session, state: 'WAITING_FOR_INPUT' })
    expect(after.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
    expect((await w.store.db.task.findUniqueOrThrow({ where: { id: task.id } })).lastActivityAt.toISOString()).toBe(
      before.payload.lastActivityAt,
    )
  })

  it('moves lastActivityAt for user prompts and conversational turns, never backwards', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id)
    const promptAt = w.clock.advance(10_000)
    const turn = await startTurn(w.store, { sessionId: session })
    await insertMessage(w.store, { id: 'u1', sessionId: session, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'hi' })
    expect((await w.summary(task.id)).payload.lastActivityAt).toBe(promptAt.toISOString())
    const doneAt = w.clock.advance(5_000)
    await completeTurn(w.store, turn.id, 'end_turn')
    expect((await w.summary(task.id)).payload.lastActivityAt).toBe(doneAt.toISOString())
    // Deleting the message and the session removes the records, but activity does not move back.
    await deleteMessage(w.store, 'u1')
    await deleteSession(w.store, session)
    expect((await w.summary(task.id)).payload.lastActivityAt).toBe(doneAt.toISOString())
  })

  it('GIVEN a recoverable error is dismissed or followed by a newer agent response, THEN the error indicator clears and a replay cannot re-arm it', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id)
    const error = { code: 'rate_limited', message: 'slow', stamp: 'e1', occurredAt: w.clock.now() }
    await setSessionError(w.store, session, error)
    expect((await w.summary(task.id)).payload.activeError?.stamp).toBe('e1')
    await clearSessionError(w.store, session)
    expect((await w.summary(task.id)).payload.activeError).toBeNull()
    await setSessionError(w.store, session, error) // a replay of the same occurrence
    expect((await w.summary(task.id)).payload.activeError).toBeNull()
    await setSessionError(w.store, session, { ...error, stamp: 'e2', occurredAt: w.clock.advance(1) })
    expect((await w.summary(task.id)).payload.activeError?.stamp).toBe('e2')
  })

  it('GIVEN auto-start stops before it creates a session, THEN active_error carries the launch error without a session ID; a terminal move clears it', async () => {
    const task = await w.newTask('launch', [{ name: 'acme/web' }])
    await setLaunchError(w.store, task.id, {
      stamp: 'l1',
      message: 'base branch main does not exist',
      category: 'missing_base_branch',
      recoveryActions: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'UNKNOWN', 'MARK_REVIEW_DONE', 'RESUME_SESSION'],
      taskRepositoryId: task.repositoryIds[0],
    })
    expect((await w.summary(task.id)).payload.activeError).toMatchObject({
      sessionId: null,
      taskRepositoryId: task.repositoryIds[0],
      category: 'missing_base_branch',
      recoveryActions: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT', 'MARK_REVIEW_DONE'],
    })
    const steps = await w.store.db.workflowStep.findMany({ where: { workspaceId: w.workspaceId }, orderBy: { position: 'asc' } })
    await updateTask(w.store, task.id, { workflowStepId: steps[3]!.id })
    expect((await w.summary(task.id)).payload.activeError).toBeNull()
  })

  it('GIVEN a task-owned error and a session-owned error, WHEN the summary rebuilds, THEN active_error is the newer record', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id)
    await setLaunchError(w.store, task.id, { stamp: 'l1', message: 'launch failed', occurredAt: w.clock.advance(1000) })
    await setSessionError(w.store, session, { code: 'crash', message: 'agent crashed', stamp: 's1', occurredAt: w.clock.advance(1000) })
    expect((await w.summary(task.id)).payload.activeError).toMatchObject({ sessionId: session, stamp: 's1' })
    await setLaunchError(w.store, task.id, { stamp: 'l2', message: 'launch failed again', occurredAt: w.clock.advance(1000) })
    expect((await w.summary(task.id)).payload.activeError).toMatchObject({ sessionId: null, stamp: 'l2' })
    // A fresh rebuild (no stored row) picks the same record.
    await w.store.db.taskStatusSummary.delete({ where: { taskId: task.id } })
    expect((await w.projector.ensure([task.id])).get(task.id)?.payload.activeError?.stamp).toBe('l2')
  })

  it('GIVEN a stopped session owns the active error, WHEN it is deleted, THEN the error disappears while the task and other sessions remain', async () => {
    const task = await w.newTask()
    const stopped = await w.newSession(task.id, { state: 'CANCELLED', isPrimary: true })
    await setSessionError(w.store, stopped, { code: 'crash', message: 'gone', stamp: 's1', occurredAt: w.clock.now() })
    expect((await w.summary(task.id)).payload.activeError?.sessionId).toBe(stopped)
    const replacement = await w.newSession(task.id)
    await deleteSession(w.store, stopped)
    const after = await w.summary(task.id)
    expect(after.payload.activeError).toBeNull()
    expect(after.payload.primarySession?.id).toBe(replacement)
    expect(await w.store.db.task.count({ where: { id: task.id } })).toBe(1)
  })

  it('GIVEN two sessions with errors and a summary pointing at the newer, WHEN the projector restarts and the newer session is deleted, THEN the retained session’s error becomes active', async () => {
    const task = await w.newTask()
    const older = await w.newSession(task.id)
    const newer = await w.newSession(task.id)
    await setSessionError(w.store, older, { code: 'a', message: 'older', stamp: 'o1', occurredAt: w.clock.advance(1000) })
    await setSessionError(w.store, newer, { code: 'b', message: 'newer', stamp: 'n1', occurredAt: w.clock.advance(1000) })
    expect((await w.summary(task.id)).payload.activeError?.sessionId).toBe(newer)
    w.restartedProjector()
    await deleteSession(w.store, newer)
    expect((await w.summary(task.id)).payload.activeError).toMatchObject({ sessionId: older, stamp: 'o1' })
  })

  it('GIVEN two sessions with errors, WHEN both are deleted concurrently while repair is in flight, THEN no error of either remains', async () => {
    const task = await w.newTask()
    const a = await w.newSession(task.id)
    const b = await w.newSession(task.id)
    await setSessionError(w.store, a, { code: 'a', message: 'a', stamp: 'a1', occurredAt: w.clock.advance(1) })
    await setSessionError(w.store, b, { code: 'b', message: 'b', stamp: 'b1', occurredAt: w.clock.advance(1) })
    await w.projector.idle()
    // Two instances, both projecting: each deletes one session and repairs at the same time.
    const other = await w.otherInstance()
    await Promise.all([deleteSession(w.store, a), deleteSession(other.store, b), other.projector.project(task.id), w.projector.project(task.id)])
    await other.projector.idle()
    expect((await w.summary(task.id)).payload.activeError).toBeNull()
  })

  it('GIVEN keyed Git observations committed before their aggregate, WHEN a restarted projector with no persisted aggregate gets one repository event, THEN every repository is in the totals', async () => {
    const task = await w.newTask('multi', [{ name: 'acme/web' }, { name: 'acme/api' }])
    const session = await w.newSession(task.id)
    await w.projector.idle()
    // Observations written while no projector listened (committed before any aggregate).
    await w.projector.idle()
    w.projector.stop()
    await recordGitObservation(w.store, git(session, task.repositoryIds[0]!, 10))
    await recordGitObservation(w.store, git(session, task.repositoryIds[1]!, 20))
    expect((await readSummaryRows(w.store, [task.id]))[0]?.payload).not.toContain('"additions"')
    w.restartedProjector()
    await recordGitObservation(w.store, git(session, task.repositoryIds[0]!, 11))
    expect((await w.summary(task.id)).payload.git).toMatchObject({ additions: 31, deletions: 31, changedFiles: 2 })
  })

  it('GIVEN session, Git and PR observations but no summary row, WHEN the first source event arrives, THEN every source is rehydrated into the new row', async () => {
    const task = await w.newTask('cold', [{ name: 'acme/web' }, { name: 'acme/api' }])
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    await w.projector.idle()
    w.projector.stop()
    await recordGitObservation(w.store, git(session, task.repositoryIds[0]!, 1))
    await recordGitObservation(w.store, git(session, task.repositoryIds[1]!, 2, { comparisonUnavailable: true }))
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 4, { checks: 'PENDING' }))
    await w.store.db.taskStatusSummary.deleteMany({ where: { taskId: task.id } })
    w.restartedProjector()
    await recordPullRequest(w.store, pr(w.workspaceId, task.id, 5, { draft: true }))
    const summary = await w.summary(task.id)
    expect(summary.revision).toBe(1)
    expect(summary.payload).toMatchObject({
      primarySession: { id: session, state: 'RUNNING' },
      foregroundActivity: 'GENERATING',
      git: { additions: 3, comparisonUnavailable: true },
      pullRequest: { count: 2, openCount: 2, aggregateState: 'PENDING', representative: { number: 4 } },
    })
  })

  it('GIVEN a permission request, WHEN an unrelated tool call of the same session reaches its terminal status, THEN pending stays PERMISSION', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    const turn = await startTurn(w.store, { sessionId: session })
    await insertMessage(w.store, { id: 'perm', sessionId: session, turnId: turn.id, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'Run tests?', status: 'PENDING', pendingId: 'p1' })
    await insertMessage(w.store, { id: 'tool', sessionId: session, turnId: turn.id, author: 'AGENT', kind: 'TOOL_CALL', content: 'Read file', status: 'IN_PROGRESS' })
    await updateMessage(w.store, 'tool', { status: 'COMPLETED' })
    // Another session's request resolving does not clear it either.
    const other = await w.newSession(task.id, { state: 'RUNNING' })
    const otherTurn = await startTurn(w.store, { sessionId: other })
    await insertMessage(w.store, { id: 'perm2', sessionId: other, turnId: otherTurn.id, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'x', status: 'PENDING', pendingId: 'p2' })
    await updateMessage(w.store, 'perm2', { status: 'APPROVED' })
    expect((await w.summary(task.id)).payload.pendingAction).toBe('PERMISSION')
    await updateMessage(w.store, 'perm', { status: 'APPROVED' })
    expect((await w.summary(task.id)).payload.pendingAction).toBeNull()
  })

  it('GIVEN a detached clarification pending in an older turn and no pending input in the current turn, THEN no pendingAction, and turn completion cannot re-arm it', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    const old = await startTurn(w.store, { sessionId: session, startedAt: w.clock.advance(1) })
    await insertMessage(w.store, { id: 'c-old', sessionId: session, turnId: old.id, author: 'AGENT', kind: 'CLARIFICATION', content: '?', status: 'PENDING', pendingId: 'c1' })
    expect((await w.summary(task.id)).payload.pendingAction).toBe('CLARIFICATION')
    // An empty, unattempted reservation does not move the boundary…
    const reservation = await startTurn(w.store, { sessionId: session, promptDispatchPending: true, startedAt: w.clock.advance(1) })
    expect((await w.summary(task.id)).payload.pendingAction).toBe('CLARIFICATION')
    // …an attempted dispatch does, and deleting the new turn's messages cannot move it back.
    await insertMessage(w.store, { id: 'u2', sessionId: session, turnId: reservation.id, author: 'USER', kind: 'MESSAGE', content: 'go on' })
    expect((await w.summary(task.id)).payload.pendingAction).toBeNull()
    await deleteMessage(w.store, 'u2')
    await completeTurn(w.store, reservation.id, 'end_turn')
    await updateSession(w.store, session, { state: 'WAITING_FOR_INPUT' })
    expect((await w.summary(task.id)).payload.pendingAction).toBeNull()
  })

  it('GIVEN a persisted summary advertising a clarification the current-turn query no longer finds, WHEN a task list is built, THEN the stored and returned summary advance with it removed', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    const turn = await startTurn(w.store, { sessionId: session })
    await insertMessage(w.store, { id: 'c', sessionId: session, turnId: turn.id, author: 'AGENT', kind: 'CLARIFICATION', content: '?', status: 'PENDING', pendingId: 'c1' })
    const advertised = await w.summary(task.id)
    expect(advertised.payload.pendingAction).toBe('CLARIFICATION')
    // The row changes behind the projector's back (no source event), as after a lost event.
    await w.projector.idle()
    w.projector.stop()
    await w.store.db.message.update({ where: { id: 'c' }, data: { status: 'ANSWERED' } })
    const listed = (await w.projector.ensure([task.id])).get(task.id)!
    expect(listed.revision).toBe(advertised.revision + 1)
    expect(listed.payload.pendingAction).toBeNull()
    expect((await readSummaryRows(w.store, [task.id]))[0]?.revision).toBe(advertised.revision + 1)
  })

  it('does not advance the revision or publish for a semantic no-op', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id)
    const before = await w.summary(task.id)
    const publishedBefore = w.published.length
    await updateSession(w.store, session, { currentModelId: 'm2', availableModels: [{ id: 'm2', name: 'M2' }] })
    await w.projector.project(task.id)
    const after = await w.summary(task.id)
    expect(after.revision).toBe(before.revision)
    expect(after.updatedAt).toEqual(before.updatedAt)
    expect(w.published.length).toBe(publishedBefore)
  })

  it('ignores malformed launch-error metadata without erasing the last valid summary', async () => {
    const task = await w.newTask()
    const session = await w.newSession(task.id)
    await setSessionError(w.store, session, { code: 'x', message: 'session error', stamp: 's1', occurredAt: w.clock.advance(1) })
    await setLaunchError(w.store, task.id, { stamp: 'l1', message: 'newer but malformed', recoveryActions: '{not json', occurredAt: w.clock.advance(10) })
    expect((await w.summary(task.id)).payload.activeError?.stamp).toBe('s1')
  })
})

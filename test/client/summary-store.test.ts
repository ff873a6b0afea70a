import { describe, expect, it } from 'vitest'
import {
  applyBoot,
  applyFeedEvent,
  applyTaskPayloads,
  initialSummaryState,
  isUnknownTask,
  startBoot,
  startResync,
} from '../../packages/client/src/summary-store.ts'
import type { FeedEvent, SummaryState } from '../../packages/client/src/types.ts'
import { feedEvent, summary, taskRow } from './harness.ts'

const ws = 'ws-1'

/** A live store holding task a (summary revision 5) and task b (no summary). */
function live(): SummaryState {
  return applyBoot(startBoot(initialSummaryState(), ws), ws, 'c0', [taskRow('a', 'Alpha', summary('a', 5)), taskRow('b', 'Beta', null)])
}

const event = (e: { workspaceEvents: unknown }) => e.workspaceEvents as FeedEvent

describe('summary store: feed deltas apply only a strictly newer revision', () => {
  it.each([
    { stored: 5, incoming: 4, applied: false },
    { stored: 5, incoming: 5, applied: false },
    { stored: 5, incoming: 6, applied: true },
  ])('stored $stored, TaskStatusSummaryUpdated $incoming → applied: $applied', ({ incoming, applied }) => {
    const before = live()
    const delta = summary('a', incoming, { pendingAction: 'PERMISSION' })
    const after = applyFeedEvent(before, event(feedEvent.summary('c1', delta)))
    expect(after.tasks.a!.summary).toEqual(applied ? delta : before.tasks.a!.summary)
    if (!applied) expect(after.tasks).toBe(before.tasks) // nothing touched, not even the tasks map
    expect(after.cursor).toBe('c1') // the cursor is kept either way
  })

  it('a first summary for a row that had none is applied', () => {
    const after = applyFeedEvent(live(), event(feedEvent.summary('c1', summary('b', 1))))
    expect(after.tasks.b!.summary?.revision).toBe(1)
  })

  it('a delta for a task the store lacks is not applied (the client reads that row)', () => {
    const before = live()
    const e = event(feedEvent.summary('c1', summary('z', 1)))
    expect(isUnknownTask(before, e)).toBe(true)
    expect(applyFeedEvent(before, e).tasks).toBe(before.tasks)
    expect(isUnknownTask(before, event(feedEvent.summary('c1', summary('a', 9))))).toBe(false)
  })

  it('an update of one row leaves every other row identical', () => {
    const before = live()
    const after = applyFeedEvent(before, event(feedEvent.summary('c1', summary('a', 6))))
    expect(after.tasks.b).toBe(before.tasks.b)
  })
})

describe('summary store: read payloads (boot, tasks, task) apply at an equal or newer revision', () => {
  it.each([
    { stored: 5, incoming: 4, applied: false },
    { stored: 5, incoming: 5, applied: true },
    { stored: 5, incoming: 6, applied: true },
  ])('stored $stored, task(id) payload $incoming → applied: $applied', ({ incoming, applied }) => {
    const before = live()
    const payload = summary('a', incoming, { activeSubagentCount: 7 })
    const after = applyTaskPayloads(before, ws, [taskRow('a', 'Alpha renamed', payload)])
    expect(after.tasks.a!.summary).toEqual(applied ? payload : before.tasks.a!.summary)
    expect(after.tasks.a!.title).toBe('Alpha renamed') // task fields always replaced
  })

  it('a boot keeps a stored summary newer than its own, and drops rows it does not list', () => {
    const before = applyFeedEvent(live(), event(feedEvent.summary('c1', summary('a', 8))))
    const after = applyBoot(startResync(before), ws, 'c9', [taskRow('a', 'Alpha', summary('a', 6)), taskRow('c', 'Gamma', summary('c', 1))])
    expect(after.tasks.a!.summary?.revision).toBe(8)
    expect(Object.keys(after.tasks)).toEqual(['a', 'c'])
    expect(after.cursor).toBe('c9')
    expect(after.status).toBe('live')
    expect(after.resyncs).toBe(1)
  })

  it('a boot at the stored revision replaces the summary (equal is applied)', () => {
    const before = live()
    const same = summary('a', 5, { pendingAction: 'CLARIFICATION' })
    const after = applyBoot(before, ws, 'c2', [taskRow('a', 'Alpha', same)])
    expect(after.tasks.a!.summary).toEqual(same)
  })

  it('payloads of another workspace are ignored', () => {
    const before = live()
    expect(applyTaskPayloads(before, 'other', [taskRow('x', 'X', null)])).toBe(before)
    expect(applyBoot(before, 'other', 'c', [])).toBe(before)
  })
})

describe('summary store: TaskUpserted, TaskDeleted, cursors', () => {
  it('TaskUpserted replaces the task fields and keeps the stored summary unless its own is newer', () => {
    const before = live()
    const older = applyFeedEvent(before, event(feedEvent.upserted('c1', taskRow('a', 'Renamed', summary('a', 5)))))
    expect(older.tasks.a!.title).toBe('Renamed')
    expect(older.tasks.a!.summary).toBe(before.tasks.a!.summary)
    const newer = applyFeedEvent(before, event(feedEvent.upserted('c1', taskRow('a', 'Renamed', summary('a', 6)))))
    expect(newer.tasks.a!.summary?.revision).toBe(6)
    const withoutSummary = applyFeedEvent(before, event(feedEvent.upserted('c1', taskRow('a', 'Renamed', null))))
    expect(withoutSummary.tasks.a!.summary).toBe(before.tasks.a!.summary)
  })

  it('TaskUpserted of a new task adds its row', () => {
    const after = applyFeedEvent(live(), event(feedEvent.upserted('c1', taskRow('n', 'New', summary('n', 1)))))
    expect(after.tasks.n).toMatchObject({ id: 'n', title: 'New', summary: { revision: 1 } })
  })

  it('TaskDeleted removes the row', () => {
    const after = applyFeedEvent(live(), event(feedEvent.deleted('c1', 'a')))
    expect(after.tasks.a).toBeUndefined()
    expect(Object.keys(after.tasks)).toEqual(['b'])
  })

  it('keeps the last event cursor; an event without one keeps the previous', () => {
    let s = live()
    s = applyFeedEvent(s, event(feedEvent.summary('c1', summary('a', 6))))
    s = applyFeedEvent(s, event(feedEvent.deleted('c2', 'b')))
    expect(s.cursor).toBe('c2')
    s = applyFeedEvent(s, { __typename: 'TaskDeleted', cursor: null, taskId: 'zz', workspaceId: ws })
    expect(s.cursor).toBe('c2')
  })

  it('WorkspaceResync changes nothing in the store itself (the client refetches boot)', () => {
    const before = live()
    expect(applyFeedEvent(before, event(feedEvent.resync('cursor-expired', 'c7')))).toBe(before)
  })

  it('startBoot empties the store for the workspace; startResync keeps the rows', () => {
    const before = live()
    expect(startBoot(before, 'ws-2')).toEqual({ workspaceId: 'ws-2', tasks: {}, cursor: null, status: 'booting', resyncs: 0 })
    const resyncing = startResync(before)
    expect(resyncing.tasks).toBe(before.tasks)
    expect(resyncing).toMatchObject({ status: 'resyncing', resyncs: 1 })
  })
})

import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { replayItems, type FeedChanges } from '../../src/feed/replay-items.ts'
import type { FeedItem } from '../../src/feed/resumable-feed.ts'

/** The empty summary as stored (test/summary/semantic.test.ts). */
const PAYLOAD =
  '{"activeError":null,"activeSubagentCount":0,"foregroundActivity":null,"git":null,"interruption":null,' +
  '"lastActivityAt":"2026-01-01T00:00:00.000Z","pendingAction":null,"primarySession":null,"pullRequest":null,' +
  '"queuedPromptCount":0,"waitingSince":null}'

const logger = pino({ level: 'silent' })

/** Changes as feedChangesBetween reads them: [taskId, position] per task row, summary and tombstone. */
function changes(rows: { tasks?: [string, number][]; summaries?: [string, number][]; tombstones?: [string, number][] }): FeedChanges {
  return {
    tasks: (rows.tasks ?? []).map(([id, feedSequence]) => ({ id, workspaceId: 'w', title: id, feedSequence })),
    summaries: (rows.summaries ?? []).map(([taskId, feedSequence]) => ({
      taskId,
      workspaceId: 'w',
      revision: feedSequence,
      payload: taskId === 'broken' ? '{' : PAYLOAD,
      updatedAt: new Date(0),
      feedSequence,
    })),
    tombstones: (rows.tombstones ?? []).map(([taskId, feedSequence]) => ({ taskId, workspaceId: 'w', feedSequence, deletedAt: new Date(0) })),
  } as unknown as FeedChanges
}

const shortly = (items: FeedItem[]) => items.map((i) => `${i.type}:${'taskId' in i ? i.taskId : ''}@${i.sequence}`)

// A renamed (row 3, summary 9), B active (summary 5), C created (row 6, summary 7), D deleted (8).
const MIXED = changes({ tasks: [['A', 3], ['C', 6]], summaries: [['B', 5], ['A', 9], ['C', 7]], tombstones: [['D', 8]] })

describe('replayItems: the events of a resume', () => {
  it('each kind of change at its own position when the upsert does not carry the summary', () => {
    expect(shortly(replayItems(MIXED, { workspaceId: 'w', upTo: 10 }, logger))).toEqual([
      'TaskUpserted:A@3',
      'TaskStatusSummaryUpdated:B@5',
      'TaskUpserted:C@6',
      'TaskStatusSummaryUpdated:C@7',
      'TaskDeleted:D@8',
      'TaskStatusSummaryUpdated:A@9',
    ])
  })

  it('one event per changed task when it does: an upsert stands where its first change was, each cursor just before the next event, the last at the head', () => {
    const items = replayItems(MIXED, { workspaceId: 'w', upTo: 10, upsertCarriesSummary: true }, logger)
    expect(shortly(items)).toEqual(['TaskUpserted:A@4', 'TaskStatusSummaryUpdated:B@5', 'TaskUpserted:C@7', 'TaskDeleted:D@10'])
    // The upsert keeps the row it read; its summary is resolved with it.
    expect(items[0]).toMatchObject({ type: 'TaskUpserted', task: { id: 'A' } })
  })

  it('the summary-only feed never folds (it has no upserts), and an unreadable summary is left out either way', () => {
    const withBroken = changes({ tasks: [['A', 3]], summaries: [['A', 4], ['broken', 5]] })
    expect(shortly(replayItems(withBroken, { workspaceId: 'w', upTo: 5, summariesOnly: true, upsertCarriesSummary: true }, logger))).toEqual([
      'TaskStatusSummaryUpdated:A@4',
    ])
    expect(shortly(replayItems(withBroken, { workspaceId: 'w', upTo: 5, upsertCarriesSummary: true }, logger))).toEqual(['TaskUpserted:A@5'])
  })

  it('a client cut off after any event resumes from its cursor without a gap: every change up to it was in an event it got (random workspaces)', () => {
    let seed = 7
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647)
    for (let round = 0; round < 200; round++) {
      // Positions after the cursor (0), each the latest of one kind of change of one task.
      const kinds: { taskId: string; kind: 'tasks' | 'summaries' | 'tombstones' }[] = []
      for (let t = 0; t < 1 + Math.floor(random() * 12); t++) {
        const taskId = `t${t}`
        const r = random()
        if (r < 0.15) kinds.push({ taskId, kind: 'tombstones' })
        else {
          if (r < 0.7) kinds.push({ taskId, kind: 'tasks' })
          if (r > 0.4) kinds.push({ taskId, kind: 'summaries' })
        }
      }
      const positions = kinds.map((_, i) => i + 1).sort(() => random() - 0.5)
      // Gaps in the sequence: positions of older versions superseded since, or of other changes.
      const spread = positions.map((p) => p * 3 - Math.floor(random() * 3))
      const upTo = Math.max(...spread) + Math.floor(random() * 3)
      const rows: Parameters<typeof changes>[0] = { tasks: [], summaries: [], tombstones: [] }
      kinds.forEach(({ taskId, kind }, i) => rows[kind]!.push([taskId, spread[i]!]))
      const items = replayItems(changes(rows), { workspaceId: 'w', upTo, upsertCarriesSummary: true }, logger)

      const changed = new Set(kinds.map((k) => k.taskId))
      expect(items.map((i) => (i as { taskId: string }).taskId).sort()).toEqual([...changed].sort())
      const cursors = items.map((i) => i.sequence!)
      for (let i = 1; i < cursors.length; i++) expect(cursors[i]).toBeGreaterThan(cursors[i - 1]!)
      expect(cursors.at(-1)).toBe(upTo)
      for (let k = 1; k <= items.length; k++) {
        const got = new Set(items.slice(0, k).map((i) => (i as { taskId: string }).taskId))
        const cursor = cursors[k - 1]!
        const missed = kinds.filter((c, i) => spread[i]! <= cursor && !got.has(c.taskId))
        expect(missed, `round ${round}, cut after ${k}`).toEqual([])
      }
    }
  })
})

import { describe, expect, it } from 'vitest'
import { compareTasks, sortTasks, TASK_ORDERS, type TaskRow } from '../../packages/client/src/index.ts'
import { summary } from './harness.ts'

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString()

function row(id: string, fields: { created: number; activity: number; pending?: 'PERMISSION' | 'CLARIFICATION'; waitingSince?: number; error?: boolean }): TaskRow {
  return {
    id,
    title: id,
    workflowStepId: 'step-1',
    createdAt: at(fields.created),
    updatedAt: at(fields.created),
    summary: summary(id, 1, {
      lastActivityAt: at(fields.activity),
      pendingAction: fields.pending ?? null,
      waitingSince: fields.waitingSince === undefined ? null : at(fields.waitingSince),
      activeError: fields.error ? { sessionId: 's', taskRepositoryId: null, stamp: '1', occurredAt: at(0), preview: 'boom', category: null, recoveryActions: [] } : null,
    }),
  }
}

const rows = [
  row('t1', { created: 1, activity: 30 }),
  row('t2', { created: 2, activity: 40, error: true }),
  row('t3', { created: 3, activity: 10, pending: 'PERMISSION', waitingSince: 20 }),
  row('t4', { created: 4, activity: 50, pending: 'CLARIFICATION', waitingSince: 5 }),
  row('t5', { created: 5, activity: 30 }),
  row('t6', { created: 5, activity: 20, error: true }),
]

describe('the orders of tasks(orderBy:) over the rows the store holds', () => {
  it.each([
    ['LAST_ACTIVITY', ['t4', 't2', 't5', 't1', 't6', 't3']],
    ['CREATED', ['t6', 't5', 't4', 't3', 't2', 't1']],
    ['NEEDS_ATTENTION', ['t4', 't3', 't2', 't6', 't5', 't1']],
  ] as const)('%s', (order, expected) => {
    expect(sortTasks(rows, order).map((r) => r.id)).toEqual(expected)
    expect(sortTasks([...rows].reverse(), order).map((r) => r.id)).toEqual(expected)
  })

  it('is total: ties on every field fall back to the id, descending, in every order', () => {
    const twins = [row('a', { created: 1, activity: 1 }), row('b', { created: 1, activity: 1 })]
    for (const order of TASK_ORDERS) expect(compareTasks(order)(twins[0]!, twins[1]!), order).toBeGreaterThan(0)
  })

  it('a row without a summary sorts by its updatedAt and is never waiting', () => {
    const bare: TaskRow = { ...row('z', { created: 0, activity: 0 }), updatedAt: at(45), summary: null }
    expect(sortTasks([...rows, bare], 'LAST_ACTIVITY').map((r) => r.id).slice(0, 3)).toEqual(['t4', 'z', 't2'])
    expect(sortTasks([...rows, bare], 'NEEDS_ATTENTION').map((r) => r.id).slice(0, 5)).toEqual(['t4', 't3', 't2', 't6', 'z'])
  })
})

import { describe, expect, it } from 'vitest'
import { TASK_ORDERS } from '../../packages/client/src/index.ts'
import { ORDER_LABELS, storedOrder } from '../../src/web/use-task-order.ts'

describe('the order choice', () => {
  it('offers every order of tasks(orderBy:), labelled, the default first', () => {
    expect(Object.keys(ORDER_LABELS).sort()).toEqual([...TASK_ORDERS].sort())
    expect(TASK_ORDERS[0]).toBe('LAST_ACTIVITY')
    expect(ORDER_LABELS).toEqual({ LAST_ACTIVITY: 'Recent activity', NEEDS_ATTENTION: 'Needs attention', CREATED: 'Newest' })
  })

  it.each([
    { stored: null, order: 'LAST_ACTIVITY' },
    { stored: 'NEEDS_ATTENTION', order: 'NEEDS_ATTENTION' },
    { stored: 'CREATED', order: 'CREATED' },
    { stored: 'created', order: 'LAST_ACTIVITY' },
    { stored: 'DROP TABLE', order: 'LAST_ACTIVITY' },
  ])('stored $stored reads as $order', ({ stored, order }) => {
    expect(storedOrder({ getItem: () => stored })).toBe(order)
  })
})

import { useCallback, useState } from 'react'
import { TASK_ORDERS, type TaskOrder } from '@task-status/client'

const KEY = 'task-order'

/** The labels the order control shows, in the order of TASK_ORDERS (the default first). */
export const ORDER_LABELS: Record<TaskOrder, string> = {
  LAST_ACTIVITY: 'Recent activity',
  NEEDS_ATTENTION: 'Needs attention',
  CREATED: 'Newest',
}

export function storedOrder(storage: Pick<Storage, 'getItem'>): TaskOrder {
  const value = storage.getItem(KEY)
  return TASK_ORDERS.find((order) => order === value) ?? 'LAST_ACTIVITY'
}

/** The switcher's order, remembered in this browser (an unknown stored value falls back to the default). */
export function useTaskOrder(): [TaskOrder, (order: TaskOrder) => void] {
  const [order, setOrder] = useState(() => storedOrder(window.localStorage))
  const choose = useCallback((next: TaskOrder) => {
    window.localStorage.setItem(KEY, next)
    setOrder(next)
  }, [])
  return [order, choose]
}

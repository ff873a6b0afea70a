import type { Db } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'

export interface WriteFailure {
  model: string
  method: string
  /** Which calls fail: every matching call while `times` lasts, unless the predicate says no. */
  when?: (args: { data?: Record<string, unknown>; where?: Record<string, unknown> }) => boolean
  times: number
}

/**
 * A Store over a real Prisma client whose chosen writes throw, as a busy SQLite or a reset
 * Postgres connection would. Only the top-level model delegates are wrapped (not transactions).
 */
export function failingStore(db: Db) {
  const failures: WriteFailure[] = []
  const failed: string[] = []
  const wrapDelegate = (model: string, delegate: object) =>
    new Proxy(delegate, {
      get(target, method: string) {
        const value = Reflect.get(target, method) as unknown
        if (typeof value !== 'function') return value
        return (args: Parameters<NonNullable<WriteFailure['when']>>[0]) => {
          const rule = failures.find((f) => f.model === model && f.method === method && f.times > 0 && (f.when?.(args ?? {}) ?? true))
          if (rule) {
            rule.times--
            failed.push(`${model}.${method}`)
            return Promise.reject(Object.assign(new Error('injected write failure'), { code: 'P1017' }))
          }
          return (value as (a: unknown) => unknown).call(target, args)
        }
      },
    })
  const proxied = new Proxy(db, {
    get(target, prop: string) {
      const value = Reflect.get(target, prop) as unknown
      if (typeof value === 'object' && value !== null && !prop.startsWith('$')) return wrapDelegate(prop, value)
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value
    },
  })
  const store: Store = createStore(proxied)
  return {
    store,
    /** Fails the next `times` matching calls of model.method. */
    fail(rule: WriteFailure) {
      failures.push(rule)
    },
    /** Every rule stops failing (the database recovered). */
    lift() {
      failures.length = 0
    },
    /** The writes that were made to fail, in order. */
    failed,
  }
}

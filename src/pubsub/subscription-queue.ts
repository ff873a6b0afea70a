/**
 * An async iterator fed by push(). Bounded: when a consumer falls behind by more than `limit`
 * events, the backlog is replaced by one overflow marker (if given) so memory stays flat and the
 * consumer learns it must resync instead of silently missing events.
 */
export function subscriptionQueue<T>(options: {
  limit: number
  onOverflow?: () => T
  onReturn: () => void
}): { push: (value: T) => void; iterator: AsyncIterableIterator<T> } {
  let buffer: T[] = []
  let waiting: ((result: IteratorResult<T>) => void) | undefined
  let done = false

  const finish = (): IteratorResult<T> => {
    if (!done) {
      done = true
      buffer = []
      options.onReturn()
      waiting?.({ value: undefined, done: true })
      waiting = undefined
    }
    return { value: undefined, done: true }
  }

  const push = (value: T) => {
    if (done) return
    if (waiting) {
      const resolve = waiting
      waiting = undefined
      resolve({ value, done: false })
      return
    }
    buffer.push(value)
    if (buffer.length > options.limit) buffer = options.onOverflow ? [options.onOverflow()] : buffer.slice(-options.limit)
  }

  const iterator: AsyncIterableIterator<T> = {
    next() {
      if (buffer.length > 0) return Promise.resolve({ value: buffer.shift()!, done: false })
      if (done) return Promise.resolve({ value: undefined, done: true })
      return new Promise((resolve) => (waiting = resolve))
    },
    return: () => Promise.resolve(finish()),
    throw: (error: unknown) => {
      finish()
      return Promise.reject(error)
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
  return { push, iterator }
}

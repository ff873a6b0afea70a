/**
 * The async-iterator toolkit. Subscriptions are async iterators that must release what they hold
 * (a pub/sub listener, an access hold, a metrics gauge) the moment a client unsubscribes, even
 * while a next() waits: async generators cannot (return() queues behind the pending next()), so
 * every wrapper here is a plain iterator object.
 */

type IteratorMethods<T> = Pick<AsyncIterator<T>, 'next'> & Partial<Pick<AsyncIterator<T>, 'return' | 'throw'>>

const done = <T>(): IteratorResult<T> => ({ value: undefined, done: true })

export const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof (value as AsyncIterable<unknown> | null | undefined)?.[Symbol.asyncIterator] === 'function'

/** An iterator object that is its own iterable, as `for await` and graphql-js expect. */
export function asyncIterableIterator<T>(methods: IteratorMethods<T>): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    ...methods,
    [Symbol.asyncIterator]() {
      return iterator
    },
  }
  return iterator
}

/**
 * Maps an async iterator, skipping values mapped to undefined. return() reaches the source at once
 * even while a next() is pending, so an unsubscribe never waits for the next event to release the
 * subscription.
 */
export function mapAsyncIterator<In, Out>(
  source: AsyncIterableIterator<In>,
  map: (value: In) => Promise<Out | undefined> | Out | undefined,
): AsyncIterableIterator<Out> {
  return asyncIterableIterator<Out>({
    async next() {
      for (;;) {
        const result = await source.next()
        if (result.done) return done()
        const mapped = await map(result.value)
        if (mapped !== undefined) return { value: mapped, done: false }
      }
    },
    async return() {
      await source.return?.()
      return done()
    },
    async throw(error: unknown) {
      await source.return?.()
      throw error
    },
  })
}

/** Calls `end` however the stream stops: done, returned, thrown into, or failing in next(). `end` may run more than once. */
export function onIteratorEnd<T>(source: AsyncIterable<T>, end: () => void): AsyncIterableIterator<T> {
  const iterator = source[Symbol.asyncIterator]()
  return asyncIterableIterator<T>({
    async next() {
      try {
        const result = await iterator.next()
        if (result.done) end()
        return result
      } catch (error) {
        end()
        throw error
      }
    },
    async return(value?: unknown) {
      end()
      return (await iterator.return?.(value)) ?? done()
    },
    async throw(error?: unknown) {
      end()
      if (iterator.throw) return iterator.throw(error)
      throw error
    },
  })
}

/**
 * An async iterator that something outside it can end with an error: `watch` is called once with
 * `end` and returns its cleanup, which runs once, however the stream ends (end, error, return).
 * A pending `next()` rejects at once with the error; the source is returned.
 */
export function endable<T>(source: AsyncIterable<T>, watch: (end: (error: Error) => void) => () => void): AsyncIterableIterator<T> {
  const iterator = source[Symbol.asyncIterator]()
  let rejectEnded!: (error: Error) => void
  const ended = new Promise<never>((_resolve, reject) => (rejectEnded = reject))
  // Observed here too, so an end that comes while no next() waits is not an unhandled rejection.
  ended.catch(() => undefined)
  let finished = false
  const finish = async () => {
    if (finished) return
    finished = true
    cleanup()
    await iterator.return?.()
  }
  // finish runs only after this line (from next or return), so cleanup is set by then.
  const cleanup = watch((error) => rejectEnded(error))
  return asyncIterableIterator<T>({
    async next() {
      if (finished) return done()
      try {
        const result = await Promise.race([iterator.next(), ended])
        if (result.done) await finish()
        return result
      } catch (error) {
        await finish()
        throw error
      }
    },
    async return() {
      await finish()
      return done()
    },
  })
}

/**
 * An async iterator fed by push(). Bounded: when a consumer falls behind by more than `limit`
 * values, the backlog is replaced by one overflow marker (if given, else only the newest `limit`
 * stay) so memory stays flat and the consumer learns it must resync instead of silently missing events.
 */
export function pushQueue<T>(options: { limit: number; onOverflow?: () => T; onReturn: () => void }): {
  push: (value: T) => void
  iterator: AsyncIterableIterator<T>
} {
  let buffer: T[] = []
  let waiting: ((result: IteratorResult<T>) => void) | undefined
  let finished = false

  const finish = (): IteratorResult<T> => {
    if (!finished) {
      finished = true
      buffer = []
      options.onReturn()
      waiting?.(done())
      waiting = undefined
    }
    return done()
  }

  const push = (value: T) => {
    if (finished) return
    if (waiting) {
      const resolve = waiting
      waiting = undefined
      resolve({ value, done: false })
      return
    }
    buffer.push(value)
    if (buffer.length > options.limit) buffer = options.onOverflow ? [options.onOverflow()] : buffer.slice(-options.limit)
  }

  const iterator = asyncIterableIterator<T>({
    next() {
      if (buffer.length > 0) return Promise.resolve({ value: buffer.shift()!, done: false })
      if (finished) return Promise.resolve(done())
      return new Promise((resolve) => (waiting = resolve))
    },
    return: () => Promise.resolve(finish()),
    throw: (error: unknown) => {
      finish()
      return Promise.reject(error)
    },
  })
  return { push, iterator }
}

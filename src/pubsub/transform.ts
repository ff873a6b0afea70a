/**
 * Maps an async iterator, skipping values mapped to undefined. Unlike an async generator,
 * return() reaches the source at once even while a next() is pending, so an unsubscribe never
 * waits for the next event to release the subscription.
 */
export function transformIterator<In, Out>(
  source: AsyncIterableIterator<In>,
  map: (value: In) => Promise<Out | undefined> | Out | undefined,
): AsyncIterableIterator<Out> {
  const iterator: AsyncIterableIterator<Out> = {
    async next() {
      for (;;) {
        const result = await source.next()
        if (result.done) return { value: undefined, done: true }
        const mapped = await map(result.value)
        if (mapped !== undefined) return { value: mapped, done: false }
      }
    },
    async return() {
      await source.return?.()
      return { value: undefined, done: true }
    },
    async throw(error: unknown) {
      await source.return?.()
      throw error
    },
    [Symbol.asyncIterator]() {
      return iterator
    },
  }
  return iterator
}

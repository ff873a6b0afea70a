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
  const wrapped: AsyncIterableIterator<T> = {
    async next() {
      if (finished) return { done: true, value: undefined }
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
      return { done: true, value: undefined }
    },
    [Symbol.asyncIterator]() {
      return wrapped
    },
  }
  return wrapped
}

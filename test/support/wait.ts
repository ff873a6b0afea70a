/**
 * Waits until `probe` returns a value that is not undefined/false (polling the authoritative
 * state; nothing is asserted about time). Fails with the last value after `timeoutMs`.
 */
export async function eventually<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    last = await probe()
    if (last !== undefined && last !== false) return last as T
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms (last: ${JSON.stringify(last)})`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

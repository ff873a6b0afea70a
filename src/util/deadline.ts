/** What `withinDeadline` rejects with when the work has not settled in time. */
export class NoAnswer extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`)
    this.name = 'NoAnswer'
  }
}

/**
 * The work's outcome, or NoAnswer once `timeoutMs` has passed. The work itself goes on (nothing
 * can stop a system call in flight); its late outcome is ignored, so it must not be an unhandled
 * rejection: it is caught here.
 */
export async function withinDeadline<T>(timeoutMs: number, work: Promise<T>): Promise<T> {
  work.catch(() => undefined)
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer(timeoutMs)), timeoutMs)
  })
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}

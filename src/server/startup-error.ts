/**
 * A start-up failure the operator can fix: what is wrong, which variable or file, what to do.
 * main.ts prints it as one line without a stack, because it is not a crash of the server.
 */
export class StartupError extends Error {
  constructor(
    readonly problem: string,
    /** The environment variable or file at fault. */
    readonly subject: string,
    readonly remedy: string,
  ) {
    super(`${subject}: ${problem}. ${remedy}`)
    this.name = 'StartupError'
  }
}

/** Connection URLs in a text with their user and password left out (`postgres://u:pw@h/db` → `postgres://h/db`). */
export function withoutCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s"']*@/gi, '$1')
}

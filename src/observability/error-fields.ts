/** What a log may say about a failure: its class and driver code, never its message (it can quote content). */
export function errorFields(error: unknown): { errorName?: string; errorCode?: string } {
  if (!(error instanceof Error)) return {}
  const code = (error as { code?: unknown }).code
  return { errorName: error.name, ...(typeof code === 'string' && { errorCode: code }) }
}

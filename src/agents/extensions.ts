// ACP extension methods of this product (ACP reserves names starting with "_" for extensions).
// Shared by the mock agent and the client side, so both speak the same shapes.

/** Agent → client request: ask the user a question; the response carries the answer. */
export const CLARIFY_METHOD = '_tss/clarify'
export interface ClarifyParams {
  sessionId: string
  question: string
}
export interface ClarifyResult {
  outcome: 'answered' | 'cancelled'
  answer?: string
}

/** Agent → client notification: a subagent started or finished (activeSubagentCount). */
export const SUBAGENT_METHOD = '_tss/subagent'
export interface SubagentParams {
  sessionId: string
  subagentId: string
  title: string
  state: 'started' | 'finished'
}

/** Data of the JSON-RPC error that ends a prompt with a recoverable session error. */
export interface SessionErrorData {
  code: string
}

export function objectParams<T>(params: unknown): T {
  if (!params || typeof params !== 'object') throw new Error('params must be an object')
  return params as T
}

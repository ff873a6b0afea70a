// Enforced by Yoga's plugins (server/plugins/use-operation-limits.ts) and, for the message size,
// by the WebSocket gateway too (delivery/): both read them from here, below either.

/**
 * What one GraphQL document may ask for (README "Limits"). The deepest real documents of the schema
 * (boot, tasks with summaries, sessionEvents) stay far below each: at most depth 10, 119 tokens,
 * no aliases or directives; the costliest, `tasks(first: 500)` with every summary field, is about a
 * third of maxCost (test/schema/operation-limits.test.ts).
 */
export const OPERATION_LIMITS = {
  /**
   * MAPPING.md: query depth at most 12, introspection included. The standard introspection query
   * counts exactly 12 because the first levels of an `ofType` chain nest no data (server/plugins/query-depth.ts).
   */
  maxDepth: 12,
  maxAliases: 15,
  maxDirectives: 50,
  /** Lexical tokens of one document; also what stops thousands of fragments or repeated fields before validation. */
  maxTokens: 1000,
  /**
   * graphql-armor's estimate (object 2, scalar 1, ×1.5 per level, × page size), with page sizes
   * taken from variables and schema defaults too. `tasks(first: 500)` with every summary field
   * costs about 332,000; 500 tasks with each session's 100 messages (about 1,280,000) is refused.
   */
  maxCost: 1_000_000,
  /** Characters of the document text: one comment or string literal is a single token, so tokens alone do not bound size. */
  maxDocumentBytes: 512 * 1024,
  /** HTTP request body (document and variables, e.g. a 256 KiB addMessage content, JSON-escaped). */
  maxRequestBodyBytes: 2 * 1024 * 1024,
} as const

export type OperationLimits = { [K in keyof typeof OPERATION_LIMITS]: number }

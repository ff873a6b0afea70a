import SchemaBuilder from '@pothos/core'
import { GraphQLError, Kind } from 'graphql'
import type { Context } from './context.ts'

/** The one typed Pothos builder; each domain adds its types in src/schema/types/<domain>.ts. */
export const builder = new SchemaBuilder<{
  Context: Context
  DefaultFieldNullability: false
  Scalars: {
    ID: { Input: string; Output: string }
    DateTime: { Input: Date; Output: Date }
  }
}>({
  defaultFieldNullability: false,
})

builder.queryType({})
builder.mutationType({})
builder.subscriptionType({})

builder.scalarType('DateTime', {
  description: 'An ISO-8601 instant in UTC, e.g. 2026-12-02T16:23:08.000Z.',
  serialize: (value) => value.toISOString(),
  parseValue: (value) => parseDateTime(value),
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
})

function parseDateTime(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined
  if (!date || Number.isNaN(date.getTime()))
    throw new GraphQLError('DateTime must be an ISO-8601 string.', { extensions: { code: 'BAD_USER_INPUT' } })
  return date
}

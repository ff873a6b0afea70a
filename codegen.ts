import type { CodegenConfig } from '@graphql-codegen/cli'

/** Both outputs type their operations the same way: plain string scalars, enums as string unions. */
const typedOperations = {
  plugins: ['typescript-operations', 'typed-document-node'],
  config: {
    scalars: { DateTime: 'string' },
    enumsAsTypes: true,
    useTypeImports: true,
    avoidOptionals: { field: true, inputValue: false },
  },
}

/** Typed documents generated from the printed schema: the operations the tests send, and the client SDK's. */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  generates: {
    'test/generated/graphql.ts': { documents: ['test/documents/*.graphql'], ...typedOperations },
    'packages/client/src/generated/graphql.ts': { documents: ['packages/client/src/operations/*.graphql'], ...typedOperations },
  },
  hooks: {},
}

export default config

import type { CodegenConfig } from '@graphql-codegen/cli'

/** Typed documents generated from the printed schema: the operations the tests send, and the client SDK's. */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  generates: {
    'test/generated/graphql.ts': {
      documents: ['test/documents/*.graphql'],
      plugins: ['typescript-operations', 'typed-document-node'],
      config: {
        scalars: { DateTime: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        avoidOptionals: { field: true, inputValue: false },
      },
    },
    'src/client/generated/graphql.ts': {
      documents: ['src/client/operations/*.graphql'],
      plugins: ['typescript-operations', 'typed-document-node'],
      config: {
        scalars: { DateTime: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        avoidOptionals: { field: true, inputValue: false },
      },
    },
  },
  hooks: {},
}

export default config

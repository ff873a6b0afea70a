import type { CodegenConfig } from '@graphql-codegen/cli'

/** Typed documents for the operations the tests send, generated from the printed schema. */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['test/documents/*.graphql'],
  generates: {
    'test/generated/graphql.ts': {
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

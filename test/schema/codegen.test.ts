import { readFileSync } from 'node:fs'
import { generate } from '@graphql-codegen/cli'
import { describe, expect, it } from 'vitest'
import config from '../../codegen.ts'

describe('test/generated/graphql.ts', () => {
  it('is what `npm run codegen` generates from schema.graphql and test/documents', async () => {
    const [output] = await generate({ ...config, cwd: new URL('../..', import.meta.url).pathname, silent: true }, false)
    expect(output?.filename).toBe('test/generated/graphql.ts')
    expect(readFileSync(new URL('../generated/graphql.ts', import.meta.url), 'utf8')).toBe(output?.content)
  })
})

import { readFileSync } from 'node:fs'
import { generate } from '@graphql-codegen/cli'
import { describe, expect, it } from 'vitest'
import config from '../../codegen.ts'

describe('the committed codegen output', () => {
  it('is what `npm run codegen` generates from schema.graphql, test/documents and packages/client/src/operations', async () => {
    const outputs = await generate({ ...config, cwd: new URL('../..', import.meta.url).pathname, silent: true }, false)
    expect(outputs.map((o: { filename: string }) => o.filename).sort()).toEqual(['packages/client/src/generated/graphql.ts', 'test/generated/graphql.ts'])
    for (const output of outputs) expect(readFileSync(new URL(`../../${output.filename}`, import.meta.url), 'utf8'), output.filename).toBe(output.content)
  })
})

// The bench's own rot, caught in milliseconds: the documents a scenario builds are valid against
// the committed schema (P11's once declared $orderBy twice when the SDK's ClientTasksPage gained it,
// and only a full `npm run bench` found out), and a short run (BENCH_SHORT=1, CI) judges no goal.
import { readFileSync } from 'node:fs'
import { buildSchema, parse, validate } from 'graphql'
import { describe, expect, it } from 'vitest'
import { QUERY as P11_QUERY } from '../../bench/p11-operations.ts'
import { NOT_JUDGED, unjudged } from '../../bench/scenario.ts'

const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'))

describe('bench documents', () => {
  it("P11's tasks request is valid and sets orderBy", () => {
    expect(validate(schema, parse(P11_QUERY)).map((e) => e.message)).toEqual([])
    expect(P11_QUERY).toMatch(/orderBy: \$orderBy/)
  })
})

describe('a short run', () => {
  it('keeps each goal in words, marked unjudged, with no verdict', () => {
    const result = unjudged({
      id: 'P0',
      title: 'example',
      rows: [
        { metric: 'judged', value: 2, unit: 'ms', goal: '≤ 1 ms', met: false },
        { metric: 'informational', value: 3, unit: 'ms' },
      ],
    })
    expect(result.title).toBe('example [short]')
    expect(result.rows).toEqual([
      { metric: 'judged', value: 2, unit: 'ms', goal: `≤ 1 ms: ${NOT_JUDGED}` },
      { metric: 'informational', value: 3, unit: 'ms' },
    ])
  })
})

import { readFileSync } from 'node:fs'
import { buildSchema, findBreakingChanges, findDangerousChanges, DangerousChangeType } from 'graphql'
import { describe, expect, it } from 'vitest'
import { printedSchema } from '../../src/schema/schema.ts'

const committed = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8')
const contract = readFileSync(new URL('../../../shared/contract/schema.graphql', import.meta.url), 'utf8')

/** Additions are allowed by the contract ("add freely"); a changed default changes meaning. */
const ALLOWED_DANGEROUS: string[] = [
  DangerousChangeType.OPTIONAL_ARG_ADDED,
  DangerousChangeType.OPTIONAL_INPUT_FIELD_ADDED,
  DangerousChangeType.VALUE_ADDED_TO_ENUM,
  DangerousChangeType.TYPE_ADDED_TO_UNION,
  DangerousChangeType.IMPLEMENTED_INTERFACE_ADDED,
]

describe('schema.graphql', () => {
  it('is the schema the Pothos builder prints (run `npm run schema:print` after a schema change)', () => {
    expect(committed).toBe(printedSchema())
  })

  it('has no breaking change against the public contract', () => {
    const changes = findBreakingChanges(buildSchema(contract), buildSchema(committed))
    expect(changes.map((c) => `${c.type}: ${c.description}`)).toEqual([])
  })

  it('has no dangerous change against the public contract other than additions', () => {
    const changes = findDangerousChanges(buildSchema(contract), buildSchema(committed))
    const reported = changes.map((c) => `${c.type}: ${c.description}`)
    console.info(`dangerous changes against the contract (additions allowed):\n${reported.join('\n') || '(none)'}`)
    expect(changes.filter((c) => !ALLOWED_DANGEROUS.includes(c.type)).map((c) => c.description)).toEqual([])
  })
})

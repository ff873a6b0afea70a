import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildSchema, extendSchema, findBreakingChanges, findDangerousChanges, parse, DangerousChangeType, type GraphQLSchema } from 'graphql'
import { describe, expect, it } from 'vitest'
import { printedSchema } from '../../src/schema/schema.ts'

const committed = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8')

// The public contract lives beside the repository in the workspace that develops it (and in CI),
// not in a user's clone: the check runs wherever it exists and is required under CI.
const contractPath = process.env.CONTRACT_SCHEMA ?? fileURLToPath(new URL('../../../shared/contract/schema.graphql', import.meta.url))
const contract = existsSync(contractPath) ? readFileSync(contractPath, 'utf8') : undefined
// The additions beside it (next.graphql, v1.4: real agents) are built: from here on they are required too.
const nextPath = contractPath.replace(/schema\.graphql$/, 'next.graphql')
const additions = existsSync(nextPath) ? readFileSync(nextPath, 'utf8') : undefined

/** The contract in force: schema.graphql with next.graphql's types added and each `extend type` merged into its type. */
function contractSchema(): GraphQLSchema {
  const base = buildSchema(contract!)
  return additions ? extendSchema(base, parse(additions)) : base
}
const requireContract = process.env.CI === 'true'

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
})

if (!contract) {
  console.warn(`contract check did not run: ${contractPath} not found (it runs wherever the contract exists, and is required under CI)`)
}

describe('schema.graphql against the public contract', () => {
  it.runIf(requireContract)('finds the contract under CI', () => {
    expect(contract, `${contractPath} must exist under CI`).toBeDefined()
  })

  it.runIf(additions !== undefined)('builds the v1.4 additions of next.graphql (permission options, tool-call detail, plan, mode)', () => {
    const merged = contractSchema()
    for (const [type, field] of [['Message', 'permissionOptions'], ['Message', 'toolCall'], ['Session', 'plan'], ['Session', 'currentModeId']] as const)
      expect(Object.keys((merged.getType(type) as { getFields(): object }).getFields()), `${type}.${field} in the merged contract`).toContain(field)
  })

  it.runIf(contract !== undefined)('has no breaking change: every contract type, field and argument exists', () => {
    const changes = findBreakingChanges(contractSchema(), buildSchema(committed)).map((c) => `${c.type}: ${c.description}`)
    expect(changes, 'breaks the contract').toEqual([])
  })

  it.runIf(contract !== undefined)('has no dangerous change against the contract other than additions', () => {
    const changes = findDangerousChanges(contractSchema(), buildSchema(committed))
    expect(changes.filter((c) => !ALLOWED_DANGEROUS.includes(c.type)).map((c) => c.description)).toEqual([])
  })
})

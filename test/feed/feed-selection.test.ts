import { describe, expect, it } from 'vitest'
import { Kind, parse, print, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql'
import { getSchema } from '../../src/schema/schema.ts'
import { upsertCarriesSummary } from '../../src/schema/feed-selection.ts'
import { ClientWorkspaceEventsDocument } from '../../packages/client/src/generated/graphql.ts'
import { ResumeWorkspaceEventsDocument } from '../generated/graphql.ts'

/** What workspaceEvents' subscribe sees of a document: its root field, the fragments, the variables. */
function carries(document: DocumentNode | string, variableValues: Record<string, unknown> = {}): boolean {
  const parsed = typeof document === 'string' ? parse(document) : parse(print(document))
  const operation = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!
  const fragments = Object.fromEntries(
    parsed.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
  )
  const field = operation.selectionSet.selections[0] as FieldNode
  return upsertCarriesSummary({ schema: getSchema(), fieldNodes: [field], fragments, variableValues })
}

/** A workspaceEvents document with these selections on TaskUpserted and TaskStatusSummaryUpdated. */
const feed = (upserted: string, updated: string, rest = '') => `
  subscription ($workspaceId: ID!, $after: String, $on: Boolean = true) {
    workspaceEvents(workspaceId: $workspaceId, after: $after) {
      __typename
      ... on TaskUpserted { ${upserted} }
      ... on TaskStatusSummaryUpdated { ${updated} }
    }
  }
  ${rest}`

describe('upsertCarriesSummary: may a replay send a renamed task as its TaskUpserted alone?', () => {
  it("the SDK's ClientWorkspaceEvents: yes (TaskRowFields selects the summary with StatusSummaryFields, as its summary event does)", () => {
    expect(carries(ClientWorkspaceEventsDocument)).toBe(true)
  })

  it('a document whose task has no statusSummary: no (test/documents ResumeWorkspaceEvents)', () => {
    expect(carries(ResumeWorkspaceEventsDocument)).toBe(false)
    expect(carries(feed('task { id title }', 'taskId summary { revision }'))).toBe(false)
  })

  it('the upsert must answer every summary field the summary event asks, under the same key and nested alike', () => {
    expect(carries(feed('task { id statusSummary { revision updatedAt git { additions } } }', 'taskId summary { revision git { additions } }'))).toBe(true)
    expect(carries(feed('task { id statusSummary { revision } }', 'taskId summary { revision updatedAt }'))).toBe(false)
    expect(carries(feed('task { id statusSummary { rev: revision } }', 'taskId summary { revision }'))).toBe(false)
    expect(carries(feed('task { id statusSummary { revision git { additions } } }', 'taskId summary { revision git { additions deletions } }'))).toBe(false)
    expect(carries(feed('task { id statusSummary { revision git { additions } } }', 'taskId summary { revision git { a: deletions } }'))).toBe(false)
  })

  it("the task's id and, if the summary event has it, the cursor", () => {
    expect(carries(feed('task { title statusSummary { revision } }', 'taskId summary { revision }'))).toBe(false)
    expect(carries(feed('task { id statusSummary { revision } }', 'cursor taskId summary { revision }'))).toBe(false)
    expect(carries(feed('cursor task { id statusSummary { revision } }', 'cursor taskId workspaceId summary { revision }'))).toBe(true)
    expect(carries(feed('after: cursor task { id statusSummary { revision } }', 'cursor taskId summary { revision }'))).toBe(false)
  })

  it('@skip and @include as execution evaluates them with the variables', () => {
    const optional = feed('task { id statusSummary @include(if: $on) { revision } }', 'taskId summary { revision }')
    expect(carries(optional, { on: true })).toBe(true)
    expect(carries(optional, { on: false })).toBe(false)
    const narrower = feed('task { id statusSummary { revision } }', 'taskId summary { revision updatedAt @skip(if: $on) }')
    expect(carries(narrower, { on: true })).toBe(true)
    expect(carries(narrower, { on: false })).toBe(false)
  })

  it('through named fragments, on the union or the member types', () => {
    const document = `
      subscription ($workspaceId: ID!) { workspaceEvents(workspaceId: $workspaceId) { ...Event } }
      fragment Event on WorkspaceEvent {
        ... on TaskUpserted { task { ...Row } }
        ...Summary
      }
      fragment Summary on TaskStatusSummaryUpdated { taskId summary { ...Fields } }
      fragment Row on Task { id statusSummary { ...Fields lastActivityAt } }
      fragment Fields on TaskStatusSummary { revision updatedAt }`
    expect(carries(document)).toBe(true)
    expect(carries(document.replace('...Fields lastActivityAt', 'lastActivityAt'))).toBe(false)
  })
})

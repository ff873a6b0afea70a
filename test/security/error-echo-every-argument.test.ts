// The 64-character rule (MAPPING v1.3) for every argument there is: generated from the printed
// schema, so an argument added later is covered without editing this file. Each case sends a 1 MB
// value in one String or ID slot (an argument, or a field of an input object, at any depth) of one
// root field, with every other required slot filled with a valid value, as the admin and as a
// workspace member, and checks that no error message or extension repeats more than 64
// characters of it. (Data may hold it: a title of 1 MB that is accepted is not an echo.)
import { randomUUID } from 'node:crypto'
import type { Client } from 'graphql-ws'
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isAbstractType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getSchema } from '../../src/schema/schema.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { echoesMoreThan, postOperation, socketOperation, taskWithSession, type Answer, type Operation } from './harness.ts'

const MB = 1024 * 1024
const SENT = 'Qz7'.repeat(Math.ceil(MB / 3)).slice(0, MB)

interface Ids {
  workspace: string
  task: string
  session: string
  user: string
}

/** A path to one String or ID leaf: the argument, then input-object field names and list positions. */
type Slot = (string | number)[]

/** Every String/ID leaf under an input type (lists and input objects followed, cycles cut). */
function slotsOf(type: GraphQLInputType, path: Slot, seen: Set<string>): Slot[] {
  const inner = isNonNullType(type) ? type.ofType : type
  if (isListType(inner)) return slotsOf(inner.ofType, [...path, 0], seen)
  if (isInputObjectType(inner)) {
    if (seen.has(inner.name)) return []
    const next = new Set(seen).add(inner.name)
    return Object.values(inner.getFields()).flatMap((f) => slotsOf(f.type, [...path, f.name], next))
  }
  return isScalarType(inner) && (inner.name === 'String' || inner.name === 'ID') ? [path] : []
}

/** A valid value for `type`, with SENT at `slot` (relative to it); optional parts only where the slot leads. */
function valueOf(type: GraphQLInputType, name: string, slot: Slot | undefined, ids: Ids): unknown {
  const inner = isNonNullType(type) ? type.ofType : type
  if (slot && slot.length === 0) return SENT
  if (isListType(inner)) return [valueOf(inner.ofType, name, slot?.slice(1), ids)]
  if (isInputObjectType(inner)) {
    const value: Record<string, unknown> = {}
    for (const field of Object.values(inner.getFields())) {
      const onPath = slot?.[0] === field.name
      if (onPath || (isNonNullType(field.type) && field.defaultValue === undefined)) value[field.name] = valueOf(field.type, field.name, onPath ? slot!.slice(1) : undefined, ids)
    }
    return value
  }
  if (isEnumType(inner)) return inner.getValues()[0]!.name
  switch (inner.name) {
    case 'ID':
      return /workspace/i.test(name) ? ids.workspace : /session/i.test(name) ? ids.session : /user/i.test(name) ? ids.user : /clientMessage|pending/i.test(name) ? randomUUID() : ids.task
    case 'Int':
    case 'Float':
      return 1
    case 'Boolean':
      return true
    case 'DateTime':
      return new Date().toISOString()
    default:
      return 'x'
  }
}

interface Case {
  name: string
  operation: Operation
  kind: 'query' | 'mutation' | 'subscription'
}

function casesOf(kind: Case['kind'], fields: Record<string, GraphQLField<unknown, unknown>>, ids: Ids): Case[] {
  return Object.values(fields).flatMap((field) =>
    field.args.flatMap((arg) =>
      slotsOf(arg.type, [arg.name], new Set()).map((slot) => {
        const args = field.args.filter((a) => a === arg || (isNonNullType(a.type) && a.defaultValue === undefined))
        const variables = Object.fromEntries(args.map((a: GraphQLArgument) => [a.name, valueOf(a.type, a.name, a === arg ? slot.slice(1) : undefined, ids)]))
        const declared = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ')
        const passed = args.map((a) => `${a.name}: $${a.name}`).join(', ')
        const returned = getNamedType(field.type)
        const selection = isObjectType(returned) || isAbstractType(returned) ? ' { __typename }' : ''
        return {
          name: `${kind} ${field.name}(${slot.join('.')})`,
          kind,
          operation: { query: `${kind}${declared ? ` (${declared})` : ''} { ${field.name}${passed ? `(${passed})` : ''}${selection} }`, variables },
        }
      }),
    ),
  )
}

describe('no error repeats more than 64 characters of a 1 MB value in any String or ID slot of the schema (sqlite)', () => {
  let server: TestServer
  let member: string
  let socket: Record<'admin' | 'member', Client>
  let cases: Case[] = []

  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { RATE_LIMIT_MUTATIONS: '0', RATE_LIMIT_SUBSCRIPTIONS: '0' } })
    const user = await userWithWorkspace(server, 'every-argument')
    member = user.token
    const { taskId, sessionId } = await taskWithSession(server, member, user.workspaceId, 'Echo')
    const viewer = await postOperation(server, member, { query: '{ viewer { user { id } } }' })
    const ids: Ids = {
      workspace: user.workspaceId,
      task: taskId,
      session: sessionId,
      user: ((viewer.data!.viewer as { user: { id: string } }).user).id,
    }
    const schema = getSchema()
    cases = [
      ...casesOf('query', schema.getQueryType()!.getFields(), ids),
      ...casesOf('mutation', schema.getMutationType()!.getFields(), ids),
      ...casesOf('subscription', schema.getSubscriptionType()!.getFields(), ids),
    ]
    socket = { admin: await wsClient(server.wsUrl, server.adminToken), member: await wsClient(server.wsUrl, member) }
  }, 120_000)
  afterAll(async () => {
    await Promise.all(Object.values(socket ?? {}).map((s) => s.dispose()))
    await server?.close()
  })

  it('covers every String and ID slot of every root field (the schema grows, the cases with it)', () => {
    expect(cases.length).toBeGreaterThan(50)
    for (const field of ['respondToPermission(pendingId)', 'answerClarification(pendingId)', 'startSession(input.agentProfile)', 'task(id)', 'sessionEvents(sessionId)'])
      expect(cases.map((c) => c.name.replace(/^\w+ /, ''))).toContain(field)
  })

  it('as the admin and as a member, over HTTP (queries, mutations) and WebSocket (subscriptions)', { timeout: 600_000 }, async () => {
    const echoes: string[] = []
    for (const c of cases)
      for (const [who, token] of [['admin', server.adminToken], ['member', member]] as const) {
        const answer: Answer = c.kind === 'subscription' ? await socketOperation(socket[who], c.operation) : await postOperation(server, token, c.operation)
        for (const error of answer.errors ?? [])
          if (echoesMoreThan(error.message, SENT) || echoesMoreThan(JSON.stringify(error.extensions ?? {}), SENT))
            echoes.push(`${who} ${c.name}: ${error.message.slice(0, 120)}`)
      }
    expect(echoes).toEqual([])
  })
})

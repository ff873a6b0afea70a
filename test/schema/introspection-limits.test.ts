import { readdirSync, readFileSync } from 'node:fs'
import { buildClientSchema, buildSchema, getIntrospectionQuery, Kind, parse, printSchema, validate, type IntrospectionQuery } from 'graphql'
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth'
import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient, type GraphQLErrorShape } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { OPERATION_LIMITS } from '../../src/contract/operation-limits.ts'
import { printedSchema } from '../../src/schema/schema.ts'
import { countDepth, FREE_OF_TYPE_LEVELS } from '../../src/server/plugins/query-depth.ts'

type Outcome = { status?: number; errors?: GraphQLErrorShape[]; data?: Record<string, unknown> | null }

/** What GraphiQL 5 and @graphql-codegen ask for (typeDepth stays graphql-js's default, 9). */
const STANDARD_OPTIONS = {
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
  oneOf: true,
}

/** `ofType { ofType { … name } }`, `levels` deep. */
const ofTypeChain = (levels: number) => {
  let selection = 'name'
  for (let i = 0; i < levels; i++) selection = `ofType { ${selection} }`
  return selection
}

/** Depth 50 as armor's own rule counts it, in the shape the issue reported. */
const DEPTH_50 = `{ __schema { types { fields { type { ${ofTypeChain(45)} } } } } }`

describe('every limit applies to introspection too, over HTTP and graphql-ws', () => {
  let server: TestServer
  let token: string
  let socket: Client

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token } = await userWithWorkspace(server, 'introspection'))
    socket = await wsClient(server.wsUrl, token)
  })
  afterAll(async () => {
    await socket?.dispose()
    await server?.close()
  })

  const overHttp = async (query: string): Promise<Outcome> => {
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    })
    return { status: response.status, ...((await response.json()) as Outcome) }
  }

  const overWs = async (query: string): Promise<Outcome> => {
    const iterator = socket.iterate({ query })
    try {
      return (await iterator.next()).value as Outcome
    } catch (errors) {
      return { errors: errors as GraphQLErrorShape[] }
    } finally {
      await iterator.return?.()
    }
  }

  const limitErrors = (outcome: Outcome) => (outcome.errors ?? []).map((e) => ({ code: e.extensions?.code, limit: e.extensions?.limit }))

  describe.each([
    ['HTTP', overHttp],
    ['graphql-ws', overWs],
  ] as const)('over %s', (_transport, send) => {
    it('answers the standard introspection query with the whole schema', async () => {
      const outcome = await send(getIntrospectionQuery(STANDARD_OPTIONS))
      expect(outcome.errors).toBeUndefined()
      const printed = printSchema(buildClientSchema(outcome.data as unknown as IntrospectionQuery))
      expect(printed).toBe(printSchema(buildSchema(printedSchema())))
    })

    it('refuses a depth-50 introspection query with BAD_USER_INPUT and runs nothing', async () => {
      const outcome = await send(DEPTH_50)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDepth' }])
      expect(outcome.errors![0]!.message).toBe(`Query depth limit of 12 exceeded, found ${50 - FREE_OF_TYPE_LEVELS}.`)
      expect(outcome.data ?? undefined).toBeUndefined()
    })

    it('refuses the standard query asking one ofType level more than the default (depth 13)', async () => {
      const outcome = await send(getIntrospectionQuery({ ...STANDARD_OPTIONS, typeDepth: FREE_OF_TYPE_LEVELS + 1 }))
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDepth' }])
      expect(outcome.errors![0]!.message).toBe('Query depth limit of 12 exceeded, found 13.')
    })

    it('refuses a deep __type query as well', async () => {
      const outcome = await send(`{ __type(name: "Query") { fields { type { ${ofTypeChain(30)} } } } }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDepth' }])
    })

    it("refuses introspection nesting lists three deep (graphql-js's own rule), within the depth limit", async () => {
      const outcome = await send('{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }')
      expect(outcome.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT'])
      expect(outcome.errors![0]!.message).toMatch(/introspection/i)
      expect(outcome.data ?? undefined).toBeUndefined()
    })

    it('refuses 16 aliases of introspection fields', async () => {
      const fields = Array.from({ length: 16 }, (_, i) => `s${i}: __schema { queryType { name } }`).join(' ')
      const outcome = await send(`{ ${fields} }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxAliases' }])
    })

    it('refuses 51 directives on introspection fields', async () => {
      const outcome = await send(`{ __schema { queryType { ${'name @include(if: true) '.repeat(51)} } } }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDirectives' }])
    })

    it('refuses an introspection document whose cost is over the limit (within depth and tokens)', async () => {
      // Each fragment spreads the one below 40 times: a few hundred tokens, an estimate of about 520 million.
      const fragments = ['fragment F0 on __Type { ' + 'name '.repeat(40) + '}']
      for (let k = 1; k <= 3; k++) fragments.push(`fragment F${k} on __Type { ofType { ${`...F${k - 1} `.repeat(40)}} }`)
      const outcome = await send(`{ __schema { types { ...F3 } } }\n${fragments.join('\n')}`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxCost' }])
      expect(outcome.data ?? undefined).toBeUndefined()
    })

    it('refuses an introspection document over the token limit', async () => {
      const outcome = await send(`{ __schema { types { ${'name '.repeat(OPERATION_LIMITS.maxTokens)} } } }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxTokens' }])
    })
  })
})

describe('the depth count (src/server/plugins/query-depth.ts)', () => {
  const schema = buildSchema(printedSchema())
  /** Depth of each operation of the document, in order. */
  const armorDepths = (source: string) => {
    const found: number[] = []
    const rule = maxDepthRule({
      n: 0,
      ignoreIntrospection: false,
      propagateOnRejection: false,
      onReject: [(_c, e) => found.push(Number(/found (\d+)/.exec(e.message)![1]))],
    })
    validate(schema, parse(source), [rule])
    return found
  }
  const ownDepths = (source: string) => {
    const document = parse(source)
    const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])))
    return document.definitions.flatMap((d) =>
      d.kind === Kind.OPERATION_DEFINITION ? [countDepth({ getFragment: (name) => fragments.get(name) }, d)] : [],
    )
  }
  const armorDepth = (source: string) => armorDepths(source)[0]!
  const ownDepth = (source: string) => ownDepths(source)[0]!

  it("equals graphql-armor's count for every document the tests send, and for fragments and inline fragments", () => {
    const documents = readdirSync('test/documents')
      .map((file) => readFileSync(`test/documents/${file}`, 'utf8'))
      .join('\n')
    const depths = ownDepths(documents)
    expect(depths.length).toBeGreaterThan(20)
    expect(depths).toEqual(armorDepths(documents))
    const shaped = `{ viewer { ...A ... on Viewer { user { ...B } } } } fragment A on Viewer { workspaces { ...C } } fragment B on User { id } fragment C on Workspace { id ...D } fragment D on Workspace { name }`
    expect(ownDepth(shaped)).toBe(armorDepth(shaped))
  })

  it('leaves out only the first levels of an ofType chain, inside introspection, across fragments too', () => {
    // A field named ofType outside introspection counts like any other field.
    expect(ownDepth(`{ a { ${ofTypeChain(12)} } }`)).toBe(armorDepth(`{ a { ${ofTypeChain(12)} } }`))
    expect(ownDepth(`{ __type(name: "Q") { ${ofTypeChain(9)} } }`)).toBe(2)
    expect(ownDepth(`{ __type(name: "Q") { ${ofTypeChain(10)} } }`)).toBe(3)
    // Splitting the chain over fragments does not restart the free levels.
    const split = `{ __type(name: "Q") { ...A } } fragment A on __Type { ${ofTypeChain(8).replace('name', '...B')} } fragment B on __Type { ${ofTypeChain(8)} }`
    expect(ownDepth(split)).toBe(armorDepth(split) - FREE_OF_TYPE_LEVELS)
  })

  // graphql-js's defaults, GraphiQL 5's choice, and everything codegen can ask for: options add only leaves.
  it.each([{}, { inputValueDeprecation: true, schemaDescription: true }, STANDARD_OPTIONS])(
    'counts the standard introspection query %o at exactly the limit',
    (options) => {
      expect(armorDepth(getIntrospectionQuery(options))).toBe(21)
      expect(ownDepth(getIntrospectionQuery(options))).toBe(OPERATION_LIMITS.maxDepth)
    },
  )
})

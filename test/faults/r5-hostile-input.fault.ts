// R5 (docs/performance.md): hostile input against one real server process. Fuzzed documents,
// oversized inputs, alias and fragment bombs, deep queries, broken WebSocket frames, bad tokens
// and another user's ids: the process never exits, each is refused with the contract's code or
// close code (README "Errors", MAPPING "Limits"), nothing of the other workspace reaches the
// intruder, and memory stays bounded.
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildSchema, parse, print, validate, type DocumentNode } from 'graphql'
import { migratedDatabase } from '../support/databases.ts'
import { INSTANCE_ADMIN_TOKEN, killAll, metricValue, startInstance, type Instance } from '../support/instances.ts'
import { ok } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { projectRoot } from '../support/process.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  BootDocument,
  CreateTaskDocument,
  SessionDetailDocument,
  StartSessionDocument,
  TaskDocument,
  TasksDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
  ViewerDocument,
  WorkflowDocument,
} from '../generated/graphql.ts'

const CONTRACT_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'BAD_USER_INPUT', 'CONFLICT', 'RATE_LIMITED', 'INTERNAL_SERVER_ERROR', 'UNAVAILABLE'])
const schema = buildSchema(readFileSync(`${projectRoot}schema.graphql`, 'utf8'))
const FUZZ_CASES = 300
const FUZZ_SEED = 0x5eed_1414
/** RSS growth allowed over the whole battery: the inputs total about 20 MB; a bomb expanded or a body kept per request is far more. */
const RSS_GROWTH_BYTES = 300 * 1024 * 1024

interface ErrorShape {
  message: string
  extensions?: { code?: string }
}
interface Reply {
  status: number
  text: string
  body: { data?: Record<string, unknown> | null; errors?: ErrorShape[] }
}

/** mulberry32: a small seeded PRNG, so a failing fuzz case is the same case on the next run. */
function prng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** One random edit of a document's text: delete, insert punctuation, duplicate, swap or rename a span. */
function mutate(text: string, random: () => number): string {
  const at = (n = text.length) => Math.floor(random() * n)
  const i = at()
  const j = Math.min(text.length, i + 1 + at(24))
  const noise = '{}()[]:$@!.,"\\#=&|\n 0aZ_…'
  switch (at(5)) {
    case 0:
      return text.slice(0, i) + text.slice(j)
    case 1:
      return text.slice(0, i) + Array.from({ length: 1 + at(4) }, () => noise[at(noise.length)]).join('') + text.slice(i)
    case 2:
      return text.slice(0, j) + text.slice(i, j) + text.slice(j)
    case 3: {
      const k = at()
      const [a, b] = i < k ? [i, k] : [k, i]
      return text.slice(0, a) + text.slice(b, b + (j - i)) + text.slice(a + (j - i), b) + text.slice(a, a + (j - i)) + text.slice(b + (j - i))
    }
    default:
      return text.replace(/[A-Za-z_]\w*/g, (name) => (random() < 0.1 ? `${name}${at(1000)}` : name))
  }
}

const locallyValid = (text: string) => {
  try {
    return validate(schema, parse(text)).length === 0
  } catch {
    return false
  }
}

describe('R5: hostile input against one server process (sqlite)', () => {
  const children: ChildProcess[] = []
  let server: Instance
  let alice: { token: string; workspaceId: string; taskId: string; sessionId: string; secrets: string[] }
  let bob: { token: string; workspaceId: string }
  let rssBefore: number
  /** Every reply bob got, with what bob sent: checked for alice's data at the end. */
  const bobSaw: { sent: string; got: string }[] = []

  beforeAll(async () => {
    server = await startInstance('r5', { DATABASE_URL: await migratedDatabase('sqlite'), LOG_LEVEL: 'error' }, children)
    const admin = { graphqlUrl: server.url, adminToken: INSTANCE_ADMIN_TOKEN }
    const a = await userWithWorkspace(admin, 'alice')
    bob = await userWithWorkspace(admin, 'bob')
    const title = `alice-only ${randomUUID()}`
    const taskId = (await ok(server.url, a.token, CreateTaskDocument, { input: { workspaceId: a.workspaceId, title } })).createTask.id
    const prompt = `alice-prompt ${randomUUID()}`
    const sessionId = (await ok(server.url, a.token, StartSessionDocument, { input: { taskId, prompt } })).startSession.id
    const settled = await eventually(async () => {
      const { session } = await ok(server.url, a.token, SessionDetailDocument, { id: sessionId, last: 10 })
      return session?.state === 'WAITING_FOR_INPUT' && session.messages.some((m) => m.author === 'AGENT') && session
    })
    const aliceUser = (await ok(server.url, a.token, ViewerDocument)).viewer.user.id
    alice = { ...a, taskId, sessionId, secrets: [title, prompt, aliceUser, a.workspaceId, taskId, sessionId, ...settled.messages.map((m) => m.id)] }
    rssBefore = await metricValue(server, 'process_resident_memory_bytes')
  })
  afterAll(() => killAll(children))

  async function post(token: string | undefined, body: unknown, init: { headers?: Record<string, string>; raw?: string } = {}): Promise<Reply> {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }), ...init.headers },
      body: init.raw ?? JSON.stringify(body),
    })
    const text = await response.text()
    return { status: response.status, text, body: JSON.parse(text) as Reply['body'] }
  }

  /** Refused as a whole: no data, every error with `code`, no stack, a 4xx or the GraphQL-over-HTTP 200. */
  function expectRefused(reply: Reply, code: string) {
    expect(reply.status, reply.text.slice(0, 300)).toBeLessThan(500)
    expect(reply.body.data ?? null).toBeNull()
    expect(reply.body.errors?.length).toBeGreaterThan(0)
    for (const error of reply.body.errors!) expect(error.extensions?.code, error.message).toBe(code)
    expect(reply.text).not.toMatch(/\bat .*\.(ts|js):\d+/)
  }

  /** A field refused on its own: its error carries `code` and names that field; no data for it. */
  function expectFieldRefused(reply: Reply, field: string, code: string) {
    expect(reply.status).toBeLessThan(500)
    expect(reply.body.data?.[field] ?? null).toBeNull()
    expect(reply.body.errors?.map((e) => e.extensions?.code)).toEqual([code])
  }

  const countMessages = () => ok(server.url, alice.token, SessionDetailDocument, { id: alice.sessionId, last: 100 }).then((d) => d.session!.messages.length)

  it('fuzzed documents: malformed ones are BAD_USER_INPUT, none is an internal error, over HTTP and graphql-ws', { timeout: 120_000 }, async () => {
    const random = prng(FUZZ_SEED)
    const corpus: [DocumentNode, Record<string, unknown>][] = [
      [ViewerDocument, {}],
      [BootDocument, { workspaceId: alice.workspaceId }],
      [TasksDocument, { workspaceId: alice.workspaceId, first: 5 }],
      [TaskDocument, { id: alice.taskId }],
      [WorkflowDocument, { workspaceId: alice.workspaceId }],
      [SessionDetailDocument, { id: alice.sessionId, last: 5 }],
      [TaskStatusSummariesDocument, { taskIds: [alice.taskId] }],
      [UpdateTaskDocument, { id: alice.taskId, input: { description: 'fuzzed' } }],
      // A fixed message id: a fuzzed document that still parses replays it instead of prompting again.
      [AddMessageDocument, { input: { taskId: alice.taskId, sessionId: alice.sessionId, clientMessageId: 'fuzz-1', content: 'fuzz' } }],
    ]
    const cases = Array.from({ length: FUZZ_CASES }, () => {
      const [document, variables] = corpus[Math.floor(random() * corpus.length)]!
      let text = print(document)
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) text = mutate(text, random)
      return { query: text, variables, valid: locallyValid(text) }
    })
    const tally = { refused: 0, answered: 0 }
    for (const c of cases) {
      const reply = await post(alice.token, { query: c.query, variables: c.variables })
      const codes = (reply.body.errors ?? []).map((e) => e.extensions?.code)
      expect(reply.status, c.query).toBeLessThan(500)
      for (const code of codes) expect(CONTRACT_CODES.has(code!), c.query).toBe(true)
      expect(codes, c.query).not.toContain('INTERNAL_SERVER_ERROR')
      if (!c.valid) expectRefused(reply, 'BAD_USER_INPUT')
      tally[c.valid ? 'answered' : 'refused']++
    }
    console.info(`R5 fuzz: ${cases.length} documents (seed ${FUZZ_SEED.toString(16)}), ${tally.refused} malformed, ${tally.answered} still valid`)
    expect(tally.refused).toBeGreaterThan(FUZZ_CASES / 2)

    // The same over one socket: each malformed one fails as its own operation, the socket stays open.
    const ws = await rawGraphqlWs(server.wsUrl, alice.token)
    const malformed = cases.filter((c) => !c.valid).slice(0, 60)
    for (const [i, c] of malformed.entries()) ws.send({ id: `f${i}`, type: 'subscribe', payload: { query: c.query, variables: c.variables } })
    for (const [i] of malformed.entries()) {
      const frame = await ws.waitFor((f) => f.id === `f${i}` && (f.type === 'error' || f.type === 'next'))
      const errors = (frame?.type === 'error' ? frame.payload : frame?.payload?.errors) as ErrorShape[] | undefined
      expect(errors?.map((e) => e.extensions?.code).every((code) => code === 'BAD_USER_INPUT'), JSON.stringify(frame)).toBe(true)
    }
    ws.send({ id: 'after', type: 'subscribe', payload: { query: '{ viewer { user { name } } }' } })
    expect((await ws.waitFor((f) => f.id === 'after' && f.type === 'next'))?.payload?.data).toEqual({ viewer: { user: { name: 'alice' } } })
    ws.socket.close()
  })

  it('oversized inputs: content over 256 KiB, huge variables, a document over its size, a body over the HTTP limit', async () => {
    const messagesBefore = await countMessages()
    const add = (content: string, clientMessageId: string = randomUUID()) =>
      post(alice.token, { query: print(AddMessageDocument), variables: { input: { taskId: alice.taskId, sessionId: alice.sessionId, clientMessageId, content } } })
    expectFieldRefused(await add('x'.repeat(256 * 1024 + 1)), 'addMessage', 'BAD_USER_INPUT')
    expectFieldRefused(await add('x'.repeat(1_500_000)), 'addMessage', 'BAD_USER_INPUT')
    expectFieldRefused(await add('ok', 'x'.repeat(129)), 'addMessage', 'BAD_USER_INPUT')
    expect(await countMessages()).toBe(messagesBefore)

    const ids = Array.from({ length: 20_000 }, () => randomUUID())
    expectFieldRefused(await post(alice.token, { query: print(TaskStatusSummariesDocument), variables: { taskIds: ids } }), 'taskStatusSummaries', 'BAD_USER_INPUT')
    expectFieldRefused(await post(alice.token, { query: print(TasksDocument), variables: { workspaceId: alice.workspaceId, first: 501 } }), 'tasks', 'BAD_USER_INPUT')
    // A variable nested far deeper than any input type: a wrong type, refused before execution.
    const nested = `${'{"n":'.repeat(5_000)}"leaf"${'}'.repeat(5_000)}`
    const deepBody = `{"query":${JSON.stringify(print(UpdateTaskDocument))},"variables":{"id":"${alice.taskId}","input":{"description":${nested}}}}`
    expectRefused(await post(alice.token, undefined, { raw: deepBody }), 'BAD_USER_INPUT')

    expectRefused(await post(alice.token, { query: `# ${'x'.repeat(600 * 1024)}\n{ viewer { user { id } } }` }), 'BAD_USER_INPUT')
    const tooBig = await post(alice.token, { query: '{ viewer { user { id } } }', variables: { pad: 'x'.repeat(3 * 1024 * 1024) } })
    expect(tooBig.status).toBe(413)
    expectRefused(tooBig, 'BAD_USER_INPUT')
    expect(await countMessages()).toBe(messagesBefore)
  })

  it('alias bombs, fragment bombs and cycles, deep queries: BAD_USER_INPUT, answered promptly', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: viewer { user { id } }`).join(' ')} }`
    // Each fragment spreads the one below twice: expanded naively, 2^40 selections.
    const bomb = [
      '{ ...F40 }',
      'fragment F0 on Query { viewer { user { id name } } }',
      ...Array.from({ length: 40 }, (_, i) => `fragment F${i + 1} on Query { ...F${i} ...F${i} }`),
    ].join('\n')
    const wideBomb = [
      '{ ...G20 }',
      'fragment G0 on Query { viewer { user { id } } a: viewer { user { id } } }',
      ...Array.from({ length: 20 }, (_, i) => `fragment G${i + 1} on Query { ...G${i} b${i}: viewer { workspaces { id } } ...G${i} }`),
    ].join('\n')
    const cycle = '{ ...A } fragment A on Query { viewer { user { id } } ...B } fragment B on Query { ...A }'
    let deep = 'name'
    for (let i = 0; i < 20; i++) deep = `ofType { ${deep} }`
    const cases: [string, string][] = [
      ['16 aliases', aliases(16)],
      ['2,000 aliases', aliases(2_000)],
      ['fragment bomb (2^40)', bomb],
      ['wide fragment bomb', wideBomb],
      ['fragment cycle', cycle],
      ['introspection 22 levels deep', `{ __schema { types { fields { type { ${deep} } } } } }`],
      ['types 17 levels deep', `{ __type(name: "Query") { ${'fields { type { '.repeat(8)}name${' } }'.repeat(8)} } }`],
    ]
    for (const [name, query] of cases) {
      const started = performance.now()
      const reply = await post(alice.token, { query })
      const ms = performance.now() - started
      expectRefused(reply, 'BAD_USER_INPUT')
      // Refused by a limit, not after expanding the document: well under what an expansion would take.
      expect(ms, `${name}: ${reply.text.slice(0, 200)}`).toBeLessThan(5_000)
    }
  })

  it('invalid WebSocket frames close the socket with the protocol’s codes; the server keeps serving', async () => {
    /** A bare socket: what it sends first is up to the case; resolves with the close code. */
    // A case the server leaves open fails by its name within seconds, not at the test's time limit.
    const closedWithin = <T,>(closed: Promise<T>, socket: WebSocket, what: string) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const open = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          socket.terminate()
          reject(new Error(`${what}: the server left the socket open for 15 s`))
        }, 15_000)
      })
      return Promise.race([closed, open]).finally(() => clearTimeout(timer))
    }
    const bare = async (what: string, act: (socket: WebSocket) => unknown) => {
      const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws')
      const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)))
      socket.on('error', () => undefined) // a refused frame may end the socket under a write
      await new Promise((resolve) => socket.once('open', resolve))
      act(socket)
      return closedWithin(closed, socket, what)
    }
    /** After a proper connection_init and ack. */
    const initialised = async (what: string, act: (socket: WebSocket) => unknown) => {
      const client = await rawGraphqlWs(server.wsUrl, alice.token)
      client.socket.on('error', () => undefined)
      act(client.socket)
      return (await closedWithin(client.closed, client.socket, what)).code
    }
    const subscribe = JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ viewer { user { id } } }' } })
    // Lasts until completed: a query could finish between two frames and free its id for reuse.
    const live = JSON.stringify({
      id: 'live',
      type: 'subscribe',
      payload: { query: 'subscription ($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }', variables: { w: alice.workspaceId } },
    })
    const cases: [string, typeof bare, (socket: WebSocket) => unknown, number][] = [
      ['subscribe before connection_init', bare, (s) => s.send(subscribe), 4401],
      ['non-JSON before init', bare, (s) => s.send('not json at all'), 4400],
      ['non-JSON', initialised, (s) => s.send('{"type": "subscribe", "id": '), 4400],
      ['id of the wrong type', initialised, (s) => s.send(JSON.stringify({ type: 'subscribe', id: 7, payload: { query: '{ viewer { user { id } } }' } })), 4400],
      ['payload of the wrong type', initialised, (s) => s.send(JSON.stringify({ type: 'subscribe', id: '1', payload: 'query' })), 4400],
      ['unknown message type', initialised, (s) => s.send(JSON.stringify({ type: 'no-such-type' })), 4400],
      ['binary frame', initialised, (s) => s.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), { binary: true }), 4400],
      ['second connection_init', initialised, (s) => s.send(JSON.stringify({ type: 'connection_init', payload: {} })), 4429],
      ['duplicate operation id', initialised, (s) => (s.send(live), s.send(live)), 4409],
      ['text frame of invalid UTF-8', initialised, (s) => s.send(Buffer.from([0x22, 0xff, 0xfe, 0x22]), { binary: false }), 1007],
      ['frame over maxPayload', initialised, (s) => s.send('x'.repeat(2 * 1024 * 1024 + 1)), 1009],
    ]
    for (const [what, connect, act, code] of cases) expect(await connect(what, act), what).toBe(code)
    // Each close was the server's decision, counted by reason; none was an internal error.
    expect(await metricValue(server, 'websocket_server_closes_total', { reason: 'internal_error' })).toBe(0)
    expect((await ok(server.url, alice.token, ViewerDocument)).viewer.user.name).toBe('alice')
  })

  it('missing, unknown and malformed tokens: UNAUTHENTICATED over HTTP, 4403 over graphql-ws', async () => {
    const viewer = { query: print(ViewerDocument) }
    expectRefused(await post(undefined, viewer), 'UNAUTHENTICATED')
    expectRefused(await post('tss_not-a-token', viewer), 'UNAUTHENTICATED')
    expectRefused(await post(undefined, viewer, { headers: { authorization: `Basic ${Buffer.from('alice:x').toString('base64')}` } }), 'UNAUTHENTICATED')
    expectRefused(await post(undefined, viewer, { headers: { authorization: `Bearer ${'a'.repeat(8_000)}` } }), 'UNAUTHENTICATED')
    const mutation = await post(undefined, { query: 'mutation { createWorkspace(name: "anonymous") { id } }' })
    expectRefused(mutation, 'UNAUTHENTICATED')
    for (const params of [{}, { authorization: 'Bearer tss_not-a-token' }, { authorization: 42 }, { authorization: alice.token }]) {
      const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws')
      const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)))
      await new Promise((resolve) => socket.once('open', resolve))
      socket.send(JSON.stringify({ type: 'connection_init', payload: params }))
      expect(await closed, JSON.stringify(params)).toBe(4403)
    }
  })

  it('another user’s workspace, task and session: FORBIDDEN (or null where documented), over HTTP and graphql-ws, nothing changed, nothing leaked', async () => {
    const asBob = async (query: string, variables: Record<string, unknown>) => {
      const reply = await post(bob.token, { query, variables })
      bobSaw.push({ sent: JSON.stringify(variables), got: reply.text })
      return reply
    }
    const reads: [string, string, Record<string, unknown>][] = [
      ['boot', 'query ($w: ID!) { boot(workspaceId: $w) { feedCursor tasks { edges { node { id title } } } } }', { w: alice.workspaceId }],
      ['tasks', 'query ($w: ID!) { tasks(workspaceId: $w) { edges { node { id title } } } }', { w: alice.workspaceId }],
      ['workflow', 'query ($w: ID!) { workflow(workspaceId: $w) { steps { id } } }', { w: alice.workspaceId }],
      ['task', 'query ($t: ID!) { task(id: $t) { id title workspaceId } }', { t: alice.taskId }],
      ['session', 'query ($s: ID!) { session(id: $s) { id messages(last: 10) { content } } }', { s: alice.sessionId }],
    ]
    for (const [field, query, variables] of reads) expectFieldRefused(await asBob(query, variables), field, 'FORBIDDEN')
    const summaries = await asBob('query ($t: [ID!]!) { taskStatusSummaries(taskIds: $t) { taskId revision } }', { t: [alice.taskId] })
    expect(summaries.body).toEqual({ data: { taskStatusSummaries: [null] } })

    const messagesBefore = await countMessages()
    const writes: [string, string, Record<string, unknown>][] = [
      ['createTask', 'mutation ($w: ID!) { createTask(input: { workspaceId: $w, title: "planted" }) { id } }', { w: alice.workspaceId }],
      ['updateTask', 'mutation ($t: ID!) { updateTask(id: $t, input: { title: "taken" }) { id } }', { t: alice.taskId }],
      ['addMessage', 'mutation ($t: ID!, $s: ID!) { addMessage(input: { taskId: $t, sessionId: $s, clientMessageId: "bob-1", content: "hi" }) { replayed } }', { t: alice.taskId, s: alice.sessionId }],
      ['startSession', 'mutation ($t: ID!) { startSession(input: { taskId: $t }) { id } }', { t: alice.taskId }],
      ['stopSession', 'mutation ($s: ID!) { stopSession(id: $s) { id } }', { s: alice.sessionId }],
      ['dismissSessionError', 'mutation ($s: ID!) { dismissSessionError(sessionId: $s) { id } }', { s: alice.sessionId }],
      ['refreshSessionGit', 'mutation ($s: ID!) { refreshSessionGit(sessionId: $s) { id } }', { s: alice.sessionId }],
      ['addWorkspaceMember', 'mutation ($w: ID!, $u: ID!) { addWorkspaceMember(workspaceId: $w, userId: $u) { id } }', { w: alice.workspaceId, u: alice.secrets[2] }],
      ['deleteSession', 'mutation ($s: ID!) { deleteSession(id: $s) }', { s: alice.sessionId }],
      ['deleteTask', 'mutation ($t: ID!) { deleteTask(id: $t) }', { t: alice.taskId }],
    ]
    for (const [field, query, variables] of writes) expectFieldRefused(await asBob(query, variables), field, 'FORBIDDEN')
    const { task } = await ok(server.url, alice.token, TaskDocument, { id: alice.taskId })
    expect(task?.title).toBe(alice.secrets[0])
    expect(await countMessages()).toBe(messagesBefore)
    const { session } = await ok(server.url, alice.token, SessionDetailDocument, { id: alice.sessionId, last: 1 })
    expect(session?.state).toBe('WAITING_FOR_INPUT')

    const ws = await rawGraphqlWs(server.wsUrl, bob.token)
    const operations: [string, string, Record<string, unknown>][] = [
      ['workspaceEvents', 'subscription ($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }', { w: alice.workspaceId }],
      ['taskStatusSummaryUpdated', 'subscription ($w: ID!) { taskStatusSummaryUpdated(workspaceId: $w) { taskId } }', { w: alice.workspaceId }],
      ['sessionEvents', 'subscription ($s: ID!) { sessionEvents(sessionId: $s) { __typename } }', { s: alice.sessionId }],
      ['focusSession', 'mutation ($s: ID!) { focusSession(sessionId: $s) { sessionId } }', { s: alice.sessionId }],
      ['task', 'query ($t: ID!) { task(id: $t) { title } }', { t: alice.taskId }],
    ]
    for (const [field, query, variables] of operations) {
      ws.send({ id: field, type: 'subscribe', payload: { query, variables } })
      const frame = await ws.waitFor((f) => f.id === field && (f.type === 'error' || f.type === 'next'))
      bobSaw.push({ sent: JSON.stringify(variables), got: JSON.stringify(frame) })
      const errors = (frame?.type === 'error' ? frame.payload : frame?.payload?.errors) as ErrorShape[] | undefined
      expect(errors?.map((e) => e.extensions?.code), `${field}: ${JSON.stringify(frame)}`).toEqual(['FORBIDDEN'])
    }
    // Alice's activity meanwhile reaches none of bob's refused subscriptions.
    await ok(server.url, alice.token, UpdateTaskDocument, { id: alice.taskId, input: { description: 'after bob' } })
    ws.send({ id: 'fence', type: 'subscribe', payload: { query: '{ viewer { user { name } } }' } })
    await ws.waitFor((f) => f.id === 'fence' && f.type === 'complete')
    for (const frame of ws.frames) bobSaw.push({ sent: '', got: JSON.stringify(frame) })
    ws.socket.close()

    // Nothing of alice's reached bob but the ids bob sent himself.
    for (const { sent, got } of bobSaw)
      for (const secret of alice.secrets) if (!sent.includes(secret)) expect(got, `leaked to bob (sent ${sent})`).not.toContain(secret)
  })

  it('afterwards the same process serves, with its memory bounded', async () => {
    expect(server.server.child.exitCode).toBeNull()
    expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200)
    expect((await ok(server.url, alice.token, ViewerDocument)).viewer.user.name).toBe('alice')
    const rss = await metricValue(server, 'process_resident_memory_bytes')
    console.info(`R5: RSS ${Math.round(rssBefore / 2 ** 20)} MB before the battery, ${Math.round(rss / 2 ** 20)} MB after`)
    expect(rss - rssBefore).toBeLessThan(RSS_GROWTH_BYTES)
    expect(await metricValue(server, 'graphql_errors_total', { code: 'INTERNAL_SERVER_ERROR' })).toBe(0)
  })
})

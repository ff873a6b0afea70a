import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { wholeContent, wholeContents } from '../../src/store/message-content.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  StartSessionDocument,
} from '../generated/graphql.ts'

const script = (...steps: object[]) => JSON.stringify({ script: steps })

describe('agent streams (sqlite, real mock agent)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  const logLines: string[] = []

  beforeAll(async () => {
    const { pino } = await import('pino')
    // Every log line the server writes, at debug level, to prove no content reaches a log.
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) })
    server = await startTestServer('sqlite', { logger })
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    workspaceId = owner.workspaceId
  })
  afterAll(() => server?.close())

  async function session() {
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'stream' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const send = (content: string) =>
      ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    return { taskId, sessionId, send }
  }
  const turnsDone = (sessionId: string) => sessionSettled(server, sessionId)

  it('GIVEN 30,000 tiny reasoning chunks for one message, THEN the stored content is byte-exact and publications are at most one per 100 ms window plus barriers', async () => {
    const { sessionId, send } = await session()
    const reasoningChunks = async () =>
      Number(/^agent_chunks_received_total\{kind="REASONING"\} (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1] ?? 0)
    const before = await reasoningChunks()
    await send(script({ stream: { kind: 'reasoning', count: 30000 } }))
    const done = await turnsDone(sessionId)
    const turn = done.turns.find((t) => !t.lifecycleOnly)!
    const [reasoning, ...others] = await wholeContents(server.store, await server.store.db.message.findMany({ where: { sessionId, kind: 'REASONING' } }))
    expect(others).toHaveLength(0)
    let expected = ''
    for (let i = 0; i < 30000; i++) expected += `${i};`
    expect(reasoning!.content.length).toBe(expected.length)
    expect(reasoning!.content === expected).toBe(true)
    // version 1 is the creation; every later version is one published update.
    const updates = reasoning!.version - 1
    const streamedMs = turn.completedAt!.getTime() - reasoning!.createdAt.getTime()
    console.info(`30,000 chunks: ${updates} publications over ${streamedMs} ms`)
    expect(updates).toBeGreaterThanOrEqual(1)
    expect(updates).toBeLessThanOrEqual(Math.ceil(streamedMs / 100) + 1)
    // A total by stream kind (no per-session series): this stream added exactly its chunks.
    expect((await reasoningChunks()) - before).toBe(30000)
  })

  it('GIVEN a noisy session streaming, WHEN another session is prompted, THEN its round trip completes without waiting for the noisy backlog', async () => {
    const noisy = await session()
    const quiet = await session()
    await noisy.send(script({ stream: { kind: 'message', count: 30000 } }))
    await eventually(() => server.store.db.message.findFirst({ where: { sessionId: noisy.sessionId, kind: 'MESSAGE', author: 'AGENT' } }))
    await quiet.send('are you there?')
    await turnsDone(quiet.sessionId)
    const reply = await wholeContent(server.store, await server.store.db.message.findFirst({ where: { sessionId: quiet.sessionId, author: 'AGENT' } }))
    expect(reply?.content).toBe('echo: are you there?')
    // The quiet session's whole round trip finished while the noisy one was still streaming.
    expect((await server.store.db.session.findUniqueOrThrow({ where: { id: noisy.sessionId } })).state).toBe('RUNNING')
    await turnsDone(noisy.sessionId)
  })

  it('never writes message or transcript content to the logs', async () => {
    const { sessionId, send } = await session()
    const secret = `secret-${randomUUID()}`
    await send(script({ say: `reply ${secret}` }, { think: `thought ${secret}` }, { error: { code: 'x', message: `error ${secret}` } }))
    await turnsDone(sessionId)
    await send(`prompt ${secret}`)
    await turnsDone(sessionId)
    expect(logLines.length).toBeGreaterThan(0)
    expect(logLines.filter((l) => l.includes(secret))).toEqual([])
  })
})

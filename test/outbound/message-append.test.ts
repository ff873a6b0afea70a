import type { Socket } from 'node:net'
import { randomUUID } from 'node:crypto'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { parse } from 'graphql'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument, ViewerDocument } from '../generated/graphql.ts'
import { APPEND_SLICE_BYTES } from '../../src/outbound/append-frame.ts'
import { rawGraphqlWs, type Frame } from '../support/raw-ws.ts'

const CHUNKS = 120_000
const script = JSON.stringify({ script: [{ stream: { kind: 'message', count: CHUNKS } }, { tool: { title: 'done' } }] })
const streamed = Array.from({ length: CHUNKS }, (_, i) => `${i};`).join('')

/** Follows appends only: content is selected in MessageAdded (the base), never in MessageUpdated. */
const APPEND_ONLY = `subscription ($sessionId: ID!) {
  sessionEvents(sessionId: $sessionId) {
    __typename
    ... on MessageAdded { message { id kind author version content } }
    ... on MessageUpdated { message { id kind version status } append { offset text } }
  }
}`
/**
 * A client of v1.1: full content in every update (several times over, so that its frames
 * outgrow the loopback's socket buffers, a few MB, and the server's outbound queue fills).
 */
const FULL_CONTENT = `subscription ($sessionId: ID!) {
  sessionEvents(sessionId: $sessionId) {
    __typename
    ... on MessageUpdated { message { id version content c1: content c2: content c3: content c4: content } }
  }
}`
const MESSAGES: TypedDocumentNode<{ session: { messages: Message[] } }, { id: string }> = parse(
  `query ($id: ID!) { session(id: $id) { messages(last: 100) { id version status content } } }`,
)

interface Message {
  id: string
  kind?: string
  author?: string
  version: number
  status?: string | null
  content?: string
}
interface Event {
  __typename: string
  message?: Message
  append?: { offset: number; text: string } | null
}

/** A graphql-ws client whose socket the test can stop reading (the server's writes then back up). */
async function pausableClient(url: string, token: string): Promise<{ client: Client; pause(): void; resume(): void }> {
  const sockets: WebSocket[] = []
  class Recorded extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args)
      sockets.push(this)
    }
  }
  const client = await new Promise<Client>((resolve, reject) => {
    const c = createClient({
      url,
      webSocketImpl: Recorded,
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => undefined,
      connectionParams: { authorization: `Bearer ${token}` },
      on: { connected: () => resolve(c), closed: (event) => reject(event) },
    })
  })
  const tcp = () => (sockets[0] as unknown as { _socket: Socket })._socket
  return { client, pause: () => tcp().pause(), resume: () => tcp().resume() }
}

function collect(client: Client, query: string, variables: Record<string, unknown>) {
  const events: Event[] = []
  const failures: unknown[] = []
  const listeners: (() => void)[] = []
  const dispose = client.subscribe<{ sessionEvents: Event }>(
    { query, variables },
    {
      next: (result) => {
        if (result.errors) throw new Error(JSON.stringify(result.errors))
        events.push(result.data!.sessionEvents)
        for (const l of listeners.splice(0)) l()
      },
      error: (error) => failures.push(error),
      complete: () => undefined,
    },
  )
  return {
    events,
    dispose,
    async until(match: (e: Event) => boolean) {
      while (!events.some(match)) {
        if (failures.length) throw new Error(`subscription failed: ${JSON.stringify(failures)}`)
        await new Promise<void>((resolve) => listeners.push(resolve))
      }
    },
  }
}

const event = (frame: Frame) => frame.payload?.data?.sessionEvents as Event | undefined

/** `wait`, or a failure naming `what` after `ms`. */
async function within<T>(wait: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not come within ${ms} ms`)), ms)))
  try {
    return await Promise.race([wait, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function replacements(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  return Number(/^delivery_replacements_total (\d+)/m.exec(text)?.[1] ?? 0)
}

describe('MessageUpdated.append over a real graphql-ws client (sqlite, real mock agent)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'dev'))
  })
  afterAll(() => server?.close())

  it('GIVEN a throttled reader, WHEN a 120,000-chunk stream is followed by appends, THEN merged appends, in slices of at most 16 KiB, rebuild the stored content byte for byte, each byte once', async () => {
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'stream' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const reader = await pausableClient(server.wsUrl, token)
    // Both views on one connection: the full-content one fills the socket fast, so the
    // append-only one queues behind it and its frames merge; they must never merge with each other.
    const appends = collect(reader.client, APPEND_ONLY, { sessionId })
    const full = collect(reader.client, FULL_CONTENT, { sessionId })
    await appends.until((e) => e.__typename === 'SessionJoined')
    await full.until((e) => e.__typename === 'SessionJoined')

    const before = await replacements(server)
    // Throttled: nothing is read while the whole stream runs. The full-content frames outgrow the
    // loopback's socket buffers within a few windows, so later append frames queue on the server and
    // merge whatever the machine's speed (reading in between would let a fast machine drain every frame).
    reader.pause()
    await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: script } })
    await sessionSettled(server, sessionId)
    reader.resume()
    await appends.until((e) => e.__typename === 'TurnCompleted')
    await full.until((e) => e.__typename === 'TurnCompleted')
    expect(await replacements(server)).toBeGreaterThan(before)

    // Rebuild every message from appends as a v1.3 client does: an append at the length held is
    // applied whatever its version (slices share one), one that ends within it is ignored, any
    // other offset is a gap; a null append is a gap too: read the content then.
    const rebuilt = new Map<string, { content: string; version: number }>()
    let appendedBytes = 0
    let reads = 0
    const violations: string[] = []
    for (const event of appends.events) {
      const message = event.message
      if (!message) continue
      if (event.__typename === 'MessageAdded') rebuilt.set(message.id, { content: message.content!, version: message.version })
      if (event.__typename !== 'MessageUpdated') continue
      const mine = rebuilt.get(message.id)!
      if (event.append) {
        const { offset, text } = event.append
        if (Buffer.byteLength(text) > APPEND_SLICE_BYTES) violations.push(`${message.version}: ${Buffer.byteLength(text)} bytes of text`)
        if (offset + text.length <= mine.content.length && offset !== mine.content.length) continue // already in a content read meanwhile
        if (offset !== mine.content.length) violations.push(`${message.version}: offset ${offset} onto ${mine.content.length}`)
        mine.content = mine.content.slice(0, offset) + text
        mine.version = Math.max(mine.version, message.version)
        appendedBytes += text.length
      } else {
        reads++
        const stored = (await ok(server.graphqlUrl, token, MESSAGES, { id: sessionId })).session.messages
        const row = stored.find((m) => m.id === message.id)!
        if (row.version > mine.version) Object.assign(mine, { content: row.content!, version: row.version })
      }
    }
    expect(violations).toEqual([])

    const stored = (await ok(server.graphqlUrl, token, MESSAGES, { id: sessionId })).session.messages
    const streamMessage = stored.find((m) => m.content === streamed)
    expect(streamMessage, 'the stored stream is byte-exact').toBeDefined()
    for (const m of stored.filter((m) => rebuilt.has(m.id))) expect(rebuilt.get(m.id)!.content).toBe(m.content)
    expect(rebuilt.get(streamMessage!.id)!.content).toBe(streamed)

    const streamUpdates = appends.events.filter((e) => e.__typename === 'MessageUpdated' && e.message!.id === streamMessage!.id)
    const withAppend = streamUpdates.filter((e) => e.append)
    const added = appends.events.find((e) => e.__typename === 'MessageAdded' && e.message!.id === streamMessage!.id)!
    // Each byte once: the base from MessageAdded plus the appends is exactly the content; no gap, so no content read.
    expect(added.message!.content!.length + appendedBytes).toBe(streamed.length)
    expect(withAppend.every((e, i) => i === 0 || e.append!.offset === withAppend[i - 1]!.append!.offset + withAppend[i - 1]!.append!.text.length)).toBe(true)
    // Merged: fewer versions delivered than append publications (each publication is one version;
    // the slices of one merged entry share its version).
    const lastAppendVersion = withAppend.at(-1)!.message!.version
    expect(new Set(withAppend.map((e) => e.message!.version)).size).toBeLessThan(lastAppendVersion - 1)
    // Merged past 16 KiB and sliced: consecutive frames of one version (their bound is checked above).
    const slices = withAppend.filter((e, i) => i > 0 && e.message!.version === withAppend[i - 1]!.message!.version && e.append!.text.length > 0)
    expect(slices.length).toBeGreaterThan(0)
    // A non-append change (the tool call's status; the stream's own final status, if any) carries append null.
    const tool = appends.events.find((e) => e.__typename === 'MessageAdded' && e.message!.kind === 'TOOL_CALL')!
    const toolUpdates = appends.events.filter((e) => e.__typename === 'MessageUpdated' && e.message!.id === tool.message!.id)
    expect(toolUpdates.length).toBeGreaterThan(0)
    expect(toolUpdates.every((e) => e.append === null)).toBe(true)
    expect(reads).toBe(streamUpdates.length - withAppend.length + toolUpdates.length)

    // The full-content view still gets the whole content, never an append it did not ask for.
    const lastFull = full.events.filter((e) => e.__typename === 'MessageUpdated' && e.message!.id === streamMessage!.id).at(-1)!
    expect(lastFull.message!.content).toBe(streamed)
    expect(full.events.every((e) => !('append' in e))).toBe(true)
    console.info(`append view: ${withAppend.length} append frames for ${lastAppendVersion - 1} publications; ${reads} content reads`)
    await reader.client.dispose()
  }, 90_000)

  it('GIVEN a large merged append being written in slices to a slow reader, WHEN a query arrives, THEN its response is written before the remaining slices, each cut to the send window', async () => {
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'slices' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const count = 30_000
    const raw = await rawGraphqlWs(server.wsUrl, token)
    raw.send({ id: 's', type: 'subscribe', payload: { query: APPEND_ONLY, variables: { sessionId } } })
    await within(raw.waitFor((f) => f.id === 's' && event(f)?.__typename === 'SessionJoined'), 'SessionJoined')
    // Nothing read while the whole stream runs: its updates merge into one entry, ~170 KB of text.
    raw.pauseReading()
    const content = JSON.stringify({ script: [{ stream: { kind: 'message', count } }, { tool: { title: 'done' } }] })
    await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    await sessionSettled(server, sessionId)
    // Then read at 128 KB/s: the send window stays at its floor (4 KiB), the rest is written slice by slice.
    raw.throttleReading(128 * 1024)
    raw.resumeReading()
    const appended = (f: Frame) => f.id === 's' && event(f)?.__typename === 'MessageUpdated' && (event(f)!.append?.text.length ?? 0) > 0
    const first = (await within(raw.waitFor(appended), 'the first slice'))!
    const streamId = event(first)!.message!.id
    const sentAt = raw.frames.length
    raw.subscribe('q', ViewerDocument, {})
    const response = (await within(raw.waitFor((f) => f.id === 'q' && f.type === 'next'), 'the response'))!
    await within(raw.waitFor((f) => f.id === 's' && event(f)?.__typename === 'TurnCompleted'), 'TurnCompleted')

    const streamed = raw.frames.filter((f) => f.id === 's' && event(f)?.__typename === 'MessageUpdated' && event(f)!.message!.id === streamId)
    const text = (f: Frame) => event(f)!.append?.text ?? ''
    const bytes = (f: Frame) => Buffer.byteLength(text(f))
    const before = streamed.filter((f) => f.seq > sentAt && f.seq < response.seq)
    const after = streamed.filter((f) => f.seq > response.seq && text(f).length > 0)
    // Behind the response only what was in flight (the window and a slice), not the whole merged append...
    expect(before.reduce((n, f) => n + bytes(f), 0)).toBeLessThanOrEqual(2 * APPEND_SLICE_BYTES)
    // ...which goes on after it, slice by slice.
    expect(after.length).toBeGreaterThanOrEqual(2)
    // Slices are cut to what this reader's window takes (a few KiB; more while a burst of reading
    // inflates its pace estimate), not filled to the contract's 16 KiB.
    const sizes = streamed.map(bytes).sort((a, b) => a - b)
    expect(sizes[Math.floor(sizes.length / 2)]).toBeLessThanOrEqual(APPEND_SLICE_BYTES / 4)
    expect(sizes.at(-1)).toBeLessThanOrEqual(APPEND_SLICE_BYTES)

    // And the slices rebuild the stored message byte for byte (offsets contiguous from MessageAdded's content).
    const added = raw.frames.find((f) => f.id === 's' && event(f)?.__typename === 'MessageAdded' && event(f)!.message!.id === streamId)!
    let rebuilt = event(added)!.message!.content!
    for (const f of streamed) {
      const append = event(f)!.append!
      expect(append.offset).toBe(rebuilt.length)
      rebuilt += append.text
    }
    const stored = (await ok(server.graphqlUrl, token, MESSAGES, { id: sessionId })).session.messages.find((m) => m.id === streamId)!
    expect(rebuilt).toBe(stored.content)
    expect(rebuilt).toBe(Array.from({ length: count }, (_, i) => `${i};`).join(''))
    raw.socket.close()
  }, 90_000)
})

// Tracing across instances: two real servers on one PostgreSQL and one Redis export to a local
// OTLP receiver, A as http/json and B as http/protobuf. A session owned by A streams a message;
// a client subscribed on B receives its frames. One trace runs from the agent's chunk on A to the
// frame written on B, carried through Redis by the payload's traceparent, and nothing that left
// either server holds the message's text.
import type { ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { gqlOk, INSTANCE_ADMIN_TOKEN, killAll, startInstance, type Instance } from '../support/instances.ts'
import { addMessage, agentSaid, newTask, script, session, startSession } from '../support/instance-sessions.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { startRedisServer, type RedisServer } from '../support/redis-server.ts'
import { wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { SessionEventsDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

/** Words no span may carry: the streamed message is made of them (and the prompt quotes them). */
const WORDS = ['zebraquartz', 'marmalade', 'obelisk', 'fennelcrown', 'sextant']
const SECRET = WORDS.join(' ')

const stage = (span: ReceivedSpan) => span.attributes['task_status.stage']

/** A trace as a tree, one span a line: stage, span name, instance, start after the trace's first span and duration, in ms. */
function traceTree(trace: ReceivedSpan[]): string {
  const origin = trace.reduce((min, s) => (s.startNs < min ? s.startNs : min), trace[0]!.startNs)
  const ms = (ns: bigint) => (Number(ns) / 1e6).toFixed(2)
  const ids = new Set(trace.map((s) => s.spanId))
  const lines: string[] = []
  const walk = (span: ReceivedSpan, depth: number) => {
    lines.push(`${'  '.repeat(depth)}${String(stage(span))} (${span.name}) on ${String(span.resource['service.name'])}: +${ms(span.startNs - origin)} ms, ${ms(span.endNs - span.startNs)} ms`)
    for (const child of trace.filter((s) => s.parentSpanId === span.spanId).sort((x, y) => (x.startNs < y.startNs ? -1 : 1))) walk(child, depth + 1)
  }
  for (const root of trace.filter((s) => !ids.has(s.parentSpanId))) walk(root, 0)
  return lines.join('\n')
}

describe('tracing across two instances (OTLP to a local receiver)', { timeout: 90_000 }, () => {
  const children: ChildProcess[] = []
  let receiver: OtlpReceiver
  let redis: RedisServer
  let a: Instance
  let b: Instance

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    redis = await startRedisServer()
    const shared = {
      DATABASE_URL: await migratedDatabase('postgres'),
      REDIS_URL: redis.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      // Batches leave every 100 ms instead of every 5 s: the test waits for them.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    }
    ;[a, b] = await Promise.all([
      startInstance('A', { ...shared, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'tss-a' }, children),
      startInstance('B', { ...shared, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_SERVICE_NAME: 'tss-b' }, children),
    ])
  })
  afterAll(async () => {
    killAll(children)
    await Promise.all([redis?.stop(), receiver?.close()])
  })

  it('one trace from an ACP chunk on A to a frame write on B, with every stage between, and no message text in any span', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const subscriber = await wsClient(b.wsUrl, INSTANCE_ADMIN_TOKEN)
    const events = wsSubscribe(subscriber, SessionEventsDocument, { sessionId })
    await events.waitFor(1)
    await eventually(async () => (await redis.subscribers(`tss:session:${sessionId}`)) >= 1)

    // Several chunks 30 ms apart: the first creates the message, the others gather in 100 ms windows.
    expect((await addMessage(a, taskId, sessionId, script({ say: SECRET, chunks: 8, ms: 30 }))).errors).toBeUndefined()
    await eventually(async () => agentSaid(await session(a, sessionId)).includes(SECRET))
    await eventually(() => events.events.some((e) => e.data?.sessionEvents.__typename === 'MessageUpdated'))

    const { spans } = receiver
    const fromA = (span: ReceivedSpan) => span.resource['service.name'] === 'tss-a'
    const fromB = (span: ReceivedSpan) => span.resource['service.name'] === 'tss-b'
    /** This session's traces that reached B: started by an ACP chunk on A, with a frame write on B. */
    const crossingTraces = () => {
      const reachedB = new Set(spans.filter((s) => fromB(s) && stage(s) === 'frame.write').map((s) => s.traceId))
      const started = spans.filter((s) => fromA(s) && stage(s) === 'acp.chunk' && s.attributes['task_status.session.id'] === sessionId)
      return [...new Set(started.map((s) => s.traceId))].filter((id) => reachedB.has(id))
    }
    const crossing = await eventually(() => crossingTraces()[0])
    const trace = spans.filter((s) => s.traceId === crossing)
    const stagesOf = (ofInstance: (s: ReceivedSpan) => boolean) => new Set(trace.filter(ofInstance).map(stage))
    expect([...stagesOf(fromA)]).toEqual(expect.arrayContaining(['acp.chunk', 'coalesce', 'store.write', 'pubsub.publish']))
    expect([...stagesOf(fromB)]).toEqual(expect.arrayContaining(['pubsub.deliver', 'frame.write']))
    // A's spans came as JSON, B's as protobuf: both encodings reached the receiver.
    expect(new Set(trace.filter(fromA).map((s) => s.encoding))).toEqual(new Set(['json']))
    expect(new Set(trace.filter(fromB).map((s) => s.encoding))).toEqual(new Set(['protobuf']))

    // The chain, span by span: B's delivery is the child of A's publication (through Redis), the frame write the child of the delivery.
    const one = (name: string, ofInstance: (s: ReceivedSpan) => boolean) => trace.find((s) => ofInstance(s) && stage(s) === name)!
    const publish = one('pubsub.publish', fromA)
    const deliver = one('pubsub.deliver', fromB)
    expect(publish).toMatchObject({ name: 'publish session', attributes: { 'messaging.system': 'redis', 'messaging.destination.name': 'session' } })
    expect(deliver).toMatchObject({ name: 'process session', parentSpanId: publish.spanId, attributes: { 'messaging.system': 'redis', 'task_status.subscriber.count': 1 } })
    expect(trace.filter((s) => stage(s) === 'frame.write').every((f) => f.parentSpanId === deliver.spanId)).toBe(true)
    expect(one('store.write', fromA).spanId).toBe(publish.parentSpanId)
    // The stages start in the order the text travels (one machine, one clock for both instances).
    const starts = ['acp.chunk', 'coalesce', 'store.write', 'pubsub.publish'].map((name) => one(name, fromA).startNs)
    starts.push(deliver.startNs, one('frame.write', fromB).startNs)
    expect(starts).toEqual([...starts].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)))
    // Every trace of this message that reached B (the first chunk's, then each 100 ms window's) is
    // whole once both instances' batches are in: all six stages, across the two instances.
    const whole = (id: string) => new Set(spans.filter((s) => s.traceId === id).map(stage)).size === 6
    const windows = await eventually(() => {
      const ids = crossingTraces()
      return ids.length >= 2 && ids.every(whole) && ids
    })
    for (const traceId of windows)
      console.info(`trace ${traceId}, A (the session's owner) to B (the subscriber's instance):\n${traceTree(spans.filter((s) => s.traceId === traceId))}`)

    // One span per GraphQL operation: the subscription on B, the mutations on A.
    expect(spans.some((s) => fromB(s) && s.name === 'subscription SessionEvents' && s.attributes['graphql.operation.type'] === 'subscription')).toBe(true)
    expect(spans.some((s) => fromA(s) && s.name === 'mutation' && s.attributes['graphql.operation.type'] === 'mutation')).toBe(true)

    // Nothing that left either server quotes the message (nor the prompt that carried it).
    for (const body of receiver.bodies) for (const word of WORDS) expect(body.includes(word)).toBe(false)
    events.dispose()
    await subscriber.dispose()
  })

  it('a badge’s trace: the summary projection on A, its publication, the delivery on B and one fan-out span for the cohort', async () => {
    const { createWorkspace } = await gqlOk<{ createWorkspace: { id: string } }>(a, 'mutation { createWorkspace(name: "badges") { id } }')
    const workspaceId = createWorkspace.id
    const subscriber = await wsClient(b.wsUrl, INSTANCE_ADMIN_TOKEN)
    const feed = wsSubscribe(subscriber, WorkspaceEventsDocument, { workspaceId })
    await eventually(async () => (await redis.subscribers(`tss:workspace:${workspaceId}`)) >= 1)
    const { createTask } = await gqlOk<{ createTask: { id: string } }>(a, 'mutation ($w: ID!) { createTask(input: { workspaceId: $w, title: "t" }) { id } }', { w: workspaceId })
    const sessionId = await startSession(a, createTask.id)
    await eventually(() => feed.events.some((e) => e.data?.workspaceEvents.__typename === 'TaskStatusSummaryUpdated'))

    const { spans } = receiver
    const traceId = await eventually(() => {
      const fanOuts = spans.filter((s) => s.resource['service.name'] === 'tss-b' && stage(s) === 'cohort.fanout')
      const projections = new Set(spans.filter((s) => stage(s) === 'projector.write' && s.attributes['task_status.task.id'] === createTask.id).map((s) => s.traceId))
      return fanOuts.find((f) => projections.has(f.traceId))?.traceId
    })
    const trace = spans.filter((s) => s.traceId === traceId)
    const fanOut = trace.find((s) => stage(s) === 'cohort.fanout')!
    const deliver = trace.find((s) => stage(s) === 'pubsub.deliver' && s.resource['service.name'] === 'tss-b')!
    expect(deliver.name).toBe('process workspace')
    expect(fanOut).toMatchObject({ name: 'cohort fan-out', parentSpanId: deliver.spanId, attributes: { 'task_status.cohort.members': 1 } })
    expect(trace.some((s) => stage(s) === 'pubsub.publish' && s.spanId === deliver.parentSpanId)).toBe(true)
    expect(sessionId).toBeTruthy()
    feed.dispose()
    await subscriber.dispose()
  })
})

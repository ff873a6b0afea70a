// The trace model of agent output on one instance, with the SDK's in-memory exporter: a window's
// first chunk starts its trace, later chunks are counted into it, the write continues it, the
// publication carries its traceparent, a delivery continues it and its frame writes (capped)
// hang under that delivery. And the receiver the multi-instance test uses reads both OTLP
// encodings as the exporters produce them, content-free.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { SessionCoalescer, type CoalescerSink } from '../../src/agents/coalescer.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import type { SessionEventPayload } from '../../src/pubsub/pubsub.ts'
import { tracing, type StageContext } from '../../src/observability/tracing.ts'
import { FRAME_SPANS_PER_DELIVERY, OtelStages } from '../../src/observability/tracing-stages.ts'
import { spansOfJson, spansOfProtobuf } from '../support/otlp-receiver.ts'
import { manualTimers } from '../support/manual-timers.ts'

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const SECRET = 'the launch code is 0000'

const stage = (span: ReadableSpan) => span.attributes['task_status.stage']
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

beforeAll(() => {
  tracing.stages = new OtelStages(provider.getTracer('test'))
  tracing.on = true
})
afterAll(async () => {
  tracing.on = false
  await provider.shutdown()
})

/** Runs a create and one coalesced window of two chunks through a sink that records each write's trace. */
async function streamOneWindow() {
  exporter.reset()
  const time = manualTimers()
  const traces: { op: string; trace?: StageContext }[] = []
  const sink: CoalescerSink = {
    create: async (_kind, _text, trace) => (traces.push({ op: 'create', trace }), 'm1'),
    update: async (_id, _append, trace) => void traces.push({ op: 'update', trace }),
  }
  const coalescer = new SessionCoalescer(sink, (e) => { throw e }, time.timers, 100, 's1')
  // The first chunk creates the record at once (its own trace); the next ones gather in a window.
  coalescer.chunk('MESSAGE', SECRET.slice(0, 4))
  coalescer.chunk('MESSAGE', SECRET.slice(4, 10))
  coalescer.chunk('MESSAGE', SECRET.slice(10), undefined, 3)
  time.advance(100)
  await coalescer.flush()
  return traces
}

describe('agent output stages (tracing on)', () => {
  it('the window’s first chunk starts the trace, the rest are counted into its coalesce span, the write runs under it', async () => {
    const traces = await streamOneWindow()
    expect(traces.map((t) => t.op)).toEqual(['create', 'update'])
    expect(traces.every((t) => t.trace !== undefined)).toBe(true)
    const spans = exporter.getFinishedSpans()
    const chunks = spans.filter((s) => stage(s) === 'acp.chunk')
    const windows = spans.filter((s) => stage(s) === 'coalesce')
    // One chunk span per trace (the window's first), not one per chunk: three chunks after the first made one window.
    expect(chunks).toHaveLength(2)
    expect(chunks.map((s) => s.name)).toEqual(['session/update', 'session/update'])
    expect(chunks[1]!.attributes).toMatchObject({ 'rpc.method': 'session/update', 'task_status.session.id': 's1', 'task_status.chunk.count': 1, 'task_status.text.length': 6 })
    expect(windows[1]!.attributes).toMatchObject({ 'task_status.chunk.count': 4, 'task_status.text.length': SECRET.length - 4 })
    expect(parentOf(windows[1]!)).toBe(chunks[1]!.spanContext().spanId)
    expect(windows[1]!.spanContext().traceId).toBe(chunks[1]!.spanContext().traceId)
  })

  it('a publication carries its traceparent; the delivery continues it; frame writes hang under the delivery, at most a few per delivery', async () => {
    exporter.reset()
    const pubsub = createMemoryPubSub()
    const subscribers = [pubsub.subscribe('session', 's1'), pubsub.subscribe('session', 's1')]
    const window = tracing.stages.chunkArrived('s1', 'MESSAGE', 1, 5)
    const parent = tracing.stages.windowClosed(window)
    const payload: SessionEventPayload = { type: 'MessageUpdated', sessionId: 's1', messageId: 'm1', version: 2, append: { offset: 0, text: SECRET } }
    await tracing.stages.storeWrite(parent, 'update', (context) => pubsub.publish('session', 's1', payload, context))
    const received = await Promise.all(subscribers.map(async (s) => (await s.next()).value as SessionEventPayload & { traceparent?: string }))
    expect(received[0]!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect('traceparent' in payload).toBe(false) // the publisher's object is left as it was
    const delivery = tracing.stages.deliveryOf(received[0]!)!
    expect(delivery).toBeDefined()
    const event = {}
    tracing.stages.carry(received[0]!, event)
    expect(tracing.stages.deliveryOf(event)).toBe(delivery)
    let measured = 0
    let written = 0
    for (let i = 0; i < FRAME_SPANS_PER_DELIVERY + 5; i++) tracing.stages.frameWrite(delivery, 'replaceable', () => (measured++, 100), () => (written++, i))
    // Every frame is written; only those given a span are measured (a frame can be megabytes).
    expect({ measured, written }).toEqual({ measured: FRAME_SPANS_PER_DELIVERY, written: FRAME_SPANS_PER_DELIVERY + 5 })

    const spans = exporter.getFinishedSpans()
    const byStage = (name: string) => spans.filter((s) => stage(s) === name)
    const [store] = byStage('store.write')
    const [publish] = byStage('pubsub.publish')
    const [deliver] = byStage('pubsub.deliver')
    expect(publish!.name).toBe('publish session')
    expect(publish!.attributes).toMatchObject({ 'messaging.system': 'memory', 'messaging.destination.name': 'session', 'messaging.operation.type': 'publish' })
    expect(parentOf(publish!)).toBe(store!.spanContext().spanId)
    expect(deliver!.name).toBe('process session')
    expect(deliver!.attributes).toMatchObject({ 'task_status.subscriber.count': 2, 'messaging.operation.type': 'process' })
    expect(parentOf(deliver!)).toBe(publish!.spanContext().spanId)
    const frames = byStage('frame.write')
    expect(frames).toHaveLength(FRAME_SPANS_PER_DELIVERY)
    expect(frames.every((f) => parentOf(f) === deliver!.spanContext().spanId && f.spanContext().traceId === deliver!.spanContext().traceId)).toBe(true)
    expect(frames[3]!.attributes).toMatchObject({ 'task_status.frame.class': 'replaceable', 'task_status.frame.bytes': 100, 'task_status.frame.queued': 3 })
    await pubsub.close()
  })
})

describe('the test receiver reads what the exporters send', () => {
  it('http/json and http/protobuf give the same spans, ids and attributes, and neither body holds message text', async () => {
    await streamOneWindow()
    const spans = exporter.getFinishedSpans()
    const json = Buffer.from(JsonTraceSerializer.serializeRequest(spans)!)
    const protobuf = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!)
    const fromJson = spansOfJson(JSON.parse(json.toString('utf8')))
    const fromProtobuf = spansOfProtobuf(protobuf)
    const comparable = (list: typeof fromJson) => list.map(({ encoding: _e, ...span }) => span)
    expect(comparable(fromProtobuf)).toEqual(comparable(fromJson))
    expect(fromJson.map((s) => s.traceId)).toEqual(spans.map((s) => s.spanContext().traceId))
    expect(fromJson.filter((s) => s.attributes['task_status.stage'] === 'coalesce').map((s) => s.attributes['task_status.chunk.count'])).toEqual([1, 4])
    for (const body of [json, protobuf]) for (const part of [SECRET, SECRET.slice(4, 10), SECRET.slice(10)]) expect(body.includes(part)).toBe(false)
  })
})

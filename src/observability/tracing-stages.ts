/**
 * The spans of each stage (tracing.ts), on OpenTelemetry's API. Imported only when tracing is on.
 * Contexts are passed explicitly from stage to stage (no async context manager): the stages hand
 * work across queues, timers and processes, where an implicit context would be lost or wrong.
 * No span carries content: ids, sizes, counts and names only.
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { DeliveryTrace, MessagingSystem, OperationSpan, StageContext, StageTracer, WindowTrace } from './tracing.ts'

/**
 * Frame writes traced per delivery on one instance. A session may have thousands of subscribers
 * on an instance: one span each would make every window thousands of spans. The first ones show
 * where a frame's time goes; the deliver span's subscriber count shows how wide the fan-out was.
 */
export const FRAME_SPANS_PER_DELIVERY = 16

/** Stable stage names, on every span as `task_status.stage` (span names follow the semantic conventions). */
export const STAGES = {
  chunk: 'acp.chunk',
  coalesce: 'coalesce',
  store: 'store.write',
  publish: 'pubsub.publish',
  deliver: 'pubsub.deliver',
  frame: 'frame.write',
  projection: 'projector.write',
  fanOut: 'cohort.fanout',
  operation: 'graphql.operation',
} as const

const STAGE = 'task_status.stage'
const propagator = new W3CTraceContextPropagator()
const setter = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) }
const getter = {
  get: (carrier: Record<string, unknown>, key: string) => (typeof carrier[key] === 'string' ? (carrier[key] as string) : undefined),
  keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
}

class Window implements WindowTrace {
  chunks: number
  chars: number
  constructor(
    readonly span: Span,
    readonly context: Context,
    chunks: number,
    chars: number,
  ) {
    this.chunks = chunks
    this.chars = chars
  }
}

class Delivery implements DeliveryTrace {
  framesTraced = 0
  constructor(
    readonly span: Span,
    readonly context: Context,
  ) {}
}

export class OtelStages implements StageTracer {
  readonly #deliveries = new WeakMap<object, Delivery>()

  constructor(private readonly tracer: Tracer) {}

  chunkArrived(sessionId: string, kind: string, chunks: number, chars: number): WindowTrace {
    // ACP is JSON-RPC: the agent's session/update notification (rpc.* conventions).
    const chunk = this.tracer.startSpan('session/update', {
      kind: SpanKind.SERVER,
      attributes: {
        [STAGE]: STAGES.chunk,
        'rpc.system': 'jsonrpc',
        'rpc.method': 'session/update',
        'task_status.session.id': sessionId,
        'task_status.stream.kind': kind,
        'task_status.chunk.count': chunks,
        'task_status.text.length': chars,
      },
    }, ROOT_CONTEXT)
    chunk.end()
    const parent = trace.setSpan(ROOT_CONTEXT, chunk)
    const span = this.tracer.startSpan('coalesce', { attributes: { [STAGE]: STAGES.coalesce, 'task_status.session.id': sessionId } }, parent)
    return new Window(span, trace.setSpan(parent, span), chunks, chars)
  }

  windowClosed(window: WindowTrace): StageContext {
    const { span, context: windowContext, chunks, chars } = window as Window
    span.setAttributes({ 'task_status.chunk.count': chunks, 'task_status.text.length': chars })
    span.end()
    return windowContext
  }

  async storeWrite<T>(parent: StageContext, operation: 'insert' | 'update', write: (context: StageContext) => Promise<T>): Promise<T> {
    const span = this.tracer.startSpan(`${operation} Message`, {
      kind: SpanKind.CLIENT,
      attributes: { [STAGE]: STAGES.store, 'db.operation.name': operation, 'db.collection.name': 'Message' },
    }, parent)
    return endedAfter(span, () => write(trace.setSpan(parent, span)))
  }

  async publish<P extends object>(parent: StageContext, system: MessagingSystem, topic: string, payload: P, send: (traced: P) => Promise<void>): Promise<void> {
    const span = this.tracer.startSpan(`publish ${topic}`, { kind: SpanKind.PRODUCER, attributes: messaging(system, topic, 'publish') }, parent)
    const traced = { ...payload }
    propagator.inject(trace.setSpan(parent, span), traced, setter)
    return endedAfter(span, () => send(traced))
  }

  delivering(payload: object, system: MessagingSystem, topic: string, subscribers: number): DeliveryTrace | undefined {
    if (payload === null || typeof payload !== 'object' || typeof (payload as { traceparent?: unknown }).traceparent !== 'string') return undefined
    const parent = propagator.extract(ROOT_CONTEXT, payload, getter)
    if (!trace.getSpanContext(parent)) return undefined
    const span = this.tracer.startSpan(`process ${topic}`, {
      kind: SpanKind.CONSUMER,
      attributes: { ...messaging(system, topic, 'process'), 'task_status.subscriber.count': subscribers },
    }, parent)
    const delivery = new Delivery(span, trace.setSpan(parent, span))
    this.#deliveries.set(payload, delivery)
    return delivery
  }

  delivered(delivery: DeliveryTrace): void {
    ;(delivery as Delivery).span.end()
  }

  deliveryOf(value: object): DeliveryTrace | undefined {
    return this.#deliveries.get(value)
  }

  carry(from: object, to: object): void {
    const delivery = this.#deliveries.get(from)
    if (delivery) this.#deliveries.set(to, delivery)
  }

  frameWrite(delivery: DeliveryTrace, frameClass: string, bytes: () => number, write: () => number): void {
    if (delivery.framesTraced >= FRAME_SPANS_PER_DELIVERY) {
      write()
      return
    }
    delivery.framesTraced++
    const span = this.tracer.startSpan('frame write', {
      attributes: { [STAGE]: STAGES.frame, 'task_status.frame.class': frameClass, 'task_status.frame.bytes': bytes() },
    }, (delivery as Delivery).context)
    try {
      // Frames still queued on the connection once this one was handed over (0: written at once).
      span.setAttribute('task_status.frame.queued', write())
    } finally {
      span.end()
    }
  }

  async projection<T>(taskId: string, run: (context: StageContext) => Promise<T>): Promise<T> {
    const span = this.tracer.startSpan('project summary', { attributes: { [STAGE]: STAGES.projection, 'task_status.task.id': taskId } }, ROOT_CONTEXT)
    return endedAfter(span, () => run(trace.setSpan(ROOT_CONTEXT, span)))
  }

  fanOut(delivery: DeliveryTrace, members: number, run: () => void): void {
    const span = this.tracer.startSpan('cohort fan-out', { attributes: { [STAGE]: STAGES.fanOut, 'task_status.cohort.members': members } }, (delivery as Delivery).context)
    try {
      run()
    } finally {
      span.end()
    }
  }

  operation(type: string, name: string | undefined, transport: 'http' | 'ws'): OperationSpan {
    const attributes: Attributes = { [STAGE]: STAGES.operation, 'graphql.operation.type': type, 'task_status.transport': transport }
    if (name) attributes['graphql.operation.name'] = name
    // Semantic conventions: "{graphql.operation.type} {graphql.operation.name}", the type alone when unnamed.
    const span = this.tracer.startSpan(name ? `${type} ${name}` : type, { kind: SpanKind.SERVER, attributes }, context.active())
    return {
      end(errorCodes) {
        if (errorCodes && errorCodes.length > 0) {
          span.setAttribute('task_status.error.codes', [...new Set(errorCodes)])
          span.setStatus({ code: SpanStatusCode.ERROR })
        }
        span.end()
      },
    }
  }
}

function messaging(system: MessagingSystem, topic: string, operation: 'publish' | 'process'): Attributes {
  return {
    [STAGE]: operation === 'publish' ? STAGES.publish : STAGES.deliver,
    // 'memory' is no registered messaging.system value: the in-process pub/sub of a single instance.
    'messaging.system': system,
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    'messaging.destination.name': topic,
  }
}

/** Runs `work` inside `span`: the span ends when it settles, marked an error (its name only) if it threw. */
async function endedAfter<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) })
    throw error
  } finally {
    span.end()
  }
}

/** The error's class name only: a message may quote what was written. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'error'
}

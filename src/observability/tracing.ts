/**
 * Tracing's switch and the stages the hot paths report (README "Tracing"). Off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set: then the OpenTelemetry SDK is imported (lazily, here) and
 * `tracing.stages` records spans. Off, every hot path reads one boolean (`tracing.on`) and does
 * nothing else: no span, no context object, no SDK module loaded.
 *
 * The stages of agent output, one trace per coalescing window (the window's first chunk starts it):
 * acp.chunk ▸ coalesce ▸ store.write ▸ pubsub.publish ▸ (W3C traceparent in the pub/sub payload)
 * ▸ pubsub.deliver on every instance with subscribers ▸ frame.write per subscriber frame.
 * The badges' path, one trace per summary projection: projector.write ▸ pubsub.publish ▸
 * pubsub.deliver ▸ cohort.fanout (one span per shared result, whatever the number of members).
 */
import type { Context } from '@opentelemetry/api'
import type { TracingConfig } from '../config/tracing-config.ts'
import type { Logger } from './logger.ts'

/** A stage's place in its trace: the next stage's span is its child. Opaque outside the tracing files. */
export type StageContext = Context

/** The trace of a coalescing window while its chunks gather: the coalescer counts into it. */
export interface WindowTrace {
  chunks: number
  chars: number
}

/** One published event's delivery on this instance: its subscribers' frame writes hang under it. */
export interface DeliveryTrace {
  /** Frame writes given a span so far (capped per delivery: see FRAME_SPANS_PER_DELIVERY). */
  framesTraced: number
}

export type MessagingSystem = 'redis' | 'memory'

/** The span of one GraphQL operation: ended once, with the error codes of its result if any. */
export interface OperationSpan {
  end(errorCodes?: readonly string[]): void
}

export interface StageTracer {
  /** The first chunk of a window (or of a message, whose record is created at once) starts a trace. */
  chunkArrived(sessionId: string, kind: string, chunks: number, chars: number): WindowTrace
  /** The window is handed to its store write: its span ends; the write runs under the returned context. */
  windowClosed(window: WindowTrace): StageContext
  /** The store write of a window (`insert` creates the message, `update` appends to it). */
  storeWrite<T>(parent: StageContext, operation: 'insert' | 'update', write: (context: StageContext) => Promise<T>): Promise<T>
  /** A publication: `send` gets the payload with the trace's traceparent added (a copy; the original is untouched). */
  publish<P extends object>(parent: StageContext, system: MessagingSystem, topic: string, payload: P, send: (traced: P) => Promise<void>): Promise<void>
  /** A payload arrived for `subscribers` local subscribers: its deliver span, if the payload carries a trace. */
  delivering(payload: object, system: MessagingSystem, topic: string, subscribers: number): DeliveryTrace | undefined
  /** The deliver span ends once every local subscriber's queue has the payload. */
  delivered(delivery: DeliveryTrace): void
  /** The delivery a payload (or a value made from it, see `carry`) belongs to. */
  deliveryOf(value: object): DeliveryTrace | undefined
  /** `to` (an event read for a subscriber) belongs to the delivery of `from` (its payload). */
  carry(from: object, to: object): void
  /** One subscriber's frame handed to its connection's outbound queue (`write`), under its delivery; `bytes` is measured only for a frame given a span. */
  frameWrite(delivery: DeliveryTrace, frameClass: string, bytes: () => number, write: () => number): void
  /** A summary projection (the badge path starts here): its publication, if any, continues the trace. */
  projection<T>(taskId: string, run: (context: StageContext) => Promise<T>): Promise<T>
  /** A cohort's shared result handed to its `members` (one span for the whole fan-out, however many). */
  fanOut(delivery: DeliveryTrace, members: number, run: () => void): void
  /** One GraphQL operation (queries and mutations until their result; subscriptions until their stream starts). */
  operation(type: string, name: string | undefined, transport: 'http' | 'ws'): OperationSpan
}

/** What the hot paths read: `on` first, `stages` only when it is true. */
export const tracing: { on: boolean; stages: StageTracer } = { on: false, stages: undefined as unknown as StageTracer }

export interface TracingHandle {
  /** Exports every span finished so far (what the batch would send later) and waits for it. */
  flush(): Promise<void>
  /** Exports what is buffered and stops; tracing is off afterwards. */
  close(): Promise<void>
}

const OFF: TracingHandle = { flush: async () => undefined, close: async () => undefined }

/**
 * Turns tracing on for this process when `config` is given (else nothing is loaded). The
 * OpenTelemetry SDK is imported here, not at start-up: a server without tracing never loads it.
 */
export async function startTracing(config: TracingConfig | undefined, instanceId: string, logger: Logger): Promise<TracingHandle> {
  if (!config) return OFF
  const [{ createTracerProvider }, { OtelStages }] = await Promise.all([import('./tracing-sdk.ts'), import('./tracing-stages.ts')])
  const provider = createTracerProvider(config, instanceId)
  tracing.stages = new OtelStages(provider.getTracer('task-status-server'))
  tracing.on = true
  logger.info({ tracesUrl: config.tracesUrl, protocol: config.protocol, serviceName: config.serviceName }, 'tracing on: spans exported over OTLP')
  return {
    flush: () => provider.forceFlush(),
    async close() {
      tracing.on = false
      await provider.shutdown().catch((error: unknown) => logger.warn({ err: error, action: 'tracing.shutdown' }, 'exporting the last spans failed'))
    },
  }
}

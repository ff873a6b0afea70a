/**
 * The OpenTelemetry SDK behind tracing.ts, imported only when tracing is on: a tracer provider
 * whose spans leave in batches over OTLP/HTTP, as JSON or protobuf. Batching (the SDK's
 * BatchSpanProcessor, tuned by the standard OTEL_BSP_* variables) keeps export off the hot paths:
 * a finished span is queued; a full queue drops spans rather than holding the server up.
 */
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import type { TracingConfig } from '../config/tracing-config.ts'

export function createTracerProvider(config: TracingConfig, instanceId: string): BasicTracerProvider {
  // The URL is passed as parsed (config/tracing-config.ts); the exporters still read the standard
  // OTEL_EXPORTER_OTLP_*HEADERS, TIMEOUT and COMPRESSION variables themselves.
  const exporter = config.protocol === 'http/json' ? new JsonExporter({ url: config.tracesUrl }) : new ProtobufExporter({ url: config.tracesUrl })
  return new BasicTracerProvider({
    // service.instance.id tells the instances apart: a trace crosses them through Redis.
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.instance.id': instanceId }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  })
}

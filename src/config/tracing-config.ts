/**
 * Tracing settings from OpenTelemetry's standard variables (README "Tracing"). Tracing is on only
 * when an OTLP endpoint is given; everything else has OpenTelemetry's defaults. A malformed value
 * is a configuration error naming the variable, like every other setting.
 */

export type OtlpProtocol = 'http/json' | 'http/protobuf'

export interface TracingConfig {
  /** Where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  tracesUrl: string
  protocol: OtlpProtocol
  /** OTEL_SERVICE_NAME; the resource's service.name. */
  serviceName: string
}

export const DEFAULT_SERVICE_NAME = 'task-status-server'
const PROTOCOLS: readonly string[] = ['http/json', 'http/protobuf'] satisfies OtlpProtocol[]

const present = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim())

/**
 * Tracing settings, or undefined when tracing is off (no endpoint, or OTEL_SDK_DISABLED=true).
 * Returns the problems instead when a variable is malformed.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv): { tracing?: TracingConfig; issues: string[] } {
  const issues: string[] = []
  if (present(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return { issues }
  const tracesEndpoint = present(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  const endpoint = present(env.OTEL_EXPORTER_OTLP_ENDPOINT)
  if (tracesEndpoint === undefined && endpoint === undefined) return { issues }
  // The signal-specific variable is the URL itself; the generic one is a base the signal's path is appended to.
  const tracesUrl = tracesEndpoint ?? `${endpoint!.replace(/\/+$/, '')}/v1/traces`
  const variable = tracesEndpoint !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'
  if (!isHttpUrl(tracesUrl)) issues.push(`${variable}: must be an http:// or https:// URL`)
  const protocol = present(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? present(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf'
  if (!PROTOCOLS.includes(protocol))
    issues.push(`OTEL_EXPORTER_OTLP_PROTOCOL: must be http/json or http/protobuf (grpc is not supported), not ${protocol}`)
  if (issues.length > 0) return { issues }
  return { tracing: { tracesUrl, protocol: protocol as OtlpProtocol, serviceName: present(env.OTEL_SERVICE_NAME) ?? DEFAULT_SERVICE_NAME }, issues }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

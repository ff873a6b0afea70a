// Tracing's settings from OpenTelemetry's standard variables, and "unset means off": no provider,
// and no file but the two lazily imported tracing modules brings in an OpenTelemetry value.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/config.ts'
import { tracingFromEnv } from '../../src/config/tracing-config.ts'
import { startTracing, tracing } from '../../src/observability/tracing.ts'

const SRC = new URL('../../src/', import.meta.url).pathname

describe('tracing settings (config/tracing-config.ts)', () => {
  it('no endpoint: tracing is off', () => {
    expect(tracingFromEnv({})).toEqual({ issues: [] })
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SERVICE_NAME: 'x' })).toEqual({ issues: [] })
    expect(loadConfig({}).tracing).toBeUndefined()
  })

  it('the generic endpoint gets /v1/traces appended; protobuf and the default service name unless told otherwise', () => {
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'task-status-server',
    })
  })

  it('the traces endpoint is the URL as given and wins over the generic one; protocol and service name from their variables', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/custom/path',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'tss-eu-1',
    }
    expect(loadConfig(env).tracing).toEqual({ tracesUrl: 'https://traces.example.com/custom/path', protocol: 'http/json', serviceName: 'tss-eu-1' })
    // The signal-specific protocol wins over the generic one, as for the endpoint.
    expect(tracingFromEnv({ ...env, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).tracing?.protocol).toBe('http/protobuf')
  })

  it('OTEL_SDK_DISABLED=true turns it off whatever else is set', () => {
    expect(tracingFromEnv({ OTEL_SDK_DISABLED: 'TRUE', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ issues: [] })
  })

  it('a malformed endpoint or an unsupported protocol is a configuration error naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/)
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/v1/traces' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http/)
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/json or http\/protobuf/)
    // Reported together with the other settings' problems.
    expect(() => loadConfig({ PORT: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })).toThrow(/PORT[\s\S]*OTEL_EXPORTER_OTLP_PROTOCOL/)
  })
})

describe('tracing off', () => {
  it('unset: starting tracing makes no provider and leaves the switch off', async () => {
    const handle = await startTracing(loadConfig({}).tracing, 'i1', pino({ level: 'silent' }))
    expect(tracing.on).toBe(false)
    expect(tracing.stages).toBeUndefined()
    await handle.close()
  })

  it('set: a provider starts, the switch is on, and closing turns it off', async () => {
    const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }).tracing
    const handle = await startTracing(config, 'i1', pino({ level: 'silent' }))
    expect(tracing.on).toBe(true)
    await handle.close()
    expect(tracing.on).toBe(false)
  })

  it('only the lazily imported tracing modules import OpenTelemetry values; every other file at most its types', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === 'generated' ? [] : files(path.join(dir, e.name))) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []))
    const valueImporters = files(SRC).filter((file) => /^import\s+(?!type\s)[^;]*from\s+'@opentelemetry\//m.test(readFileSync(file, 'utf8')))
    expect(valueImporters.map((f) => path.relative(SRC, f)).sort()).toEqual(['observability/tracing-sdk.ts', 'observability/tracing-stages.ts'])
    // tracing.ts loads them with import() only when a configuration is given.
    expect(readFileSync(path.join(SRC, 'observability/tracing.ts'), 'utf8')).toMatch(/await Promise\.all\(\[import\('\.\/tracing-sdk\.ts'\), import\('\.\/tracing-stages\.ts'\)\]\)/)
  })
})

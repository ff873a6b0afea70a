// The real exporters, as the server configures them (tracing-sdk.ts), to a local OTLP receiver:
// one export in each encoding arrives whole, with the resource the instances are told apart by.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { loadConfig } from '../../src/config/config.ts'
import { startTracing, tracing } from '../../src/observability/tracing.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts'

const logger = pino({ level: 'silent' })

describe('OTLP export (json and protobuf) to a local receiver', () => {
  let receiver: OtlpReceiver
  beforeAll(async () => {
    receiver = await startOtlpReceiver()
  })
  afterAll(() => receiver.close())

  for (const protocol of ['http/json', 'http/protobuf'] as const)
    it(`${protocol}: the spans of one window arrive with their stages, ids and resource`, async () => {
      receiver.spans.length = 0
      const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: 'export-test' }).tracing
      const handle = await startTracing(config, 'instance-1', logger)
      const window = tracing.stages.chunkArrived('s1', 'MESSAGE', 3, 42)
      await tracing.stages.storeWrite(tracing.stages.windowClosed(window), 'update', async () => undefined)
      await handle.close() // exports what the batch holds

      const spans = receiver.spans
      expect(spans.map((s) => s.attributes['task_status.stage']).sort()).toEqual(['acp.chunk', 'coalesce', 'store.write'])
      expect(new Set(spans.map((s) => s.encoding))).toEqual(new Set([protocol === 'http/json' ? 'json' : 'protobuf']))
      expect(new Set(spans.map((s) => s.traceId)).size).toBe(1)
      expect(spans[0]!.resource).toMatchObject({ 'service.name': 'export-test', 'service.instance.id': 'instance-1' })
      expect(spans.find((s) => s.name === 'session/update')?.attributes).toMatchObject({ 'task_status.chunk.count': 3, 'task_status.text.length': 42 })
    })
})

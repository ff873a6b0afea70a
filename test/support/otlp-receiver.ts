// A local OTLP/HTTP trace receiver for tests: collects the spans servers POST to /v1/traces, in
// either encoding (http/json or http/protobuf), with their resource, and keeps each raw body so a
// test can search everything that left a server.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gunzipSync } from 'node:zlib'

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  /** Start and end, nanoseconds since the epoch (the exporting instance's clock). */
  startNs: bigint
  endNs: bigint
  attributes: Record<string, AttributeValue>
  resource: Record<string, AttributeValue>
  encoding: 'json' | 'protobuf'
}

export interface OtlpReceiver {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT (spans arrive on /v1/traces). */
  url: string
  spans: ReceivedSpan[]
  bodies: Buffer[]
  close(): Promise<void>
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const bodies: Buffer[] = []
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      try {
        let body = Buffer.concat(parts)
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body)
        bodies.push(body)
        const json = String(req.headers['content-type']).includes('json')
        spans.push(...(json ? spansOfJson(JSON.parse(body.toString('utf8'))) : spansOfProtobuf(body)))
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '')
      } catch (error) {
        res.writeHead(400).end(String(error))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, spans, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

// --- http/json (OTLP JSON: ids in hex, ints possibly as strings) ---

interface JsonAnyValue {
  stringValue?: string
  boolValue?: boolean
  intValue?: number | string
  doubleValue?: number
  arrayValue?: { values?: JsonAnyValue[] }
}
type JsonKeyValue = { key: string; value: JsonAnyValue }

const jsonValue = (v: JsonAnyValue): AttributeValue =>
  v.stringValue ?? v.boolValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.arrayValue?.values?.map(jsonValue)
const jsonAttributes = (list: JsonKeyValue[] = []) => Object.fromEntries(list.map((kv) => [kv.key, jsonValue(kv.value)]))

export function spansOfJson(request: {
  resourceSpans?: { resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; startTimeUnixNano: string | number; endTimeUnixNano: string | number; attributes?: JsonKeyValue[] }[] }[] }[]
}): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        startNs: BigInt(s.startTimeUnixNano),
        endNs: BigInt(s.endTimeUnixNano),
        attributes: jsonAttributes(s.attributes),
        resource: jsonAttributes(rs.resource?.attributes),
        encoding: 'json' as const,
      })),
    ),
  )
}

// --- http/protobuf: a minimal wire-format reader for the few messages OTLP traces use ---

type Field = bigint | Buffer

/** Fields of one protobuf message by number: varints as bigint, everything else as its bytes. */
function fields(buf: Buffer): Map<number, Field[]> {
  const out = new Map<number, Field[]>()
  let at = 0
  const varint = (): bigint => {
    let result = 0n
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++]!
      result |= BigInt(byte & 0x7f) << shift
      if (byte < 0x80) return result
    }
  }
  while (at < buf.length) {
    const key = Number(varint())
    const [number, wire] = [key >>> 3, key & 7]
    let value: Field
    if (wire === 0) value = varint()
    else if (wire === 1) value = buf.subarray(at, (at += 8))
    else if (wire === 5) value = buf.subarray(at, (at += 4))
    else if (wire === 2) {
      const length = Number(varint())
      value = buf.subarray(at, (at += length))
    } else throw new Error(`unsupported protobuf wire type ${wire}`)
    out.set(number, [...(out.get(number) ?? []), value])
  }
  return out
}

const bytesOf = (f: Map<number, Field[]>, n: number) => (f.get(n)?.[0] as Buffer | undefined) ?? Buffer.alloc(0)
const messages = (f: Map<number, Field[]>, n: number) => (f.get(n) ?? []).map((v) => fields(v as Buffer))

function protobufValue(v: Map<number, Field[]>): AttributeValue {
  if (v.has(1)) return bytesOf(v, 1).toString('utf8')
  if (v.has(2)) return v.get(2)![0] === 1n
  if (v.has(3)) return Number(BigInt.asIntN(64, v.get(3)![0] as bigint))
  if (v.has(4)) return bytesOf(v, 4).readDoubleLE(0)
  if (v.has(5)) return messages(fields(bytesOf(v, 5)), 1).map(protobufValue)
  return undefined
}
const protobufAttributes = (list: Map<number, Field[]>[]) =>
  Object.fromEntries(list.map((kv) => [bytesOf(kv, 1).toString('utf8'), protobufValue(fields(bytesOf(kv, 2)))]))

export function spansOfProtobuf(body: Buffer): ReceivedSpan[] {
  return messages(fields(body), 1).flatMap((rs) => {
    const resource = protobufAttributes(messages(fields(bytesOf(rs, 1)), 1))
    return messages(rs, 2).flatMap((ss) =>
      messages(ss, 2).map((s) => ({
        traceId: bytesOf(s, 1).toString('hex'),
        spanId: bytesOf(s, 2).toString('hex'),
        parentSpanId: bytesOf(s, 4).toString('hex'),
        name: bytesOf(s, 5).toString('utf8'),
        kind: Number(s.get(6)?.[0] ?? 0n),
        // fixed64 fields: start_time_unix_nano (7), end_time_unix_nano (8).
        startNs: bytesOf(s, 7).readBigUInt64LE(0),
        endNs: bytesOf(s, 8).readBigUInt64LE(0),
        attributes: protobufAttributes(messages(s, 9)),
        resource,
        encoding: 'protobuf' as const,
      })),
    )
  })
}

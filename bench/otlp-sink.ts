// Where a benchmark's server exports its spans when BENCH_TRACING is set (bench/tracing-overhead.ts):
// an OTLP/HTTP endpoint in a process of its own, so receiving spans costs neither the server nor
// the clients being measured. It reads each body whole, counts it, and answers 200 as a collector would.
import { fork, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

export interface OtlpSink {
  /** The server's OpenTelemetry variables: the sink's endpoint, the protocol asked for, batches every 500 ms. */
  env: Record<string, string>
  /** Ends the sink; resolves with what it received. */
  stop(): Promise<{ exports: number; bytes: number }>
}

export async function startOtlpSink(protocol: string): Promise<OtlpSink> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['otlp-sink'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve(m.url))
    child.once('exit', (code) => reject(new Error(`OTLP sink exited with ${code}`)))
  })
  return {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: '500' },
    stop: () =>
      new Promise((resolve) => {
        child.once('message', (counts: { exports: number; bytes: number }) => {
          child.kill()
          resolve(counts)
        })
        child.send('stop')
      }),
  }
}

function runChild(): void {
  let exports = 0
  let bytes = 0
  const server = createServer((req, res) => {
    req.on('data', (part: Buffer) => (bytes += part.length))
    req.on('end', () => {
      exports++
      const json = String(req.headers['content-type']).includes('json')
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '')
    })
  })
  server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }))
  process.on('message', () => process.send!({ exports, bytes }))
}

// Not 'child': server-process.ts imports this module, and its own child is started with that argument.
if (process.argv[2] === 'otlp-sink') runChild()

// BENCH_P2_TRACE=<file>: a timeline of the throttled appends run, to see where a slow response's time
// goes: the server's writes, probes and pongs (p2-handlers `trace`), and the client's requests, socket
// reads and token-bucket pauses, on one clock (ms since the epoch).
import { writeFileSync } from 'node:fs'
import type { Socket } from 'node:net'

export const clock = () => performance.timeOrigin + performance.now()

export type ServerEvent = [at: number, kind: 'w' | 'c' | 'p' | 'a', bytes: number, inFlight?: number, size?: number]

/** Client side: socket reads and pauses of `tcp`. */
export function traceClient(tcp: Socket, ws: { on(event: 'message', listener: (data: Buffer) => void): unknown }) {
  const recvs: [number, string, number][] = []
  ws.on('message', (data: Buffer) => {
    const head = /^\{"id":"(q\d+)","type":"next"/.exec(data.subarray(0, 40).toString())
    recvs.push([clock(), head?.[1] ?? '', data.length])
  })
  const reads: [number, number][] = []
  const pauses: [number, 'pause' | 'resume'][] = []
  tcp.on('data', (chunk: Buffer) => reads.push([clock(), chunk.length]))
  const pause = tcp.pause.bind(tcp)
  const resume = tcp.resume.bind(tcp)
  tcp.pause = () => (pauses.push([clock(), 'pause']), pause())
  tcp.resume = () => (pauses.push([clock(), 'resume']), resume())
  return { reads, pauses, recvs }
}

let written = 0

/** The lanes server's run to `file`, the FIFO server's to `file`.2. */
export function writeTrace(file: string, trace: object) {
  writeFileSync(written++ ? `${file}.${written}` : file, JSON.stringify(trace))
}

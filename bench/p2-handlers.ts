// P2's requests of the server process (bench/server-process.ts): seeding through the store and the
// send windows the scheduler settled on.
import type { RunningServer } from '../src/app/start-server.ts'
import { byteLengthOf, type OutboundScheduler, type OutboundSocket } from '../src/outbound/outbound-scheduler.ts'
import { createTask } from '../src/store/tasks.ts'
import { adminWorkspace } from './seed.ts'
import { clock } from './p2-trace.ts'

type Traced = unknown[]
let traced: Traced[] = []

/** Records the newest connection's writes, probes and pongs (BENCH_P2_TRACE). */
function trace(scheduler: OutboundScheduler): void {
  const socket = (scheduler as unknown as { socket: OutboundSocket }).socket
  const windowOf = () => [scheduler.window?.inFlight, scheduler.window?.size]
  const send = socket.send.bind(socket)
  socket.send = (frame, done) => {
    const head = /^\{"id":"(q\d+)"/.exec(typeof frame === "string" ? frame.slice(0, 20) : "")
    traced.push([clock(), head ? 'c' : 'w', byteLengthOf(frame), ...windowOf(), head?.[1]])
    send(frame, done)
  }
  const ping = socket.ping.bind(socket)
  socket.ping = (payload) => (traced.push([clock(), 'p', 0, ...windowOf()]), ping(payload))
  const acknowledge = scheduler.acknowledge.bind(scheduler)
  scheduler.acknowledge = (payload) => (acknowledge(payload), traced.push([clock(), 'a', 0, ...windowOf()]))
}

export const handlers = {
  /** A workspace of the admin with one task; the scenario starts its sessions over GraphQL. */
  seed: async (server: RunningServer) => {
    const workspace = await adminWorkspace(server.store, 'p2')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'control lane' })
    return { taskId: task.id }
  },
  /** Every open connection's send window (absent in FIFO mode). */
  windows: (server: RunningServer) => server.gateway.connections().map((c) => c.scheduler.window ?? null),
  traceStart: (server: RunningServer) => {
    traced = []
    const newest = server.gateway.connections().at(-1)
    if (newest) trace(newest.scheduler)
    return newest !== undefined
  },
  traceTake: () => traced,
}

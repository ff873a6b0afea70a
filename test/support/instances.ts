// Several real server processes on one PostgreSQL database and one Redis, as behind a load
// balancer: each its own process group (server and its agents), so a test can kill -9, stop
// or count exactly one instance's processes.
import { execFileSync, type ChildProcess } from 'node:child_process'
import { freePort } from './postgres-cluster.ts'
import { spawnServer, type ServerProcess, type StartupTimes } from './process.ts'
import { scrapeMetric } from './metrics.ts'

export const INSTANCE_ADMIN_TOKEN = 'instances-admin-token-0123456789'

export interface Instance {
  name: string
  port: number
  url: string
  wsUrl: string
  server: ServerProcess
  /** How long this start took to bind its port and to turn ready (process.ts). */
  startup: StartupTimes
  /** Mock agent processes this instance runs (its child processes). */
  agents(): number
  /** kill -9 of the whole process group: the server and its agents die at once. */
  kill(): void
  signal(signal: NodeJS.Signals): void
}

export async function startInstance(name: string, env: Record<string, string>, children: ChildProcess[]): Promise<Instance> {
  const port = await freePort()
  const server = spawnServer(['--import', 'tsx', 'src/main.ts'], { ADMIN_TOKEN: INSTANCE_ADMIN_TOKEN, ...env, PORT: String(port) }, children, {
    detached: true,
  })
  const startup = await server.ready(port)
  const pid = server.child.pid!
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}/graphql`,
    wsUrl: `ws://127.0.0.1:${port}/graphql`,
    server,
    startup,
    agents: () => {
      try {
        return execFileSync('pgrep', ['-P', String(pid), '-f', 'mock-agent'], { encoding: 'utf8' }).trim().split('\n').length
      } catch {
        return 0 // pgrep exits 1 when nothing matches
      }
    },
    kill: () => process.kill(-pid, 'SIGKILL'),
    signal: (signal) => process.kill(pid, signal),
  }
}

export function killAll(children: ChildProcess[]): void {
  for (const child of children.splice(0))
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // The group is gone already.
    }
}

/** GraphQL over HTTP as the admin; errors are returned, not thrown. */
export async function gql<T>(instance: Instance, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(instance.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${INSTANCE_ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  })
  return (await response.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] }
}

/** Like gql, but the data or a thrown error naming the errors. */
export async function gqlOk<T>(instance: Instance, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const body = await gql<T>(instance, query, variables)
  if (body.errors?.length || !body.data) throw new Error(`${instance.name}: ${JSON.stringify(body.errors)}`)
  return body.data
}

/** The sum of a metric's samples on this instance whose labels include `labels`. */
export const metricValue = (instance: Instance, name: string, labels: Record<string, string> = {}) =>
  scrapeMetric(`http://127.0.0.1:${instance.port}`, name, labels)

// P14's measured server (bench/p14-summary-change.ts): a bench server process with one subscriber
// on the workspace feed (the SDK's ClientWorkspaceEvents), the mock agent's session, and the
// trigger windows, each the server's CPU from just before its trigger until the subscriber has the
// change and the projector is idle.
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { ClientAddMessageDocument, ClientRespondToPermissionDocument, ClientStartSessionDocument, ClientWorkspaceEventsDocument } from '../packages/client/src/generated/graphql.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import type { SummaryFixture } from './p14-handlers.ts'
import { sdkHttp } from './sdk-operations.ts'
import { countingClient, httpGql, sleep } from './support.ts'

/** The agent's pause before raising the permission and before ending its turn. */
export const AGENT_PAUSE_MS = Number(process.env.BENCH_P14_AGENT_PAUSE_MS ?? 800)
/** How long before the agent's trigger its window opens. */
export const LEAD_MS = 100
const TIMEOUT_MS = 15_000

type Summary = { revision: number; pendingAction: string | null; foregroundActivity: string | null; primarySession: { id: string } | null }
type Frame = { type: string; taskId?: string; summary?: Summary }
export type TriggerId = 'raise' | 'answer' | 'turn-end' | 'task-edit'
const UPDATE_TASK = 'mutation BenchUpdateTask($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id title updatedAt } }'

export interface Window {
  cpuUs: number
  ms: number
  revisions: number
  frames: number
  statements: string[]
}

/** One server with its subscriber: measured windows, each a trigger's. */
export class Target {
  readonly frames: Frame[] = []
  readonly windows = new Map<TriggerId, Window[]>()
  readonly idle: Window[] = []
  sessionId = ''
  /** Turn ends that came before their window opened (not measured). */
  skipped = 0
  #edits = 0
  constructor(
    readonly server: BenchServer,
    readonly fixture: SummaryFixture,
    readonly client: Client,
    readonly record: boolean,
  ) {
    client.subscribe(
      { query: print(ClientWorkspaceEventsDocument), variables: { workspaceId: fixture.workspaceId } },
      {
        next: (r) => {
          const e = (r.data as { workspaceEvents: { __typename: string; taskId?: string; summary?: Summary } }).workspaceEvents
          this.frames.push({ type: e.__typename, taskId: e.taskId, summary: e.summary })
          if (process.env.BENCH_P14_DEBUG) console.info(`  ${performance.now().toFixed(0)} ${e.__typename} ${JSON.stringify(e.summary ? { r: e.summary.revision, p: e.summary.pendingAction, f: e.summary.foregroundActivity } : '')}`)
        },
        error: (e) => console.error('P14 subscriber:', e),
        complete: () => undefined,
      },
    )
  }

  async until(what: string, test: (frames: Frame[]) => boolean, from: number): Promise<void> {
    const deadline = performance.now() + TIMEOUT_MS
    while (!test(this.frames.slice(from))) {
      if (performance.now() > deadline) throw new Error(`P14: ${what} not within ${TIMEOUT_MS / 1000} s`)
      await sleep(2)
    }
  }

  /** The last summary the subscriber got. */
  get summary(): Summary | undefined {
    return [...this.frames].reverse().find((f) => f.summary)?.summary
  }

  /**
   * One measured window: CPU from just before `trigger` until `done` holds of the frames that came
   * after it and the projector is idle. `at` (wall clock, performance.now) opens it no earlier.
   */
  async window(id: TriggerId | 'idle', trigger: () => Promise<unknown>, done: (frames: Frame[]) => boolean, keep = true): Promise<void> {
    if (this.record) await this.server.call('record')
    const from = this.frames.length
    const started = performance.now()
    const cpu = await this.server.call<number>('cpu')
    await trigger()
    await this.until(id, done, from)
    await this.server.call('idle')
    const cpuUs = (await this.server.call<number>('cpu')) - cpu
    const ms = performance.now() - started
    const statements = this.record ? await this.server.call<string[]>('recorded') : []
    const after = this.frames.slice(from)
    const w = { cpuUs, ms, frames: after.length, revisions: after.filter((f) => f.type === 'TaskStatusSummaryUpdated').length, statements }
    if (!keep) return
    if (id === 'idle') this.idle.push(w)
    else this.windows.set(id, [...(this.windows.get(id) ?? []), w])
  }

  async settle(): Promise<void> {
    await this.server.call('idle')
    await sleep(50)
    await this.server.call('idle')
  }

  async taskEdit(keep: boolean): Promise<void> {
    const edit = () => httpGql(this.server.url, BENCH_ADMIN_TOKEN, UPDATE_TASK, { id: this.fixture.taskId, input: { title: `p14 edit ${++this.#edits}` } })
    const revision = this.summary?.revision ?? 0
    await this.window('task-edit', edit, (fs) => fs.some((f) => f.type === 'TaskUpserted') && fs.some((f) => (f.summary?.revision ?? 0) > revision), keep)
    await this.settle()
  }

  async prompt(steps: unknown[]): Promise<number> {
    await sdkHttp(this.server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, {
      input: { clientMessageId: `p14-${crypto.randomUUID()}`, content: JSON.stringify({ script: steps }), sessionId: this.sessionId, taskId: this.fixture.taskId },
    })
    return performance.now()
  }

  /** A prompt whose agent raises a permission, is answered, and ends its turn: three windows. */
  async permissionTurn(keep: boolean): Promise<void> {
    const sent = await this.prompt([{ sleep: AGENT_PAUSE_MS }, { permission: { title: 'Run npm test', toolCall: { kind: 'execute', rawInput: { command: 'npm test' } } } }, { sleep: AGENT_PAUSE_MS }])
    await this.settle()
    if (this.summary?.pendingAction === 'PERMISSION') throw new Error('P14: the permission came before its window opened (a loaded machine: raise AGENT_PAUSE_MS)')
    await sleep(sent + AGENT_PAUSE_MS - LEAD_MS - performance.now())
    await this.window('raise', async () => undefined, (fs) => fs.some((f) => f.summary?.pendingAction === 'PERMISSION'), keep)
    await this.settle()
    const pendingId = await this.server.call<string | null>('pendingId', { sessionId: this.sessionId })
    if (!pendingId) throw new Error('P14: no open permission request')
    let answered = 0
    await this.window(
      'answer',
      async () => {
        await sdkHttp(this.server.url, BENCH_ADMIN_TOKEN, ClientRespondToPermissionDocument, { sessionId: this.sessionId, pendingId, optionId: 'allow' })
        answered = performance.now()
      },
      (fs) => fs.some((f) => f.summary && f.summary.pendingAction === null),
      keep,
    )
    await this.settle()
    // On a loaded machine the answer's window and settling can outlast the agent's pause: that
    // round's turn end is not measured (counted in the notes) rather than measured late.
    if (this.summary?.foregroundActivity === null) {
      this.skipped++
      return
    }
    await sleep(answered + AGENT_PAUSE_MS - LEAD_MS - performance.now())
    await this.window('turn-end', async () => undefined, (fs) => fs.some((f) => f.summary && f.summary.foregroundActivity === null), keep)
    await this.settle()
  }

  /** The subscription is live once it delivers a change (it registers after the socket's handshake). */
  async live(): Promise<void> {
    for (let attempt = 0; !this.frames.some((f) => f.type === 'TaskUpserted'); attempt++) {
      if (attempt === 50) throw new Error('P14: the subscriber never went live')
      await httpGql(this.server.url, BENCH_ADMIN_TOKEN, UPDATE_TASK, { id: this.fixture.taskId, input: { title: `p14 edit ${++this.#edits}` } })
      await sleep(200)
    }
  }

  /** The mock agent's session, then each trigger once, unmeasured (JIT, prepared statements, the agent's start). */
  async begin(): Promise<void> {
    const session = await sdkHttp(this.server.url, BENCH_ADMIN_TOKEN, ClientStartSessionDocument, { input: { taskId: this.fixture.taskId, agentProfile: 'mock' } })
    this.sessionId = session.startSession.id
    await this.until('session ready', () => this.summary?.primarySession != null && this.summary.foregroundActivity === null, 0)
    await this.settle()
    await this.permissionTurn(false)
    await this.taskEdit(false)
  }

  /** Idle windows as long as the triggers' median, inside a turn whose agent sleeps throughout. */
  async idleWindows(count: number, ms: number): Promise<void> {
    await this.prompt([{ sleep: count * (ms + 200) + 1000 }])
    await this.until('turn started', () => this.summary?.foregroundActivity === 'GENERATING', 0)
    await this.settle()
    for (let i = 0; i < count; i++) await this.window('idle', () => sleep(ms), () => true)
    await this.until('idle turn ended', () => this.summary?.foregroundActivity === null, 0)
    await this.settle()
  }
}

export async function startTarget(databaseUrl: string | undefined, record: boolean): Promise<Target> {
  const server = await startBenchServer({
    // The lease heartbeat would add statements and CPU at random to the windows; it is no part of a summary change.
    env: { ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), SESSION_LEASE_MS: '3600000' },
    handlers: new URL('./p14-handlers.ts', import.meta.url),
    start: { countStatements: record, skipMigrations: databaseUrl !== undefined },
  })
  const fixture = await server.call<SummaryFixture>('seed')
  const { client } = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  const target = new Target(server, fixture, client, record)
  try {
    await target.live()
    await target.begin()
  } catch (error) {
    void client.dispose()
    await server.stop()
    throw error
  }
  return target
}

export async function rounds(target: Target, count: number): Promise<void> {
  for (let r = 0; r < count; r++) {
    await target.permissionTurn(true)
    await target.taskEdit(true)
  }
}

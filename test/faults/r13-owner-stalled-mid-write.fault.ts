// R13 (issue 44, item 1; MAPPING "Outages and stalls"): the owner of four streaming sessions is
// stopped (SIGSTOP) while one of its PostgreSQL transactions has written to a session's rows
// (Session, Turn or Message) and is still open. A stopped process neither commits nor rolls back,
// so before, the transaction kept its row locks until the owner continued: the survivor's
// takeover waited on them (issue 44: in 0 of 3 runs was any session taken over within 2.7 × the
// lease, and 9 of 12 prompts sent through the survivor got no answer within 30 s; here, run 1: not
// one session within 25 s, the survivor's UPDATE "Session" waiting on the owner's backend, idle in
// transaction). Each instance's connections now run with PostgreSQL time limits that end such a
// transaction well inside the lease (src/store/postgres-limits.ts).
// Three runs, each asserting: every session taken over within lease + 5 s of the stop; every
// prompt sent through the survivor right after the stop answered by an agent within lease + 10 s;
// never two agent processes for one session (census of this test's sessions only); after SIGCONT
// the stale owner writes nothing and runs no agent.
import type { ChildProcess } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { gqlOk, killAll, startInstance, type Instance } from '../support/instances.ts'
import { addMessage, agentSaid, newTask, script, session, startSession, type SessionShape } from '../support/instance-sessions.ts'
import { startAgentCensus } from '../support/agent-census.ts'
import { startRedisServer, type RedisServer } from '../support/redis-server.ts'
import { eventually } from '../support/wait.ts'

const LEASE_MS = 10_000
const RUNS = 3
const SESSIONS = 4
/** How long the test looks for a moment when the owner holds a written, open transaction. */
const CATCH_MS = 30_000
/**
 * A turn that streams text and runs a tool call every few tens of ms, as a coding agent does: each
 * tool call is a transaction on the session's rows (the message inserted under the session's row
 * lock, the turn marked), so the owner has one open most of the time. Far longer than a run.
 */
const STREAM = script(...Array.from({ length: 1500 }, () => [{ say: 'word word word word ', chunks: 4, ms: 5 }, { tool: { title: 't', ms: 10 } }]).flat())
/** The application_name each instance's connections carry, so pg_stat_activity tells them apart. */
const APP = { owner: 'r13-owner', survivor: 'r13-survivor' } as const

interface Backend {
  pid: number
  state: string
  wait: string | null
  /** Seconds since the transaction began. */
  age: number
  query: string
  /** The session tables this transaction has written to (its row locks there are held until it ends). */
  tables: string[]
}

/** What the stopped owner holds, as pg_stat_activity shows it. */
const holding = (held: Backend[]) => held.map((b) => `[${b.state}${b.wait ? ` ${b.wait}` : ''}, open ${b.age} s, wrote ${b.tables.join('+')}: ${b.query}]`).join(' ')

describe('R13: the owner stopped (SIGSTOP) mid-write while four sessions stream (postgres)', () => {
  const children: ChildProcess[] = []
  let redis: RedisServer
  let owner: Instance
  let survivor: Instance
  let admin: pg.Client

  beforeAll(async () => {
    redis = await startRedisServer()
    const databaseUrl = await migratedDatabase('postgres')
    const env = (app: string) => ({ DATABASE_URL: `${databaseUrl}?application_name=${app}`, REDIS_URL: redis.url, SESSION_LEASE_MS: String(LEASE_MS), LOG_LEVEL: 'warn' })
    ;[owner, survivor] = await Promise.all([startInstance('owner', env(APP.owner), children), startInstance('survivor', env(APP.survivor), children)])
    admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
  })
  afterAll(async () => {
    // A failed run shows what the servers said last (their logs never carry message content).
    for (const instance of [owner, survivor]) {
      const exited = instance?.server.child.exitCode ?? instance?.server.child.signalCode
      if (exited !== null && exited !== undefined) console.info(`R13 ${instance.name} exited (${exited}): ${instance.server.output().stderr.slice(-3000)}${instance.server.output().stdout.slice(-3000)}`)
    }
    killAll(children)
    await admin?.end()
    await redis?.stop()
  })

  /** The owner's transactions that have written to a session's rows and are still open. */
  async function openWrites(): Promise<Backend[]> {
    const { rows } = await admin.query<Backend>(
      `SELECT a.pid, a.state, a.wait_event_type || '/' || a.wait_event AS wait,
              round(extract(epoch FROM clock_timestamp() - a.xact_start)::numeric, 2)::float AS age,
              left(regexp_replace(a.query, '\\s+', ' ', 'g'), 80) AS query,
              array_agg(DISTINCT c.relname::text ORDER BY c.relname::text) AS tables
         FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid JOIN pg_class c ON c.oid = l.relation
        WHERE a.application_name = $1 AND a.backend_xid IS NOT NULL AND l.mode = 'RowExclusiveLock' AND c.relname IN ('Session', 'Turn', 'Message')
        GROUP BY a.pid, a.state, a.wait_event_type, a.wait_event, a.xact_start, a.query`,
      [APP.owner],
    )
    return rows
  }

  /** Survivor backends waiting on a lock, with who holds it: what a takeover stuck behind the stall shows. */
  async function waitsOnOwner(): Promise<string[]> {
    const { rows } = await admin.query<{ query: string; blockers: string }>(
      `SELECT left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60) AS query,
              (SELECT string_agg(b.application_name || ' ' || b.state, ', ') FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))) AS blockers
         FROM pg_stat_activity a WHERE a.application_name = $1 AND a.wait_event_type = 'Lock'`,
      [APP.survivor],
    )
    return rows.map((r) => `${r.query} ← ${r.blockers}`)
  }

  /**
   * Stops the owner at a moment one of its transactions has written to a session's rows and is
   * still open (SIGSTOP, then a look at what the stopped process holds: a statement in flight
   * finishes meanwhile). Nothing held: it continues and the next moment is tried.
   */
  async function stopMidWrite(): Promise<{ stoppedAt: number; held: Backend[]; attempts: number }> {
    const deadline = Date.now() + CATCH_MS
    for (let attempts = 1; Date.now() < deadline; attempts++) {
      if ((await openWrites()).length === 0) continue
      owner.signal('SIGSTOP')
      const stoppedAt = Date.now()
      await new Promise((r) => setTimeout(r, 50))
      const held = await openWrites()
      if (held.length > 0) return { stoppedAt, held, attempts }
      owner.signal('SIGCONT')
    }
    throw new Error(`no open write transaction of the owner caught within ${CATCH_MS} ms`)
  }

  it('takes every session over within lease + 5 s, answers every prompt within lease + 10 s; never two agents, no stale write', { timeout: 420_000 }, async () => {
    const figures: string[] = []
    // Each figure as it is measured (a failing run still shows the runs before it), and all at the end.
    const report = (line: string) => {
      figures.push(line)
      console.info(`R13 ${line}`)
    }
    for (let run = 1; run <= RUNS; run++) {
      const taskIds = await Promise.all(Array.from({ length: SESSIONS }, () => newTask(survivor)))
      const sessionIds = await Promise.all(taskIds.map((t) => startSession(owner, t, STREAM)))
      const sessions = () => Promise.all(sessionIds.map((id) => session(survivor, id)))
      const streaming = (s: SessionShape) => s.state === 'RUNNING' && s.messages.filter((m) => m.kind === 'TOOL_CALL').length >= 3
      await eventually(async () => (await sessions()).every(streaming), 30_000)
      const census = startAgentCensus(sessionIds, 100)

      const { stoppedAt, held, attempts } = await stopMidWrite()
      let atContinue: SessionShape[]
      try {
        // Right after the stop, a prompt per session through the survivor: forwarded to the stopped
        // owner, then carried out by the survivor once the owner's lease expired and it took over.
        const answers = sessionIds.map(async (id, i) => {
          const sentAt = Date.now()
          const sent = await addMessage(survivor, taskIds[i]!, id, script({ say: `answered ${run}.${i}` }))
          if (sent.errors) return `prompt ${run}.${i} refused: ${JSON.stringify(sent.errors)}`
          await eventually(async () => agentSaid(await session(survivor, id)).includes(`answered ${run}.${i}`), LEASE_MS + 15_000)
          return Date.now() - sentAt
        }).map((answer) => answer.catch((error: unknown) => `no answer: ${String(error)}`))
        const waits = new Set<string>()
        const watching = setInterval(() => void waitsOnOwner().then((w) => w.forEach((x) => waits.add(x)), () => undefined), 500)
        let takenOverMs: number[]
        try {
          // The takeover closes the owner's open turn as interrupted: its completion time is the takeover's.
          const cut = await eventually(async () => {
            const all = await sessions()
            const turns = all.map((s) => s.turns.find((t) => t.interrupted && t.completedAt !== null))
            return turns.every((t) => t !== undefined) && turns
          }, LEASE_MS + 15_000).catch((error: unknown) => {
            throw new Error(
              `run ${run}: not every session was taken over (${String(error)}); the owner was stopped holding ${holding(held)}; the survivor waited on: ${[...waits].join(' | ') || 'nothing'}`,
            )
          })
          takenOverMs = cut.map((t) => Date.parse(t!.completedAt!) - stoppedAt)
        } finally {
          clearInterval(watching)
        }
        const answerMs = await Promise.all(answers)
        report(
          `run ${run}: stopped after ${attempts} look(s) holding ${holding(held)}; ` +
            `taken over at ${takenOverMs.join(', ')} ms; prompts answered after ${answerMs.join(', ')} ms; the survivor waited on: ${[...waits].join(' | ') || 'nothing'}`,
        )
        for (const ms of takenOverMs) expect(ms, `run ${run}: takeover after the stop`).toBeLessThanOrEqual(LEASE_MS + 5_000)
        for (const ms of answerMs) expect(typeof ms === 'number' && ms <= LEASE_MS + 10_000, `run ${run}: answer after the prompt: ${ms}`).toBe(true)
        expect(survivor.agents()).toBeGreaterThanOrEqual(SESSIONS)
      } finally {
        atContinue = await sessions()
        owner.signal('SIGCONT')
      }

      // The resumed owner answers again, has had two heartbeats (a sixth of the lease each) to find
      // its lease lost and take it anew, and runs no agent. (A keep-alive connection of the test's
      // from before the stop may be reset as the owner's timers catch up.)
      const answering = () => gqlOk<{ __typename: string }>(owner, '{ __typename }').then((d) => d.__typename === 'Query', () => false)
      await eventually(answering, 20_000)
      await new Promise((r) => setTimeout(r, LEASE_MS / 3 + 1000))
      expect(owner.agents()).toBe(0)

      // Nothing of the stale owner landed: the same messages, the ones the takeover closed unchanged.
      const afterContinue = await sessions()
      for (const [i, before] of atContinue.entries()) {
        const after = afterContinue[i]!
        expect(after.messages.map((m) => m.id), `run ${run}: messages of session ${i}`).toEqual(before.messages.map((m) => m.id))
        for (const m of before.messages.filter((m) => m.status === 'INTERRUPTED' || m.kind === 'TOOL_CALL'))
          expect(after.messages.find((n) => n.id === m.id), m.id).toMatchObject({ status: m.status, content: m.content })
        expect(after.turns.map((t) => [t.id, t.completedAt])).toEqual(before.turns.map((t) => [t.id, t.completedAt]))
      }

      const counted = census.stop()
      report(`run ${run} census: ${counted.samples} samples, most agents at once per session ${[...counted.maxPerSession.values()].join(', ')}, doubles ${counted.doubles.length}`)
      expect(counted.doubles).toEqual([])
      await Promise.all(sessionIds.map((id) => gqlOk(survivor, 'mutation ($id: ID!) { stopSession(id: $id) { state } }', { id })))
    }
    console.info(`R13 (SESSION_LEASE_MS ${LEASE_MS}):\n${figures.join('\n')}`)
  })
})

// Flat reads: list and boot reads trust the stored summary rows and reconcile only pendingAction
// (from the open-request index range); rows missing or derived by older rules are rebuilt.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { BootWithSummariesDocument, CreateWorkspaceDocument, TasksWithSummariesDocument } from '../generated/graphql.ts'
import { createTask } from '../../src/store/tasks.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { completeTurn, startTurn } from '../../src/store/turns.ts'
import { createSession } from '../../src/store/sessions.ts'
import { SUMMARY_DERIVATION_VERSION } from '../../src/summary/derive.ts'

const MINUTE = 60_000

describe.each(PROVIDERS)('flat summary reads (%s)', (provider) => {
  let server: TestServer
  let token: string
  const statements: string[] = []

  beforeAll(async () => {
    server = await startTestServer(provider, { onQuery: (sql) => statements.push(sql) })
    ;({ token } = await userWithWorkspace(server, 'reader'))
  })
  afterAll(() => server?.close())

  const db = () => server.store.db

  async function newWorkspace(name: string) {
    return (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name })).createWorkspace.id
  }

  /**
   * The statements one warm read sends, sorted: reads issued in parallel may log in any order.
   * Warm: the same read just before, so the caller and membership caches (5 s) hold in every
   * measurement whatever time the seeding between two of them took on a loaded machine.
   */
  async function statementsOf(run: () => Promise<unknown>) {
    await run()
    await server.projector.idle()
    statements.length = 0
    await run()
    await server.projector.idle()
    return [...statements].sort()
  }

  async function summaryOf(workspaceId: string, taskId: string) {
    const { tasks } = await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId, first: 500 })
    const summary = tasks.edges.find((e) => e.node.id === taskId)?.node.statusSummary
    if (!summary) throw new Error(`no summary for ${taskId}`)
    return summary
  }

  const storedRow = (taskId: string) => db().taskStatusSummary.findUniqueOrThrow({ where: { taskId } })

  /** A task with one session in `state` and one turn (authoritative: dispatched), settled. */
  async function taskWithTurn(workspaceId: string, state: 'RUNNING' | 'WAITING_FOR_INPUT' | 'IDLE', title = 't') {
    const task = await createTask(server.store, { workspaceId, title })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state })
    const turn = await startTurn(server.store, { sessionId: session.id })
    await server.projector.idle()
    return { taskId: task.id, sessionId: session.id, turnId: turn.id }
  }

  /** An open permission request written straight into the table: no source event, so no projection runs. */
  function insertPendingRequest(taskId: string, sessionId: string, turnId: string) {
    return db().message.create({
      data: {
        id: randomUUID(),
        sessionId,
        taskId,
        turnId,
        author: 'AGENT',
        kind: 'PERMISSION_REQUEST',
        content: '?',
        status: 'PENDING',
        pendingId: randomUUID(),
      },
    })
  }

  it('tasks and boot with every summary send the same statements after 3,000 messages of history, none grouping or scanning resolved messages', async () => {
    const workspaceId = await newWorkspace('history')
    const sessions: { taskId: string; sessionId: string }[] = []
    for (let i = 0; i < 20; i++) {
      const pending = i % 4 === 0
      const t = await taskWithTurn(workspaceId, pending ? 'RUNNING' : 'IDLE', `h${i}`)
      sessions.push(t)
      // Some open requests, so the pending reconciliation runs its session and turn reads too.
      if (pending)
        await insertMessage(server.store, {
          id: randomUUID(),
          sessionId: t.sessionId,
          turnId: t.turnId,
          author: 'AGENT',
          kind: 'PERMISSION_REQUEST',
          content: '?',
          status: 'PENDING',
          pendingId: `p-${i}`,
        })
      else await completeTurn(server.store, t.turnId)
    }
    const readTasks = async () => {
      const { tasks } = await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId, first: 500 })
      expect(tasks.edges).toHaveLength(20)
      expect(tasks.edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION')).toHaveLength(5)
      return tasks.edges.map((e) => [e.node.id, e.node.statusSummary?.revision])
    }
    const readBoot = () => ok(server.graphqlUrl, token, BootWithSummariesDocument, { workspaceId })
    await server.projector.idle()
    const revisionsBefore = await readTasks()
    const tasksBefore = await statementsOf(readTasks)
    const bootBefore = await statementsOf(readBoot)

    // Older, finished turns (so the open requests stay in each session's current turn) with
    // transcripts, resolved requests among them: history the read must not touch.
    const base = Date.now() - 24 * 60 * MINUTE
    const turns: { id: string; sessionId: string; taskId: string; startedAt: Date; completedAt: Date }[] = []
    sessions.forEach(({ taskId, sessionId }, s) => {
      for (let k = 0; k < 8; k++) {
        const startedAt = new Date(base + (s * 8 + k) * MINUTE)
        turns.push({ id: randomUUID(), sessionId, taskId, startedAt, completedAt: new Date(startedAt.getTime() + 30_000) })
      }
    })
    await db().turn.createMany({ data: turns })
    const kinds = ['MESSAGE', 'TOOL_CALL', 'REASONING', 'PERMISSION_REQUEST', 'CLARIFICATION'] as const
    const messages = Array.from({ length: 3000 }, (_, i) => {
      const turn = turns[i % turns.length]!
      const kind = kinds[i % kinds.length]!
      const request = kind === 'PERMISSION_REQUEST' || kind === 'CLARIFICATION'
      return {
        id: randomUUID(),
        sessionId: turn.sessionId,
        taskId: turn.taskId,
        turnId: turn.id,
        author: i % 7 === 0 ? 'USER' : 'AGENT',
        kind,
        content: `history ${i}`,
        status: request ? (kind === 'PERMISSION_REQUEST' ? 'APPROVED' : 'ANSWERED') : 'COMPLETED',
        pendingId: request ? `old-${i}` : null,
        createdAt: new Date(turn.startedAt.getTime() + (i % 30) * 1000),
      }
    })
    for (let i = 0; i < messages.length; i += 500) await db().message.createMany({ data: messages.slice(i, i + 500) })
    expect(await db().message.count({ where: { task: { workspaceId } } })).toBe(3005)

    const tasksAfter = await statementsOf(readTasks)
    const bootAfter = await statementsOf(readBoot)
    console.info(`flat read statements: tasks ${tasksBefore.length} → ${tasksAfter.length}, boot ${bootBefore.length} → ${bootAfter.length}`)
    expect(tasksAfter).toEqual(tasksBefore)
    expect(bootAfter).toEqual(bootBefore)
    // Stored rows are trusted: no revision moved, nothing was rebuilt.
    expect(await readTasks()).toEqual(revisionsBefore)

    // Quotes and schema prefixes differ by provider (`main`.`Message`, "public"."Message").
    const plain = [...tasksAfter, ...bootAfter].map((sql) => sql.replace(/[`"]/g, '').replace(/\b(main|public)\./g, ''))
    for (const sql of plain) expect(sql).not.toMatch(/GROUP BY/i)
    const messageReads = plain.filter((sql) => /\bFROM\s+Message\b/.test(sql))
    expect(messageReads.length).toBeGreaterThan(0)
    for (const sql of messageReads) {
      // By task only through the open-request range (for the page's ids, or one task's probe beside
      // its stored row); otherwise only the one-row probe of a recent turn.
      const openRange = /(\b\w+\.)?taskId (IN \([^)]*\)|= s\.taskId) AND (\w+\.)?status = /.test(sql)
      const turnProbe = /EXISTS \(SELECT 1 FROM Message m WHERE m\.turnId = t\.id\)/.test(sql) && !/m\.taskId/.test(sql)
      expect(openRange || turnProbe, sql).toBe(true)
    }
  })

  it('a permission request resolved straight in the database reads as not pending, with the next revision', async () => {
    const workspaceId = await newWorkspace('resolved')
    const { taskId, sessionId, turnId } = await taskWithTurn(workspaceId, 'RUNNING')
    const request = await insertMessage(server.store, {
      id: randomUUID(),
      sessionId,
      turnId,
      author: 'AGENT',
      kind: 'PERMISSION_REQUEST',
      content: '?',
      status: 'PENDING',
      pendingId: 'p1',
    })
    await server.projector.idle()
    const before = await summaryOf(workspaceId, taskId)
    expect(before.pendingAction).toBe('PERMISSION')

    await db().message.update({ where: { id: request.id }, data: { status: 'APPROVED' } })
    const after = await summaryOf(workspaceId, taskId)
    expect(after.pendingAction).toBeNull()
    expect(after.revision).toBe(before.revision + 1)
    expect((await storedRow(taskId)).revision).toBe(before.revision + 1)
    // Repaired once: the next read agrees with the row and writes nothing.
    expect((await summaryOf(workspaceId, taskId)).revision).toBe(before.revision + 1)
  })

  it('a pending request inserted straight in the current turn of a running session reads as PERMISSION', async () => {
    const workspaceId = await newWorkspace('inserted')
    const { taskId, sessionId, turnId } = await taskWithTurn(workspaceId, 'RUNNING')
    const before = await summaryOf(workspaceId, taskId)
    expect(before.pendingAction).toBeNull()

    await insertPendingRequest(taskId, sessionId, turnId)
    const after = await summaryOf(workspaceId, taskId)
    expect(after.pendingAction).toBe('PERMISSION')
    expect(after.revision).toBe(before.revision + 1)
  })

  it('a pending request in an older turn is superseded by the newer authoritative turn: not pending, no new revision', async () => {
    const workspaceId = await newWorkspace('superseded')
    const task = await createTask(server.store, { workspaceId, title: 'older turn' })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    const now = Date.now()
    const older = await startTurn(server.store, { sessionId: session.id, startedAt: new Date(now - 10 * MINUTE) })
    await startTurn(server.store, { sessionId: session.id, startedAt: new Date(now - MINUTE) })
    await server.projector.idle()
    const before = await summaryOf(workspaceId, task.id)

    await insertPendingRequest(task.id, session.id, older.id)
    const after = await summaryOf(workspaceId, task.id)
    expect(after.pendingAction).toBeNull()
    expect(after.revision).toBe(before.revision)
  })

  it.each([
    { name: 'an agent relaunch (lifecycle-only)', newest: { lifecycleOnly: true } },
    { name: 'an empty reservation', newest: { promptDispatchPending: true } },
  ])('a pending request whose session’s newest turn is $name still counts: the read looks past that turn', async ({ newest }) => {
    const workspaceId = await newWorkspace(`past ${newest.lifecycleOnly ? 'relaunch' : 'reservation'}`)
    const task = await createTask(server.store, { workspaceId, title: 'past the newest turn' })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    const now = Date.now()
    const asked = await startTurn(server.store, { sessionId: session.id, startedAt: new Date(now - 10 * MINUTE) })
    await startTurn(server.store, { sessionId: session.id, startedAt: new Date(now - MINUTE), ...newest })
    await server.projector.idle()
    const before = await summaryOf(workspaceId, task.id)
    expect(before.pendingAction).toBeNull()

    await insertPendingRequest(task.id, session.id, asked.id)
    const after = await summaryOf(workspaceId, task.id)
    expect(after.pendingAction).toBe('PERMISSION')
    expect(after.revision).toBe(before.revision + 1)
  })

  it('a pending request behind more queued prompts than the turn window still counts, on the read path and on projection', async () => {
    const workspaceId = await newWorkspace('behind queued prompts')
    const task = await createTask(server.store, { workspaceId, title: 'queued behind a permission' })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    const now = Date.now()
    const asked = await startTurn(server.store, { sessionId: session.id, startedAt: new Date(now - 10 * MINUTE) })
    await insertPendingRequest(task.id, session.id, asked.id)
    // Four prompts accepted behind the open turn, as store/prompts.ts stores them: more than the
    // window of newest turns the pending rules read (3), each with its user message.
    for (let i = 1; i <= 4; i++) {
      const at = new Date(now - (5 - i) * MINUTE)
      const queued = await db().turn.create({
        data: { sessionId: session.id, taskId: task.id, startedAt: at, queuedAt: at, promptDispatchPending: true },
      })
      await db().message.create({
        data: { id: randomUUID(), sessionId: session.id, taskId: task.id, turnId: queued.id, author: 'USER', kind: 'MESSAGE', content: `q${i}`, status: null },
      })
    }
    const read = await summaryOf(workspaceId, task.id)
    expect(read.pendingAction).toBe('PERMISSION')
    await server.projector.project(task.id)
    await server.projector.idle()
    const projected = JSON.parse((await storedRow(task.id)).payload) as { pendingAction: string | null; queuedPromptCount: number }
    expect(projected).toMatchObject({ pendingAction: 'PERMISSION', queuedPromptCount: 4 })
  })

  it('fields other than pendingAction that went stale are not re-derived on read (startup reconcileAll repairs them)', async () => {
    const workspaceId = await newWorkspace('stale')
    const { taskId, sessionId } = await taskWithTurn(workspaceId, 'WAITING_FOR_INPUT')
    const before = await summaryOf(workspaceId, taskId)
    expect(before.primarySession).toEqual({ id: sessionId, state: 'WAITING_FOR_INPUT' })
    expect(before.foregroundActivity).toBeNull()

    await db().session.update({ where: { id: sessionId }, data: { state: 'RUNNING' } })
    const read = await summaryOf(workspaceId, taskId)
    expect(read.primarySession?.state).toBe('WAITING_FOR_INPUT')
    expect(read.foregroundActivity).toBeNull()
    expect(read.revision).toBe(before.revision)

    await server.projector.reconcileAll()
    const repaired = await summaryOf(workspaceId, taskId)
    expect(repaired.primarySession).toEqual({ id: sessionId, state: 'RUNNING' })
    expect(repaired.foregroundActivity).toBe('GENERATING')
    expect(repaired.revision).toBe(before.revision + 1)
  })

  it('a row of an older derivation version is rebuilt on read; a current row with the same tampering is trusted', async () => {
    const workspaceId = await newWorkspace('versions')
    const old = await taskWithTurn(workspaceId, 'IDLE', 'old rules')
    const current = await taskWithTurn(workspaceId, 'IDLE', 'current rules')
    const oldBefore = await summaryOf(workspaceId, old.taskId)
    const currentBefore = await summaryOf(workspaceId, current.taskId)
    expect(oldBefore.foregroundActivity).toBeNull()
    const tamper = async (taskId: string, derivationVersion: number) => {
      const row = await storedRow(taskId)
      const payload = { ...JSON.parse(row.payload), foregroundActivity: 'GENERATING' }
      await db().taskStatusSummary.update({ where: { taskId }, data: { payload: JSON.stringify(payload), derivationVersion } })
    }
    await tamper(old.taskId, 0)
    await tamper(current.taskId, SUMMARY_DERIVATION_VERSION)

    const rebuilt = await summaryOf(workspaceId, old.taskId)
    expect(rebuilt.foregroundActivity).toBeNull()
    expect(rebuilt.revision).toBe(oldBefore.revision + 1)
    expect((await storedRow(old.taskId)).derivationVersion).toBe(SUMMARY_DERIVATION_VERSION)
    // Nothing the read path checks makes it doubt a current row.
    const trusted = await summaryOf(workspaceId, current.taskId)
    expect(trusted.foregroundActivity).toBe('GENERATING')
    expect(trusted.revision).toBe(currentBefore.revision)
  })

  it('a row of an older derivation version whose payload is still right only records the version: same revision', async () => {
    const workspaceId = await newWorkspace('same payload')
    const { taskId } = await taskWithTurn(workspaceId, 'RUNNING')
    const before = await summaryOf(workspaceId, taskId)
    const rowBefore = await storedRow(taskId)
    await db().taskStatusSummary.update({ where: { taskId }, data: { derivationVersion: 0 } })

    const read = await summaryOf(workspaceId, taskId)
    expect(read).toEqual(before)
    const rowAfter = await storedRow(taskId)
    expect(rowAfter.derivationVersion).toBe(SUMMARY_DERIVATION_VERSION)
    expect({ ...rowAfter, derivationVersion: 0 }).toEqual({ ...rowBefore, derivationVersion: 0 })
  })

  it('a missing row is created on read at revision 1', async () => {
    const workspaceId = await newWorkspace('missing')
    const { taskId } = await taskWithTurn(workspaceId, 'IDLE')
    await db().taskStatusSummary.delete({ where: { taskId } })
    expect((await summaryOf(workspaceId, taskId)).revision).toBe(1)
  })
})

// A server running real ACP agents it did not write (Claude Code, Codex: test/reference-agents),
// driven over GraphQL as the page drives it, with the helpers the real-agent tests share.
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import type { AgentProfile } from '../../src/config/config.ts'
import { expect } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { gitRepo } from '../support/git-repo.ts'
import { capturedLogger } from '../support/captured-logger.ts'
import { rebuildFromAppends } from '../support/append-rebuild.ts'
import {
  AddMessageDocument,
  AgentSessionDetailDocument,
  AgentStreamDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  RespondToPermissionDocument,
  ResumeSessionDocument,
  StartSessionDocument,
  StopSessionDocument,
  TaskStatusSummariesDocument,
  type AgentSessionDetailQuery,
} from '../generated/graphql.ts'

/** Real agents start in seconds on an idle machine, in tens of seconds on a loaded one. */
export const AGENT_DEADLINE_MS = 90_000

export type AgentSession = NonNullable<AgentSessionDetailQuery['session']>

export async function realAgentServer(profiles: Record<string, AgentProfile>) {
  const log = capturedLogger()
  const server: TestServer = await startTestServer('sqlite', { logger: log.logger, env: { AGENT_PROFILES: JSON.stringify(profiles) } })
  const token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
  const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'real agents' })).createWorkspace.id
  const repos: ReturnType<typeof gitRepo>[] = []
  const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))

  const detail = async (id: string): Promise<AgentSession> => (await gql(AgentSessionDetailDocument, { id, last: 1000 })).session!
  const harness = {
    server,
    token,
    log,
    gql,
    detail,
    /** A task whose repository is a real git checkout in a temp folder: the agent's working directory. */
    async newTask(files: Record<string, string> = { 'README.md': 'hello\n' }) {
      const repo = gitRepo(files)
      repos.push(repo)
      const taskId = (await gql(CreateTaskDocument, { input: { workspaceId, title: 't', repositories: [{ name: 'acme/app', localPath: repo.dir }] } }))
        .createTask.id
      return { taskId, repo }
    },
    async start(taskId: string, agentProfile: string) {
      return (await gql(StartSessionDocument, { input: { taskId, agentProfile } })).startSession
    },
    send(taskId: string, sessionId: string, content: string) {
      return gql(AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    },
    async summary(taskId: string) {
      await server.projector.idle()
      return (await gql(TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
    },
    /** The session once no turn is in flight and it waits for input (and `also` holds). */
    settled(sessionId: string, also: (s: AgentSession) => boolean = () => true) {
      return eventually(async () => {
        const s = await detail(sessionId)
        return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && also(s) && s
      }, AGENT_DEADLINE_MS)
    },
    /** The first message matching, as soon as it exists. */
    message(sessionId: string, match: (m: AgentSession['messages'][number]) => boolean) {
      return eventually(async () => (await detail(sessionId)).messages.find(match), AGENT_DEADLINE_MS)
    },
    /** The permission request the agent is waiting on. */
    pendingPermission(sessionId: string) {
      return harness.message(sessionId, (m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING')
    },
    answer(sessionId: string, pendingId: string, optionId: string) {
      return gql(RespondToPermissionDocument, { sessionId, pendingId, optionId })
    },
    /**
     * Stops the session, then resumes it while a subscriber follows it: the agent loads its session
     * and replays it, and nothing of the transcript may change (ids, content, status, order, version)
     * nor reach the subscriber. Returns the transcript.
     */
    async resumeChangesNothing(sessionId: string) {
      await gql(StopSessionDocument, { id: sessionId })
      const before = await detail(sessionId)
      const stream = await harness.follow(sessionId)
      const resumed = await gql(ResumeSessionDocument, { id: sessionId })
      expect(resumed.resumeSession.state).toBe('WAITING_FOR_INPUT')
      const after = await harness.settled(sessionId)
      const shape = (s: AgentSession) => s.messages.map((m) => ({ id: m.id, kind: m.kind, content: m.content, status: m.status, version: m.version }))
      expect(shape(after)).toEqual(shape(before))
      expect(after.messages.filter((m) => m.status === 'IN_PROGRESS')).toEqual([])
      // It was a replay, dropped where it arrived, and not silence.
      expect(server.sessions.runtime(sessionId)!.agent.replayedUpdatesDropped).toBeGreaterThan(0)
      expect(stream.events.events.filter((e) => ['MessageAdded', 'MessageUpdated'].includes(e.data?.sessionEvents.__typename ?? ''))).toEqual([])
      await stream.close()
      return before
    },
    pidOf(sessionId: string) {
      return server.sessions.runtime(sessionId)?.agent.pid
    },
    /**
     * Follows the session's stream as the SDK does (MessageAdded whole, then appends) and rebuilds
     * each message's text from it; `gaps` counts updates that could not be applied.
     */
    async follow(sessionId: string) {
      const client = await wsClient(server.wsUrl, token)
      const events = wsSubscribe(client, AgentStreamDocument, { sessionId })
      await events.waitFor(1)
      return {
        events,
        rebuilt() {
          // An append to a message this subscriber never saw added is a gap too.
          const { texts, gaps, orphans } = rebuildFromAppends(events.events.map(({ data }) => ({ event: data?.sessionEvents })))
          return { texts, gaps: gaps + orphans }
        },
        async close() {
          events.dispose()
          await client.dispose()
        },
      }
    },
    async close() {
      await server.close()
      for (const repo of repos) rmSync(repo.dir, { recursive: true, force: true })
    },
  }
  return harness
}

export type RealAgentServer = Awaited<ReturnType<typeof realAgentServer>>

/** The session has an agent message with exactly this text. */
export const says = (text: string) => (s: AgentSession) => s.messages.some((m) => m.kind === 'MESSAGE' && m.author === 'AGENT' && m.content === text)

/** Waits on `probe` with the real agents' deadline. */
export const within = <T>(probe: () => Promise<T | undefined | false> | T | undefined | false) => eventually(probe, AGENT_DEADLINE_MS)

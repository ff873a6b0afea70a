// R15 (issue 44, item 7): a workspace membership removed behind the API's back (a database edit,
// a restore), so no `membership-removed` event ever tells the server. A real server process (one
// per database), a removed member following the workspace feed over graphql-ws and over
// server-sent events, the owner following it too; then the membership row is deleted with the
// database's own shell (sqlite3, psql). Before the fix the removed member's feeds went on
// delivering titles for as long as they stayed open.
// Asserted, for each of a few rounds: both of the member's feeds end with FORBIDDEN within the
// access cache's bound (5 s) plus a small margin after the edit; a title the owner changes
// afterwards reaches the owner's feed and neither of the member's; the member's socket and its
// subscription to a workspace it still belongs to go on. And what the re-checks cost: with many
// subscriptions over a few user/workspace pairs, the membership reads per bound of a quiet server
// (counted from its own SQL statements) are one per pair, not one per subscription.
import { execFile } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import type { DatabaseProvider } from '../../src/config/config.ts'
import { migratedDatabase, PROVIDERS } from '../support/databases.ts'
import { INSTANCE_ADMIN_TOKEN, killAll, startInstance, type Instance } from '../support/instances.ts'
import { startTestServer } from '../support/server.ts'
import { eventually } from '../support/wait.ts'
import {
  ADD_MEMBER,
  CREATE_TASK,
  codes,
  gqlHttp,
  gqlHttpOk,
  newUser,
  newWorkspace,
  socket,
  WORKSPACE_EVENTS,
  type GqlResult,
  type RecordedSubscription,
} from '../security/support.ts'

/** The access cache's bound (src/access/access-control.ts): how stale a membership may be trusted. */
const BOUND_MS = 5_000
/** A re-check's own read and the FORBIDDEN frame's way to the client, on a loaded two-core machine. */
const MARGIN_MS = 1_000
const ROUNDS = 3
/** The cost scenario: members (pairs), each with sockets of subscriptions and one SSE stream. */
const MEMBERS = 4
const SOCKETS_PER_MEMBER = 2
const SUBSCRIPTIONS_PER_SOCKET = 10
const COST_PERIODS = 3
const MEMBERSHIP_READ = /FROM [^ ]*[`"]Membership[`"] /
const UPDATE_TITLE = `mutation ($id: ID!, $title: String!) { updateTask(id: $id, input: { title: $title }) { id } }`

const run = promisify(execFile)

/** Deletes the membership row with the database's own shell: nothing the server sees but the row gone. */
async function deleteMembershipRow(provider: DatabaseProvider, databaseUrl: string, workspaceId: string, userId: string): Promise<void> {
  const sql = `DELETE FROM "Membership" WHERE "workspaceId" = '${workspaceId}' AND "userId" = '${userId}';`
  if (provider === 'sqlite') await run('sqlite3', ['-cmd', '.timeout 5000', databaseUrl.replace(/^file:/, ''), sql], { timeout: 10_000 })
  else await run('psql', [databaseUrl, '-v', 'ON_ERROR_STOP=1', '-c', sql], { timeout: 10_000 })
}

/** A subscription over HTTP (server-sent events): the payloads of its `next` events, and whether the stream closed. */
function sseSubscription(url: string, token: string, query: string, variables: Record<string, unknown>) {
  const payloads: GqlResult[] = []
  let closed = false
  const abort = new AbortController()
  const reading = (async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
      signal: abort.signal,
    })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let buffered = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffered += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, cut)
        buffered = buffered.slice(cut + 2)
        const lines = block.split('\n')
        if (!lines.includes('event: next')) continue
        const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n')
        payloads.push(JSON.parse(data) as GqlResult)
      }
    }
  })()
    .catch((error: unknown) => {
      if (!abort.signal.aborted) throw error
    })
    .finally(() => (closed = true))
  return {
    payloads,
    get closed() {
      return closed
    },
    /** The codes of the errors it delivered (the end of a forbidden stream is one such event). */
    errorCodes: () => payloads.flatMap((p) => codes(p)),
    async close() {
      abort.abort()
      await reading
    },
  }
}

const titlesOf = (events: GqlResult[]) =>
  events.flatMap((e) => {
    const event = e.data?.workspaceEvents as { __typename?: string; task?: { title?: string } } | undefined
    return event?.__typename === 'TaskUpserted' && event.task?.title ? [event.task.title] : []
  })

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

const children: ChildProcess[] = []
afterEach(() => killAll(children))

describe.each(PROVIDERS)('R15: a membership row deleted in the database while its feeds are open (%s)', (provider) => {
  it('ends the removed member’s graphql-ws and SSE feeds with FORBIDDEN within the bound, and nothing more reaches them', { timeout: 120_000 }, async () => {
    const databaseUrl = await migratedDatabase(provider)
    const server: Instance = await startInstance(`r15-${provider}`, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, children)
    const owner = await newUser(server.url, INSTANCE_ADMIN_TOKEN, 'r15-owner')
    const member = await newUser(server.url, INSTANCE_ADMIN_TOKEN, 'r15-member')
    const shared = await newWorkspace(server.url, owner.token, 'r15 shared')
    const own = await newWorkspace(server.url, member.token, 'r15 own')
    const createTask = async (token: string, ws: string, title: string) =>
      (await gqlHttpOk<{ createTask: { id: string } }>(server.url, token, CREATE_TASK, { ws, title })).createTask.id
    const ownerSocket = await socket(server.wsUrl, owner.token)
    const ownerFeed = ownerSocket.subscribe(WORKSPACE_EVENTS, { ws: shared })
    const endedAfter: number[] = []
    try {
      for (let round = 0; round < ROUNDS; round++) {
        await gqlHttpOk(server.url, owner.token, ADD_MEMBER, { ws: shared, user: member.id })
        const memberSocket = await socket(server.wsUrl, member.token)
        const sse = sseSubscription(server.url, member.token, WORKSPACE_EVENTS, { ws: shared })
        try {
          const wsFeed = memberSocket.subscribe(WORKSPACE_EVENTS, { ws: shared })
          const ownFeed: RecordedSubscription = memberSocket.subscribe(WORKSPACE_EVENTS, { ws: own })
          // Live on every feed: a task made now reaches each (subscribing is asynchronous; poll with new tasks).
          const taskId = await eventually(async () => {
            const id = await createTask(owner.token, shared, `before ${round}`)
            const seen = (titles: string[]) => titles.includes(`before ${round}`)
            return seen(titlesOf(wsFeed.events)) && seen(titlesOf(sse.payloads)) && seen(titlesOf(ownerFeed.events)) && id
          }, 10_000)
          await eventually(async () => {
            await createTask(member.token, own, `own ${round}`)
            return titlesOf(ownFeed.events).includes(`own ${round}`)
          }, 10_000)

          await deleteMembershipRow(provider, databaseUrl, shared, member.id)
          const editedAt = performance.now()
          const ends = await Promise.all([
            wsFeed.endedWith(BOUND_MS + MARGIN_MS).then((c) => ({ codes: c, ms: performance.now() - editedAt })),
            eventually(() => sse.errorCodes().length > 0 && sse.errorCodes(), BOUND_MS + MARGIN_MS).then((c) => ({ codes: c, ms: performance.now() - editedAt })),
          ])
          expect(ends.map((e) => e.codes)).toEqual([['FORBIDDEN'], ['FORBIDDEN']])
          for (const { ms } of ends) expect(ms).toBeLessThanOrEqual(BOUND_MS + MARGIN_MS)
          endedAfter.push(...ends.map((e) => Math.round(e.ms)))
          await eventually(() => sse.closed, 2_000) // the stream ends after its FORBIDDEN event

          // A title changed afterwards by a member: the owner's feed carries it, the removed member's do not.
          const [wsSeen, sseSeen] = [wsFeed.events.length, sse.payloads.length]
          await gqlHttpOk(server.url, owner.token, UPDATE_TITLE, { id: taskId, title: `after ${round}` })
          await eventually(() => titlesOf(ownerFeed.events).includes(`after ${round}`), 10_000)
          await eventually(async () => {
            await createTask(member.token, own, `own again ${round}`)
            return titlesOf(ownFeed.events).includes(`own again ${round}`)
          }, 10_000)
          expect([wsFeed.events.length, sse.payloads.length]).toEqual([wsSeen, sseSeen])
          expect([...titlesOf(wsFeed.events), ...titlesOf(sse.payloads)]).not.toContain(`after ${round}`)
          // The socket stays open, its other subscription goes on, and the removed membership refuses operations.
          expect(ownFeed.ended).toBeUndefined()
          expect(memberSocket.closeCode).toBeUndefined()
          expect(codes(await gqlHttp(server.url, member.token, CREATE_TASK, { ws: shared, title: 'refused' }))).toEqual(['FORBIDDEN'])
        } finally {
          await sse.close()
          await memberSocket.dispose()
        }
      }
    } finally {
      await ownerSocket.dispose()
    }
    const sorted = [...endedAfter].sort((a, b) => a - b)
    console.info(`R15 ${provider}: FORBIDDEN ${sorted.join(', ')} ms after the row was deleted (p50 ${percentile(sorted, 0.5)} ms, max ${sorted.at(-1)} ms; bound ${BOUND_MS} + ${MARGIN_MS} ms)`)
  })
})

describe.each(PROVIDERS)('R15: what the membership re-checks cost (%s)', (provider) => {
  it('reads each user/workspace pair once per bound, however many subscriptions rely on it', { timeout: 120_000 }, async () => {
    let membershipReads = 0
    const server = await startTestServer(provider, { onQuery: (sql) => void (MEMBERSHIP_READ.test(sql) && membershipReads++) })
    const sockets: Awaited<ReturnType<typeof socket>>[] = []
    const streams: ReturnType<typeof sseSubscription>[] = []
    try {
      const owner = await newUser(server.graphqlUrl, server.adminToken, 'r15-cost-owner')
      const ws = await newWorkspace(server.graphqlUrl, owner.token, 'r15 cost')
      const feeds: RecordedSubscription[] = []
      for (let m = 0; m < MEMBERS; m++) {
        const member = await newUser(server.graphqlUrl, server.adminToken, `r15-cost-${m}`)
        await gqlHttpOk(server.graphqlUrl, owner.token, ADD_MEMBER, { ws, user: member.id })
        for (let s = 0; s < SOCKETS_PER_MEMBER; s++) {
          const memberSocket = await socket(server.wsUrl, member.token)
          sockets.push(memberSocket)
          for (let i = 0; i < SUBSCRIPTIONS_PER_SOCKET; i++) feeds.push(memberSocket.subscribe(WORKSPACE_EVENTS, { ws }))
        }
        streams.push(sseSubscription(server.graphqlUrl, member.token, WORKSPACE_EVENTS, { ws }))
      }
      const subscriptions = feeds.length + streams.length
      // Every subscription is live (the server holds one entry per subscription and socket) before counting.
      await eventually(async () => {
        await gqlHttpOk(server.graphqlUrl, owner.token, CREATE_TASK, { ws, title: 'live' })
        return feeds.every((f) => titlesOf(f.events).includes('live')) && streams.every((s) => titlesOf(s.payloads).includes('live'))
      }, 20_000)
      expect(server.access.heldCount).toBe(subscriptions + sockets.length + streams.length)
      expect(server.access.rechecks.pairs).toBe(MEMBERS)
      // A quiet server from here on: no operation reads a membership; only the re-checks do.
      const before = membershipReads
      const began = performance.now()
      await new Promise((resolve) => setTimeout(resolve, COST_PERIODS * BOUND_MS))
      const reads = membershipReads - before
      const periods = (performance.now() - began) / BOUND_MS
      console.info(
        `R15 ${provider} cost: ${subscriptions} subscriptions (${MEMBERS} user/workspace pairs, ${sockets.length} sockets, ${streams.length} SSE streams): ` +
          `${reads} membership reads in ${periods.toFixed(2)} bounds = ${(reads / periods).toFixed(2)} per ${BOUND_MS} ms (${(reads / periods / MEMBERS).toFixed(2)} per pair)`,
      )
      expect(reads).toBeGreaterThanOrEqual(MEMBERS * (COST_PERIODS - 1))
      expect(reads).toBeLessThanOrEqual(MEMBERS * (COST_PERIODS + 1))
      for (const feed of feeds) expect(feed.ended).toBeUndefined()
      // Every entry and timer goes with the subscriptions (before the server stops, which would clear them anyway).
      await Promise.all(streams.splice(0).map((s) => s.close()))
      await Promise.all(sockets.splice(0).map((s) => s.dispose()))
      await eventually(() => server.access.heldCount === 0, 10_000)
      expect(server.access.rechecks).toEqual({ pairs: 0, armed: false })
    } finally {
      await Promise.all(streams.map((s) => s.close()))
      await Promise.all(sockets.map((s) => s.dispose()))
      await server.close()
    }
  })
})

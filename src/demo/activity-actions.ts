import { randomUUID } from 'node:crypto'
import { dropScript } from '../agents/mock/script-drop.ts'
import { graphql } from './graphql.ts'
import { ANSWERS, demoScript, type ScriptKind } from './scripts.ts'
import type { ActivityContext } from './activity-context.ts'
import { SHOWN_KINDS, type ShownKind, type Track } from './activity-rows.ts'

const PENDING = /* GraphQL */ `
  query DemoPending($id: ID!) { session(id: $id) { id messages(last: 50) { id kind status pendingId } } }
`
const ADD_MESSAGE = /* GraphQL */ `
  mutation DemoAddMessage($input: AddMessageInput!) { addMessage(input: $input) { replayed message { id } } }
`
const RESPOND = /* GraphQL */ `
  mutation DemoRespond($sessionId: ID!, $pendingId: ID!, $optionId: String!) {
    respondToPermission(sessionId: $sessionId, pendingId: $pendingId, optionId: $optionId) { id status }
  }
`
const ANSWER = /* GraphQL */ `
  mutation DemoAnswer($sessionId: ID!, $pendingId: ID!, $answer: String!) {
    answerClarification(sessionId: $sessionId, pendingId: $pendingId, answer: $answer) { id status }
  }
`
const DISMISS = /* GraphQL */ `
  mutation DemoDismiss($sessionId: ID!) { dismissSessionError(sessionId: $sessionId) { id } }
`
const REFRESH_GIT = /* GraphQL */ `
  mutation DemoRefreshGit($sessionId: ID!) { refreshSessionGit(sessionId: $sessionId) { id changedFiles } }
`

/** The row was acted on: it is left alone until it leaves its state (or for `waitMs`). */
function leaveAlone(track: Track, waitMs: number): void {
  track.sentFrom = track.state
  track.sentUntil = Date.now() + waitMs
}

/** Sends the row's session its next prompt, a sentence, having left the mock agent its script of `kind` for it. */
export const sendScript = (ctx: ActivityContext, track: Track, kind: ScriptKind) =>
  ctx.attempt(`script ${kind} to task ${track.task.id}`, async () => {
    const script = demoScript(kind, ctx.random, track.task.story, { first: track.scripts === 0 })
    dropScript(ctx.scriptDir, track.task.sessionId, script.prompt, script.steps)
    await graphql(ctx.call, ADD_MESSAGE, {
      input: { taskId: track.task.id, sessionId: track.task.sessionId, clientMessageId: `demo-${randomUUID()}`, content: script.prompt },
    })
    ctx.stats.scriptsSent++
    track.scripts++
    leaveAlone(track, Math.max(3_000, ctx.intervalMs * 3))
    track.expect = (SHOWN_KINDS as readonly string[]).includes(kind) ? (kind as ShownKind) : undefined
    track.wrote ||= script.writes
  })

/** Answers every open permission request (mostly allowed) and clarification of the row's session. */
export const answerPending = (ctx: ActivityContext, track: Track) =>
  ctx.attempt(`answering the requests of task ${track.task.id}`, async () => {
    const { session } = await graphql<{ session: { messages: { kind: string; status: string | null; pendingId: string | null }[] } | null }>(
      ctx.call,
      PENDING,
      { id: track.task.sessionId },
    )
    const open = (session?.messages ?? []).filter((m) => m.status === 'PENDING' && m.pendingId)
    for (const message of open) {
      if (ctx.stopped) return
      if (message.kind === 'PERMISSION_REQUEST') {
        await graphql(ctx.call, RESPOND, { sessionId: track.task.sessionId, pendingId: message.pendingId, optionId: ctx.random() < 0.8 ? 'allow' : 'reject' })
        ctx.stats.permissionsAnswered++
      } else if (message.kind === 'CLARIFICATION') {
        await graphql(ctx.call, ANSWER, { sessionId: track.task.sessionId, pendingId: message.pendingId, answer: ctx.pick(ANSWERS) ?? 'Yes.' })
        ctx.stats.clarificationsAnswered++
      }
    }
    // Let the turn go on before touching the row again.
    leaveAlone(track, Math.max(2_000, ctx.intervalMs * 2))
  })

export const refreshGit = (ctx: ActivityContext, track: Track) =>
  ctx.attempt(`refreshing Git of task ${track.task.id}`, async () => {
    track.wrote = false
    await graphql(ctx.call, REFRESH_GIT, { sessionId: track.task.sessionId })
    ctx.stats.gitRefreshes++
  })

export const dismissError = (ctx: ActivityContext, track: Track) =>
  ctx.attempt(`dismissing the error of task ${track.task.id}`, async () => {
    await graphql(ctx.call, DISMISS, { sessionId: track.task.sessionId })
    ctx.stats.errorsDismissed++
    leaveAlone(track, Math.max(2_000, ctx.intervalMs * 2))
  })

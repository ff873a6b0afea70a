// A Node program using the packed SDK as an outside project would (test/package/sdk-package.test.ts
// runs it): `node node-consumer.mjs <url> <token> <workspaceId> <taskId>`. It prints one JSON line
// per step: the rows it sees, then the same rows after a session started and after a message.
import { createTaskClient, sortTasks } from '@task-status/client'
import process from 'node:process'
import { clearTimeout, setTimeout } from 'node:timers'
import WebSocket from 'ws'

const [url, token, workspaceId, taskId] = process.argv.slice(2)
// Node 22 has a global WebSocket; Node 20 needs `ws` (browsers need nothing).
const client = createTaskClient({ url, token, webSocketImpl: WebSocket })

const print = (step, details) => process.stdout.write(`${JSON.stringify({ step, ...details })}\n`)
const rows = () => sortTasks(Object.values(client.summaries.getState().tasks)).map((row) => ({ title: row.title, revision: row.summary?.revision ?? null }))
const summaryOf = (state) => state.tasks[taskId]?.summary

/** Resolves once the store's state passes `test`; rejects after `ms` (this program never hangs). */
function until(store, test, ms = 20_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe()
      reject(new Error(`no such state within ${ms} ms`))
    }, ms)
    const check = (state) => {
      if (!test(state)) return
      clearTimeout(timer)
      unsubscribe()
      resolve(state)
    }
    const unsubscribe = store.subscribe(check)
    check(store.getState())
  })
}

try {
  await client.openWorkspace(workspaceId)
  print('booted', { rows: rows() })

  const before = summaryOf(client.summaries.getState()).revision
  const session = await client.startSession(taskId, 'hello')
  // The workspace feed moves the row: a new revision, the session waiting for the next prompt.
  await until(client.summaries, (s) => summaryOf(s).revision > before && summaryOf(s).primarySession?.state === 'WAITING_FOR_INPUT')
  print('answered', { rows: rows() })

  const answered = summaryOf(client.summaries.getState()).revision
  const sent = await client.sendMessage({ taskId, sessionId: session.id, content: 'count' })
  print('sent', { outcome: sent.outcome })
  await until(client.summaries, (s) => summaryOf(s).revision > answered)
  print('moved', { rows: rows() })
} finally {
  client.dispose()
}

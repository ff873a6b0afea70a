// The mock agent's memory of its sessions, so that `session/load` behaves as real agents' does:
// Claude Code and Codex replay a loaded session's history to the client as `session/update`
// notifications (the prompts as user_message_chunk, then what the agent said and did). Kept only
// when MOCK_AGENT_HISTORY names a folder (one JSON-lines file per ACP session); without it a load
// replays nothing, as before. MOCK_AGENT_REPLAY=after sends the replay after answering the load,
// as some agents do.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { SessionNotification } from '@agentclientprotocol/sdk'

export const HISTORY_DIR_ENV = 'MOCK_AGENT_HISTORY'
export const REPLAY_ENV = 'MOCK_AGENT_REPLAY'

const dir = process.env[HISTORY_DIR_ENV]
if (dir) mkdirSync(dir, { recursive: true })

/** ACP session ids are the mock's own UUIDs; anything else never names a file. */
const fileOf = (sessionId: string) => (dir && /^[0-9a-f-]{36}$/.test(sessionId) ? path.join(dir, `${sessionId}.jsonl`) : undefined)

export function remember(notification: SessionNotification): void {
  const file = fileOf(notification.sessionId)
  if (file) appendFileSync(file, `${JSON.stringify(notification)}\n`)
}

/** What a load replays: every recorded notification of the session, in order. */
export function history(sessionId: string): SessionNotification[] {
  const file = fileOf(sessionId)
  if (!file) return []
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as SessionNotification)
  } catch {
    return []
  }
}

export const replayAfterAnswer = () => process.env[REPLAY_ENV] === 'after'

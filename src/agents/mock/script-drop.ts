// A second way to hand the built-in mock agent its script, for `npm run demo`: the prompt stays the
// sentence a person would type (that is what the transcript stores and shows), and the script for
// it waits in a file of the folder named by MOCK_AGENT_SCRIPTS, keyed by the server's session id
// and the prompt's text. The mock takes (reads and removes) it when that prompt arrives; without
// one it runs a `{"script":[…]}` prompt, or echoes, as before.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export const SCRIPTS_DIR_ENV = 'MOCK_AGENT_SCRIPTS'
/**
 * The server's session id in every agent's environment: AGENT_SESSION_ID_ENV of agent-process.ts,
 * repeated here because this file is bundled into the mock agent (test/demo/demo-scripts.test.ts
 * checks that the two agree).
 */
export const SESSION_ID_ENV = 'TASK_STATUS_SESSION_ID'

function scriptFile(dir: string, sessionId: string, prompt: string): string {
  const key = createHash('sha256').update(`${sessionId}\0${prompt}`).digest('hex').slice(0, 40)
  return path.join(dir, `${key}.json`)
}

/** Leaves `steps` for the mock agent of `sessionId`, to run when `prompt` arrives (written whole, then renamed). */
export function dropScript(dir: string, sessionId: string, prompt: string, steps: readonly unknown[]): void {
  mkdirSync(dir, { recursive: true })
  const file = scriptFile(dir, sessionId, prompt)
  writeFileSync(`${file}.tmp`, JSON.stringify(steps))
  renameSync(`${file}.tmp`, file)
}

/** The script left for this prompt of this agent's session, removed as it is taken; undefined when there is none. */
export function takeScript(env: NodeJS.ProcessEnv, prompt: string): unknown[] | undefined {
  const dir = env[SCRIPTS_DIR_ENV]
  const sessionId = env[SESSION_ID_ENV]
  if (!dir || !sessionId) return undefined
  const file = scriptFile(dir, sessionId, prompt)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  rmSync(file, { force: true })
  try {
    const steps: unknown = JSON.parse(text)
    return Array.isArray(steps) ? steps : undefined
  } catch {
    return undefined
  }
}

// The real Codex ACP adapter (@zed-industries/codex-acp, installed under test/reference-agents by
// scripts/ensure-reference-agents.sh) as an agent profile, run offline against a local fake of
// OpenAI's Responses API (test/support/fake-providers/openai.ts).
//
// Each profile gets a fresh CODEX_HOME (config, rollouts for session/load, sqlite state) whose
// config.toml selects a custom model provider pointing at the fake: a custom provider needs no
// login (codex-acp only demands auth for the built-in "openai" provider) and reads its key from
// `env_key`. approval_policy "untrusted" makes every edit (apply_patch) and every command outside
// codex's small read-only allowlist ask permission over ACP (session/request_permission);
// sandbox_mode "danger-full-access" keeps codex from needing a Linux sandbox once approved.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const CODEX_ACP_VERSION = '0.16.0'
/** The key the profile hands codex; the fake can insist on it (startFakeOpenAi({ apiKey })). */
export const FAKE_OPENAI_API_KEY = 'sk-fake-codex-acp-test-key'
/** A model in codex's bundled model list: no "metadata not found" notice, and apply_patch is offered as a freeform tool. */
export const CODEX_TEST_MODEL = 'gpt-5.4'

const packages = resolve(import.meta.dirname, '../../reference-agents/node_modules/@zed-industries')

/** The command that starts codex-acp: its native binary when present, else the npm launcher under this Node. */
export function codexAcpCommand(): string[] {
  const native = join(packages, `codex-acp-${process.platform}-${process.arch}`, 'bin', process.platform === 'win32' ? 'codex-acp.exe' : 'codex-acp')
  if (existsSync(native)) return [native]
  return [process.execPath, join(packages, 'codex-acp', 'bin', 'codex-acp.js')]
}

export function codexAcpInstalled(): boolean {
  return existsSync(join(packages, 'codex-acp', 'package.json'))
}

export interface CodexProfileOptions {
  /** approval_policy: untrusted (default: edits and commands ask), on-request, on-failure, never. */
  approvalPolicy?: 'untrusted' | 'on-request' | 'on-failure' | 'never'
  /** sandbox_mode (default danger-full-access: no Linux sandbox needed). */
  sandboxMode?: 'read-only' | 'workspace-write' | 'danger-full-access'
  /** Retries of a failed HTTP request (401/429/5xx) before the turn fails (default 0: errors surface at once). */
  requestMaxRetries?: number
  /** Reconnects of a dropped stream (default 0). */
  streamMaxRetries?: number
  /** How long codex waits for the next SSE event before failing the turn (default 300000, codex's own). */
  streamIdleTimeoutMs?: number
  /** Overrides the key handed to codex (e.g. a wrong one for a 401 test). */
  apiKey?: string
  model?: string
}

export interface CodexProfile {
  command: string[]
  env: Record<string, string>
  /** The temporary CODEX_HOME (config.toml, sessions/ rollouts, sqlite state). */
  codexHome: string
  /** Removes CODEX_HOME; call after the agent has exited. */
  cleanup(): void
}

/** A codex-acp profile talking to the fake at `fakeUrl` (FakeOpenAi.url, ending in /v1). */
export function codexProfile(fakeUrl: string, options: CodexProfileOptions = {}): CodexProfile {
  const url = new URL(fakeUrl)
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') throw new Error('codexProfile: the fake must be on loopback')
  const codexHome = mkdtempSync(join(tmpdir(), 'codex-acp-home-'))
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(fakeUrl, options))
  return {
    command: codexAcpCommand(),
    env: {
      CODEX_HOME: codexHome,
      CODEX_FAKE_OPENAI_API_KEY: options.apiKey ?? FAKE_OPENAI_API_KEY,
      // Nothing of a developer's own OpenAI setup may leak in (the custom provider ignores them anyway).
      OPENAI_API_KEY: '',
      CODEX_API_KEY: '',
      OPENAI_BASE_URL: '',
      // codex's tracing goes to stderr; keep it quiet.
      RUST_LOG: 'error',
    },
    codexHome,
    cleanup: () => rmSync(codexHome, { recursive: true, force: true, maxRetries: 3 }),
  }
}

const toml = (value: string) => JSON.stringify(value)

export function codexConfig(fakeUrl: string, options: CodexProfileOptions = {}): string {
  return [
    `model = ${toml(options.model ?? CODEX_TEST_MODEL)}`,
    `model_provider = "fake-openai"`,
    `approval_policy = ${toml(options.approvalPolicy ?? 'untrusted')}`,
    `sandbox_mode = ${toml(options.sandboxMode ?? 'danger-full-access')}`,
    `check_for_update_on_startup = false`,
    `web_search = "disabled"`,
    '',
    '[model_providers.fake-openai]',
    'name = "Fake OpenAI"',
    `base_url = ${toml(fakeUrl)}`,
    'wire_api = "responses"',
    'env_key = "CODEX_FAKE_OPENAI_API_KEY"',
    `request_max_retries = ${options.requestMaxRetries ?? 0}`,
    `stream_max_retries = ${options.streamMaxRetries ?? 0}`,
    `stream_idle_timeout_ms = ${options.streamIdleTimeoutMs ?? 300_000}`,
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
  ].join('\n')
}

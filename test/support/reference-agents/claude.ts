// The real Claude Code ACP adapter (@zed-industries/claude-agent-acp 0.23.1, installed under
// test/reference-agents by scripts/ensure-reference-agents.sh) as an agent profile, pointed at a
// local fake of the Anthropic API (test/support/fake-providers/anthropic.ts) and kept offline.
//
// The adapter spawns the Claude Code CLI bundled in @anthropic-ai/claude-agent-sdk (cli.js) with
// its own environment passed through, so every variable below reaches both. Names were taken from
// the bundled cli.js (2.1.83); see the comments for what each one prevents.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AgentProfile } from '../../../src/config/config.ts'

const referenceAgents = fileURLToPath(new URL('../../reference-agents/node_modules/', import.meta.url))

/** The adapter's entry point (its package bin). */
export const CLAUDE_ACP_ENTRY = path.join(referenceAgents, '@zed-industries', 'claude-agent-acp', 'dist', 'index.js')

/** The Claude Code CLI the adapter runs (for greps and strace filters; the adapter finds it itself). */
export const CLAUDE_CLI = path.join(referenceAgents, '@anthropic-ai', 'claude-agent-sdk', 'cli.js')

export interface ClaudeProfile {
  profile: AgentProfile
  /** The throwaway home / CLAUDE_CONFIG_DIR (session transcripts live under it, in projects/). */
  home: string
  /** Removes the temp directory; safe to call twice. Call only after the agent has exited. */
  cleanup(): void
}

/**
 * A profile running the adapter with this Node against `anthropicUrl` (a loopback fake). Each call
 * makes a fresh temporary home, used as both HOME and CLAUDE_CONFIG_DIR, so nothing of the real
 * ~/.claude or ~/.claude.json is read or written, and sessions of different tests never meet.
 * Reuse one profile for a new agent process when a test resumes (session/load) a session: the
 * transcript the CLI wrote is in that home.
 */
export function claudeProfile(anthropicUrl: string, extraEnv: Record<string, string> = {}): ClaudeProfile {
  const url = new URL(anthropicUrl)
  // Never let a typo send the CLI (and the fake API key) anywhere but this machine.
  if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') throw new Error(`claudeProfile: not a loopback URL: ${anthropicUrl}`)
  const home = mkdtempSync(path.join(tmpdir(), 'claude-acp-home-'))
  // At every start the CLI (headless plugin set-up, not gated by any env variable short of
  // CLAUDE_CODE_SIMPLE, which would also change the tool set) fetches the plugin blocklist from
  // raw.githubusercontent.com unless its cached copy is under an hour old: seeding a fresh, empty
  // one keeps it from even resolving the name. Tests that run a profile longer than an hour would
  // see one DNS lookup (the fetch then fails offline and is ignored).
  mkdirSync(path.join(home, 'plugins'), { recursive: true })
  writeFileSync(path.join(home, 'plugins', 'blocklist.json'), JSON.stringify({ fetchedAt: new Date().toISOString(), plugins: [] }))
  const env: Record<string, string> = {
    ANTHROPIC_BASE_URL: anthropicUrl,
    // Any non-empty key: the fake does not check it. Auth variants that would win over it are blanked.
    ANTHROPIC_API_KEY: 'sk-ant-api03-fake-key-for-offline-tests',
    ANTHROPIC_AUTH_TOKEN: '',
    CLAUDE_CODE_OAUTH_TOKEN: '',
    CLAUDE_CODE_USE_BEDROCK: '',
    CLAUDE_CODE_USE_VERTEX: '',
    CLAUDE_CODE_USE_FOUNDRY: '',
    HOME: home,
    CLAUDE_CONFIG_DIR: home,
    // The adapter offers bypassPermissions when IS_SANDBOX is merely non-empty, but the CLI, run as
    // root, accepts only IS_SANDBOX=1 and otherwise exits at once ("--dangerously-skip-permissions
    // cannot be used with root/sudo privileges"), failing session/new. Empty: neither offers it.
    IS_SANDBOX: '',
    // No telemetry, error reporting (Sentry), auto-update, release notes, MCP registry, model/
    // plugin/marketplace fetches: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC covers most of them.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_ENABLE_TELEMETRY: '',
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
    CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL: '1',
    // Background model calls the CLI can fork off the conversation with the main tools attached
    // (prompt suggestions, memory extraction): they would look like main requests to the fake and
    // consume scripted replies. Both are off by default offline; pinned off here.
    CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION: 'false',
    CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
    // The CLI retries 429/529/5xx up to 10 times with exponential backoff (honouring retry-after);
    // 0 makes a provider error end the turn at once, so a test sees it within seconds.
    CLAUDE_CODE_MAX_RETRIES: '0',
    // A failed stream is otherwise retried as a non-streaming request, which would consume a second
    // scripted reply and hide the streaming error.
    CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK: '1',
    // Compaction (automatic near the context limit) is a model call of its own in the middle of a
    // turn; off, so a turn makes exactly the calls a test scripted.
    DISABLE_AUTO_COMPACT: '1',
    // No proxy may take the loopback requests elsewhere.
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    ...extraEnv,
  }
  return {
    profile: { command: [process.execPath, CLAUDE_ACP_ENTRY], env },
    home,
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  }
}

/** Removes the temporary homes of several profiles (e.g. in afterAll). */
export function cleanupClaudeProfiles(profiles: Iterable<ClaudeProfile>): void {
  for (const profile of profiles) profile.cleanup()
}

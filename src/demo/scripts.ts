/**
 * Scripts for the built-in `mock` agent (MAPPING.md, "The built-in mock agent"), one generator per
 * kind of row the demo wants on screen. Pure: every choice comes from the `random` passed in.
 */
export type Random = () => number

export type ScriptKind = 'generating' | 'permission' | 'clarification' | 'error' | 'write' | 'subagents' | 'quick'

export type Step = Record<string, unknown>

export interface DemoScript {
  kind: ScriptKind
  steps: Step[]
  /** True when some step writes files in the repository (the Git totals move). */
  writes: boolean
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length) % items.length]!
const between = (random: Random, min: number, max: number) => Math.round(min + random() * (max - min))

const THOUGHTS = [
  'Let me look at how this module is wired before changing anything.',
  'The failing path seems to be the retry branch; checking the call sites first.',
  'There are two places that build this query; I should change both consistently.',
  'The tests cover the happy path only, so I will add a case for the edge first.',
  'This config value is read at startup, so a restart is needed to pick it up.',
]
const SAYINGS = [
  'I found the cause: the handler reads a stale value from the cache. Fixing it now.',
  'The change is in place. Next I will run the relevant tests and tidy up the diff.',
  'I updated the implementation and added two regression tests.',
  'Here is the plan: refactor the helper, update the callers, then adjust the docs.',
  'Done with the first pass. The remaining work is mostly renaming and comments.',
]
const TOOLS: { title: string; kind: string }[] = [
  { title: 'Read src/index.ts', kind: 'read' },
  { title: 'Search for "retry"', kind: 'search' },
  { title: 'Edit src/handlers.ts', kind: 'edit' },
  { title: 'Run npm test', kind: 'execute' },
  { title: 'Fetch API docs', kind: 'fetch' },
]
const PERMISSIONS = ['Run npm test?', 'Edit package.json?', 'Run the database migration?', 'Push the branch?', 'Delete the build cache?', 'Install a new dependency?']
const QUESTIONS = [
  'Which branch should I target?',
  'Should the API stay backwards compatible?',
  'Do you want tests for the legacy path too?',
  'Keep the old flag as an alias, or remove it?',
  'Is it fine to bump the minimum Node version?',
]
const ERRORS: { code: string; message: string }[] = [
  { code: 'rate_limited', message: 'The model provider rate-limited this session. Retry in a minute.' },
  { code: 'context_length_exceeded', message: 'The conversation no longer fits the context window.' },
  { code: 'tool_failed', message: 'npm test exited with code 1 (3 failing tests).' },
  { code: 'network_timeout', message: 'The request to the model provider timed out.' },
]
const SUBAGENTS = ['explore the codebase', 'review the diff', 'write tests', 'check the docs']
const FILES = ['src/feature.ts', 'src/helpers.ts', 'test/feature.test.ts', 'docs/notes.md', 'CHANGELOG.md', 'README.md']

const think = (random: Random): Step => ({ think: pick(random, THOUGHTS), chunks: between(random, 4, 12) })
const say = (random: Random): Step => ({ say: pick(random, SAYINGS), chunks: between(random, 5, 15) })
const tool = (random: Random): Step => ({ tool: { ...pick(random, TOOLS), status: random() < 0.9 ? 'completed' : 'failed' } })
const sleep = (random: Random, min: number, max: number): Step => ({ sleep: between(random, min, max) })
const stream = (random: Random): Step => ({ stream: { kind: random() < 0.5 ? 'reasoning' : 'message', count: between(random, 200, 600) } })

function write(random: Random): Step {
  const file = pick(random, FILES)
  const lines = Array.from({ length: between(random, 2, 30) }, (_, i) => `line ${i + 1}: ${Math.floor(random() * 1e6).toString(36)}`)
  return { write: { path: file, content: `${lines.join('\n')}\n` } }
}

/** A turn that streams for a while (5 to 20 s): thoughts, tool calls, a long stream, text. */
function generating(random: Random): Step[] {
  const steps: Step[] = [think(random), sleep(random, 500, 1500), tool(random), say(random), sleep(random, 1000, 3000), stream(random)]
  if (random() < 0.5) steps.push({ subagent: { title: pick(random, SUBAGENTS), ms: between(random, 3000, 12_000) } })
  if (random() < 0.6) steps.push(write(random))
  steps.push(sleep(random, 2000, 8000), think(random), say(random), sleep(random, 1000, 5000), say(random))
  return steps
}

/** Works briefly, asks for a permission it does not wait for; the turn stays open until it is answered. */
function permission(random: Random): Step[] {
  const steps: Step[] = [think(random), tool(random), sleep(random, 300, 1500), { permission: { title: pick(random, PERMISSIONS), wait: false } }, say(random)]
  if (random() < 0.5) steps.push(write(random))
  return steps
}

function clarification(random: Random): Step[] {
  return [think(random), sleep(random, 300, 1500), say(random), { clarify: { question: pick(random, QUESTIONS), wait: false } }]
}

/** Works for a moment, then ends the turn with a recoverable session error. */
function error(random: Random): Step[] {
  return [think(random), say(random), sleep(random, 500, 2500), tool(random), { error: pick(random, ERRORS) }]
}

function writeFiles(random: Random): Step[] {
  const steps: Step[] = [think(random), { tool: { title: 'Edit files', kind: 'edit', status: 'completed' } }]
  for (let i = between(random, 1, 3); i > 0; i--) steps.push(write(random), sleep(random, 200, 800))
  steps.push(say(random))
  return steps
}

/** Subagents that outlive the turn: the row shows background activity afterwards. */
function subagents(random: Random): Step[] {
  return [
    think(random),
    { subagent: { title: pick(random, SUBAGENTS), ms: between(random, 8000, 20_000) } },
    { subagent: { title: pick(random, SUBAGENTS), ms: between(random, 4000, 15_000) } },
    say(random),
  ]
}

function quick(random: Random): Step[] {
  return [think(random), say(random)]
}

const GENERATORS: Record<ScriptKind, (random: Random) => Step[]> = {
  generating,
  permission,
  clarification,
  error,
  write: writeFiles,
  subagents,
  quick,
}

export function demoScript(kind: ScriptKind, random: Random, options: { models?: boolean } = {}): DemoScript {
  const steps = GENERATORS[kind](random)
  if (options.models) steps.unshift({ models: { current: 'sonnet', available: ['sonnet', 'opus', 'haiku'] } })
  return { kind, steps, writes: steps.some((s) => 'write' in s) }
}

/** The prompt text the mock agent executes. */
export function scriptPrompt(script: DemoScript): string {
  return JSON.stringify({ script: script.steps })
}

export const ANSWERS = ['Target main, please.', 'Yes, keep it compatible.', 'Only for the new path.', 'Remove it.', 'Fine by me.']

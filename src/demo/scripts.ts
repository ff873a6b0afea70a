/**
 * Scripts for the built-in `mock` agent, one generator per kind of row the demo wants on screen,
 * in the words of the row's task (stories.ts). A script is the prompt a person would type (stored
 * and shown in the transcript) and the steps the mock agent runs for it (left for it beside the
 * prompt, see src/agents/mock/script-drop.ts). Pure: every choice comes from the `random` passed in.
 */
import type { Story } from './stories.ts'

export type Random = () => number

export type ScriptKind = 'generating' | 'permission' | 'clarification' | 'error' | 'write' | 'subagents' | 'quick'

export type Step = Record<string, unknown>

export interface DemoScript {
  kind: ScriptKind
  /** The user's prompt: a sentence, never the script. */
  prompt: string
  steps: Step[]
  /** True when some step writes files in the repository (the Git totals move). */
  writes: boolean
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length) % items.length]!
const between = (random: Random, min: number, max: number) => Math.round(min + random() * (max - min))

/** The prompts after a session's first, by the kind of turn they lead to. */
const FOLLOW_UPS: Record<ScriptKind, readonly string[]> = {
  generating: ['Keep going, and cover the edge cases you found with tests.', 'Check the change against main and tidy up the diff.', 'Now update the docs to match.'],
  permission: ['Run the whole test suite and tell me what fails.', 'Looks good. Run the checks, then push the branch.', 'Go ahead and try it locally.'],
  clarification: ['Prepare the pull request, and ask me if anything is unclear.', 'Handle the remaining cases as you see fit, but ask if unsure.'],
  error: ['Run the full test suite once more.', 'Rebase on main and run the tests again.', 'Try it against a copy of the staging data.'],
  write: ['Add a CHANGELOG entry and update the README.', 'Write the tests for this change.', 'Split the change into smaller commits.'],
  subagents: ['Review the whole diff before I open the pull request.', 'Check whether other modules have the same problem.'],
  quick: ['Summarize what you changed so far.', 'What is left before this can be merged?', 'Thanks! Anything I should know before I review it?'],
}
const THOUGHTS = [
  'Let me look at how this module is wired before changing anything else.',
  'There are two places that build this query; I should change both the same way.',
  'The tests cover the happy path only, so I will add a case for the edge first.',
  'This value is read at startup, so the change needs a restart to show.',
  'The last change touched the shared helper; its other callers need checking too.',
]
const SAYINGS = [
  'The change is in place. Next I will run the relevant tests and tidy up the diff.',
  'I updated the implementation and added two regression tests.',
  'Done with this pass; what remains is mostly naming and comments.',
  'All green locally. I also tightened two assertions that passed for the wrong reason.',
  'Here is the plan: refactor the helper, update its callers, then adjust the docs.',
]
const LEAD_INS = ['Before I change anything, one question.', 'I can go two ways here.', 'One thing I need to know first.']
const PERMISSIONS = ['Run npm test', 'Edit package.json', 'Run the database migration', 'Push the branch', 'Delete the build cache', 'Install a new dependency']
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

/** The ACP tool kind of a tool call title, read from its first word. */
export function toolKind(title: string): string {
  const verb = title.split(' ', 1)[0] ?? ''
  return ({ Read: 'read', Search: 'search', Edit: 'edit', Delete: 'delete', Run: 'execute', Fetch: 'fetch' } as Record<string, string>)[verb] ?? 'other'
}

/** One turn in the words of its task: the story's own on the session's first turn, mixed with general ones after. */
class Turn {
  constructor(
    readonly random: Random,
    readonly story: Story,
    readonly first: boolean,
  ) {}

  /** Text streamed a few characters at a time, as an agent writes it: the transcript coalesces the chunks. */
  private streamed(key: 'think' | 'say', text: string, ms: [number, number]): Step {
    return { [key]: text, chunks: Math.ceil(text.length / between(this.random, 8, 20)), ms: between(this.random, ...ms) }
  }
  think(index: 0 | 1): Step {
    return this.streamed('think', this.first ? this.story.thoughts[index] : pick(this.random, [...this.story.thoughts, ...THOUGHTS]), [50, 140])
  }
  say(text: string): Step {
    return this.streamed('say', text, [30, 90])
  }
  reply(kind: ScriptKind): Step {
    return this.say(this.first || kind === 'quick' ? this.story.reply : pick(this.random, SAYINGS))
  }
  /** The story's tool call of that position (the first ones look, then edit, then run). */
  tool(index: number, status: 'completed' | 'failed' = this.random() < 0.9 ? 'completed' : 'failed'): Step {
    const title = this.story.tools[Math.min(index, this.story.tools.length - 1)]!
    return { tool: { title, kind: toolKind(title), status, ms: between(this.random, 300, 2000) } }
  }
  get runs(): string[] {
    return this.story.tools.filter((t) => t.startsWith('Run '))
  }
  sleep(min: number, max: number): Step {
    return { sleep: between(this.random, min, max) }
  }
  write(): Step {
    const file = pick(this.random, [`src/${this.story.area}.ts`, ...FILES])
    const lines = Array.from({ length: between(this.random, 2, 30) }, (_, i) => `// ${this.story.area}: step ${i + 1} (${Math.floor(this.random() * 1e6).toString(36)})`)
    return { write: { path: file, content: `${lines.join('\n')}\n` } }
  }
}

/** A turn that works for a while (5 to 20 s): reasoning, tool calls, sleeps of 3.5 s or more in all, maybe a subagent or files. */
function generating(t: Turn): Step[] {
  const steps: Step[] = [t.think(0), t.tool(0), t.sleep(500, 1500), t.tool(1), t.think(1), t.sleep(1000, 3000), t.tool(2)]
  if (t.random() < 0.5) steps.push({ subagent: { title: pick(t.random, SUBAGENTS), ms: between(t.random, 3000, 12_000) } })
  if (t.random() < 0.6) steps.push(t.write())
  steps.push(t.sleep(2000, 8000), t.tool(3), t.reply('generating'))
  return steps
}

/** Works briefly, asks for a permission it does not wait for; the turn stays open until it is answered. */
function permission(t: Turn): Step[] {
  const title = pick(t.random, [...t.runs, ...PERMISSIONS])
  const steps: Step[] = [t.think(0), t.tool(0), t.sleep(300, 1500), { permission: { title, wait: false } }, t.say(`I need your go-ahead to ${title[0]!.toLowerCase()}${title.slice(1)}.`)]
  if (t.random() < 0.5) steps.push(t.write())
  return steps
}

function clarification(t: Turn): Step[] {
  return [t.think(0), t.sleep(300, 1500), t.tool(0), t.say(pick(t.random, LEAD_INS)), { clarify: { question: pick(t.random, QUESTIONS), wait: false } }]
}

/** Works for a moment, then ends the turn with a recoverable session error (after a failing run when it is a tool's). */
function error(t: Turn): Step[] {
  const failure = pick(t.random, ERRORS)
  return [t.think(0), t.tool(0), t.sleep(500, 2500), t.tool(3, failure.code === 'tool_failed' ? 'failed' : 'completed'), { error: failure }]
}

function writeFiles(t: Turn): Step[] {
  const steps: Step[] = [t.think(1), t.tool(2, 'completed')]
  for (let i = between(t.random, 1, 3); i > 0; i--) steps.push(t.write(), t.sleep(200, 800))
  steps.push(t.reply('write'))
  return steps
}

/** Subagents that outlive the turn: the row shows background activity afterwards. */
function subagents(t: Turn): Step[] {
  const [a, b] = [...SUBAGENTS].sort(() => t.random() - 0.5)
  return [
    t.think(0),
    { subagent: { title: a!, ms: between(t.random, 8000, 20_000) } },
    { subagent: { title: b!, ms: between(t.random, 4000, 15_000) } },
    t.say(`Two helpers are on it: one to ${a}, one to ${b}. I will report back when they finish.`),
  ]
}

function quick(t: Turn): Step[] {
  return [t.think(0), t.reply('quick')]
}

const GENERATORS: Record<ScriptKind, (t: Turn) => Step[]> = { generating, permission, clarification, error, write: writeFiles, subagents, quick }

/** A turn of `kind` for `story`; `first`: the session's first turn (the story's own prompt and words, and the model list). */
export function demoScript(kind: ScriptKind, random: Random, story: Story, options: { first?: boolean } = {}): DemoScript {
  const first = options.first ?? false
  const prompt = first ? story.prompt : pick(random, FOLLOW_UPS[kind])
  const steps = GENERATORS[kind](new Turn(random, story, first))
  if (first) steps.unshift({ models: { current: 'sonnet', available: ['sonnet', 'opus', 'haiku'] } })
  return { kind, prompt, steps, writes: steps.some((s) => 'write' in s) }
}

export const ANSWERS = ['Target main, please.', 'Yes, keep it compatible.', 'Only for the new path.', 'Remove it.', 'Fine by me.']

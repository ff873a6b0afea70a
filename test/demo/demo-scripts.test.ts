// The demo's scripts as words: every kind of turn for every task, checked step by step, and the
// folder through which the mock agents get them (the prompt itself stays a sentence).
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AGENT_SESSION_ID_ENV } from '../../src/agents/agent-process.ts'
import { dropScript, SCRIPTS_DIR_ENV, SESSION_ID_ENV, takeScript } from '../../src/agents/mock/script-drop.ts'
import { demoScript, type ScriptKind, type Step } from '../../src/demo/scripts.ts'
import { STORIES } from '../../src/demo/stories.ts'
import { seeded } from './seeded-random.ts'

const KINDS: ScriptKind[] = ['generating', 'permission', 'clarification', 'error', 'write', 'subagents', 'quick']
/** ACP's ToolKind values, less `other`: every demo tool call says what it does. */
const TOOL_KINDS = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch']

/** A sentence or more of prose: ends with a stop, several words, no JSON, no counters. */
function expectProse(text: string, what: string) {
  expect(text, what).toMatch(/^\S[\s\S]*[a-z][\s\S]*[.?!]$/)
  expect(text.split(/\s+/).length, what).toBeGreaterThanOrEqual(4)
  expect(text, what).not.toMatch(/[{}]|"script"|\d;\d/)
}

const stepsOf = (steps: Step[], key: string) => steps.filter((s) => key in s)

describe('demo scripts', () => {
  it('has 27 tasks, each with its own title, prompt, thoughts, tool calls and reply', () => {
    expect(STORIES).toHaveLength(27)
    for (const field of ['title', 'prompt', 'reply'] as const) expect(new Set(STORIES.map((s) => s[field])).size, field).toBe(27)
    for (const story of STORIES) {
      for (const text of [story.prompt, ...story.thoughts, story.reply]) expectProse(text, story.title)
      expect(story.tools.length, story.title).toBeGreaterThanOrEqual(4)
    }
  })

  it('every kind of turn, first or later, of every task: a sentence as prompt, streamed reasoning in words, titled tool calls', () => {
    const random = seeded(7)
    for (const story of STORIES)
      for (const kind of KINDS)
        for (const first of [true, false]) {
          const what = `${story.title} / ${kind}${first ? ' (first)' : ''}`
          const script = demoScript(kind, random, story, { first })
          expectProse(script.prompt, what)
          if (first) expect(script.prompt, what).toBe(story.prompt)
          const thoughts = stepsOf(script.steps, 'think') as { think: string; chunks: number; ms: number }[]
          expect(thoughts.length, what).toBeGreaterThan(0)
          for (const t of thoughts) {
            expectProse(t.think, what)
            // Streamed a few characters at a time, paced: the transcript shows it grow and coalesces it.
            expect(t.chunks, what).toBeGreaterThanOrEqual(4)
            expect(t.ms, what).toBeGreaterThan(0)
          }
          for (const s of stepsOf(script.steps, 'say') as { say: string }[]) expectProse(s.say, what)
          for (const { tool } of stepsOf(script.steps, 'tool') as { tool: { title: string; kind: string; status: string } }[]) {
            expect(tool.title, what).toMatch(/^(Read|Search|Edit|Delete|Run|Fetch) \S/)
            expect(story.tools, what).toContain(tool.title)
            expect(TOOL_KINDS, what).toContain(tool.kind)
            expect(['completed', 'failed'], what).toContain(tool.status)
          }
          // No load-generator streams ("0;1;2;…") in the demo any more.
          expect(stepsOf(script.steps, 'stream'), what).toEqual([])
        }
  })

  it('varies by task, and repeats under the same seed', () => {
    const firstThoughts = STORIES.map((story) => (demoScript('generating', seeded(1), story, { first: true }).steps[1] as { think: string }).think)
    expect(new Set(firstThoughts).size).toBe(27)
    for (const kind of KINDS) expect(demoScript(kind, seeded(3), STORIES[4]!)).toEqual(demoScript(kind, seeded(3), STORIES[4]!))
  })
})

describe('scripts left for the mock agent (MOCK_AGENT_SCRIPTS)', () => {
  let dir: string | undefined
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('reads the session id where the server puts it', () => {
    expect(SESSION_ID_ENV).toBe(AGENT_SESSION_ID_ENV)
  })

  it('gives a script to its session for its prompt only, once', () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'demo-scripts-'))
    const env = (sessionId: string) => ({ [SCRIPTS_DIR_ENV]: dir, [SESSION_ID_ENV]: sessionId })
    const steps = [{ say: 'Hello there, this is a reply.' }]
    dropScript(dir, 's1', 'Fix the flaky login test on Safari.', steps)
    expect(takeScript(env('s2'), 'Fix the flaky login test on Safari.')).toBeUndefined()
    expect(takeScript(env('s1'), 'Fix the flaky login test.')).toBeUndefined()
    expect(takeScript({ [SESSION_ID_ENV]: 's1' }, 'Fix the flaky login test on Safari.')).toBeUndefined()
    expect(takeScript(env('s1'), 'Fix the flaky login test on Safari.')).toEqual(steps)
    expect(takeScript(env('s1'), 'Fix the flaky login test on Safari.')).toBeUndefined()
    expect(existsSync(dir)).toBe(true)
  })
})

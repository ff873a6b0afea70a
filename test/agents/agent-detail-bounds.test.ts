// The bounds of what real agents send besides their transcript (contract v1.4, next.graphql):
// tool-call detail, permission options, plan, models, and the reasons of their errors.
import { describe, expect, it } from 'vitest'
import { RequestError } from '@agentclientprotocol/sdk'
import {
  DIFF_TEXT_MAX_BYTES,
  MAX_DIFFS,
  MAX_LOCATIONS,
  RAW_INPUT_MAX_BYTES,
  parseMetadata,
  storedToolCallDetail,
  toolCallDetail,
} from '../../src/agents/tool-call-detail.ts'
import { answeredStatus, boundedPlan, currentModeId, modelChoice, permissionOptions } from '../../src/agents/agent-publications.ts'
import { agentErrorReason, launchFailureReason } from '../../src/agents/agent-reasons.ts'
import { envAuthMethod } from '../../src/agents/agent-process.ts'

const bytes = (text: string) => Buffer.byteLength(text, 'utf8')
const diff = (i: number, size = 10) => ({ type: 'diff', path: `/w/f${i}.ts`, oldText: 'é'.repeat(size), newText: '€'.repeat(size) })

describe('tool call detail', () => {
  it.each([
    { name: 'nothing sent is no detail', fields: {}, expected: null },
    {
      name: 'kind, locations, diffs and raw input as sent',
      fields: { kind: 'edit', locations: [{ path: '/w/a.ts', line: 3 }, { path: '/w/b.ts' }], content: [diff(1, 2)], rawInput: { file_path: '/w/a.ts' } },
      expected: {
        kind: 'edit',
        locations: [{ path: '/w/a.ts', line: 3 }, { path: '/w/b.ts', line: null }],
        diffs: [{ path: '/w/f1.ts', oldText: 'éé', newText: '€€' }],
        rawInput: '{"file_path":"/w/a.ts"}',
        truncated: false,
      },
    },
    {
      name: 'content that is not a diff (text, terminals) carries no diff; a new file has no old text',
      fields: { content: [{ type: 'content', content: { type: 'text', text: 'hi' } }, { type: 'diff', path: '/w/new.md', newText: 'x' }] },
      expected: { kind: null, locations: [], diffs: [{ path: '/w/new.md', oldText: null, newText: 'x' }], rawInput: null, truncated: false },
    },
    {
      name: 'malformed entries are left out, a negative or fractional line reads as none',
      fields: { locations: [{ path: 7 }, { path: '/w/a', line: -1 }, { path: '/w/b', line: 1.5 }], content: [{ type: 'diff', path: '/w/x' }] },
      expected: { kind: null, locations: [{ path: '/w/a', line: null }, { path: '/w/b', line: null }], diffs: [], rawInput: null, truncated: false },
    },
  ])('$name', ({ fields, expected }) => {
    expect(toolCallDetail(fields as never)).toEqual(expected)
  })

  it(`keeps at most ${MAX_LOCATIONS} locations and ${MAX_DIFFS} diffs, and says it cut them`, () => {
    const detail = toolCallDetail({
      locations: Array.from({ length: 40 }, (_, i) => ({ path: `/w/${i}` })),
      content: Array.from({ length: 20 }, (_, i) => diff(i)),
    })!
    expect(detail.locations).toHaveLength(MAX_LOCATIONS)
    expect(detail.diffs).toHaveLength(MAX_DIFFS)
    expect(detail.diffs.map((d) => d.path)).toEqual(Array.from({ length: MAX_DIFFS }, (_, i) => `/w/f${i}.ts`))
    expect(detail.truncated).toBe(true)
  })

  it('cuts diff text to 64 KiB over all diffs of the call, on a character, in order', () => {
    const detail = toolCallDetail({ content: [diff(1, 20_000), diff(2, 20_000), diff(3, 20_000)] })!
    const total = detail.diffs.reduce((n, d) => n + bytes(d.oldText ?? '') + bytes(d.newText), 0)
    expect(total).toBeLessThanOrEqual(DIFF_TEXT_MAX_BYTES)
    expect(total).toBeGreaterThan(DIFF_TEXT_MAX_BYTES - 3)
    expect(detail.diffs[0]).toEqual({ path: '/w/f1.ts', oldText: 'é'.repeat(20_000), newText: '€'.repeat(8_512) })
    expect(detail.diffs[1]).toMatchObject({ oldText: '', newText: '' })
    expect(detail.truncated).toBe(true)
  })

  it('cuts raw input to 16 KiB of UTF-8 without splitting a character', () => {
    const detail = toolCallDetail({ rawInput: { command: '😀'.repeat(10_000) } })!
    expect(bytes(detail.rawInput!)).toBeLessThanOrEqual(RAW_INPUT_MAX_BYTES)
    expect(detail.rawInput!.endsWith('\uD83D')).toBe(false)
    expect(detail.truncated).toBe(true)
  })

  it('a tool_call_update replaces the fields it sends and keeps the others (and a past cut)', () => {
    const first = toolCallDetail({ kind: 'edit', locations: [{ path: '/w/a' }], rawInput: {}, content: Array.from({ length: 20 }, (_, i) => diff(i)) })
    const updated = toolCallDetail({ content: [diff(9)], rawInput: null }, first)
    expect(updated).toEqual({ kind: 'edit', locations: [{ path: '/w/a', line: null }], diffs: [{ path: '/w/f9.ts', oldText: 'é'.repeat(10), newText: '€'.repeat(10) }], rawInput: null, truncated: true })
  })

  it('reads back what it stored; malformed metadata reads as none', () => {
    const detail = toolCallDetail({ kind: 'read', locations: [{ path: '/w/a' }] })
    expect(storedToolCallDetail(parseMetadata(JSON.stringify({ kind: 'read', toolCall: detail })))).toEqual(detail)
    for (const bad of [null, '', '{', '[]', '{"toolCall":1}', '{"toolCall":{"locations":{}}}']) expect(storedToolCallDetail(parseMetadata(bad))).toBeNull()
  })
})

describe('permission options', () => {
  it('keeps the agent’s order, ids and kinds; leaves out what cannot be answered or named; at most 8', () => {
    const options = permissionOptions([
      { optionId: 'allow_always', name: 'Always Allow', kind: 'allow_always' },
      { optionId: 'x'.repeat(257), name: 'too long an id', kind: 'allow_once' },
      { optionId: 'maybe', name: 'Maybe', kind: 'ask_later' },
      { optionId: 'allow', name: '', kind: 'allow_once' },
      { optionId: 'reject', name: 'n'.repeat(300), kind: 'reject_once' },
      ...Array.from({ length: 10 }, (_, i) => ({ optionId: `o${i}`, name: `O${i}`, kind: 'reject_always' })),
    ])
    expect(options.slice(0, 3)).toEqual([
      { id: 'allow_always', name: 'Always Allow', kind: 'allow_always' },
      { id: 'allow', name: 'allow', kind: 'allow_once' },
      { id: 'reject', name: 'n'.repeat(256), kind: 'reject_once' },
    ])
    expect(options).toHaveLength(8)
  })

  it.each([
    ['allow_once', 'APPROVED'],
    ['allow_always', 'APPROVED'],
    ['reject_once', 'REJECTED'],
    ['reject_always', 'REJECTED'],
  ] as const)('an option of kind %s answers the request %s, whatever its id', (kind, status) => {
    expect(answeredStatus({ id: 'abort', name: 'x', kind })).toBe(status)
  })
})

describe('plan, mode and models', () => {
  it('a plan keeps at most 64 valid entries, each content at most 1 KiB', () => {
    const plan = boundedPlan([
      { content: 'a', priority: 'high', status: 'completed' },
      { content: 'b', priority: 'urgent', status: 'pending' },
      { content: 'ü'.repeat(1000), priority: 'low', status: 'in_progress' },
      ...Array.from({ length: 80 }, () => ({ content: 'c', priority: 'medium', status: 'pending' })),
    ])
    expect(plan).toHaveLength(64)
    expect(plan[0]).toEqual({ content: 'a', priority: 'high', status: 'completed' })
    expect(plan[1]).toEqual({ content: 'ü'.repeat(512), priority: 'low', status: 'in_progress' })
  })

  it('models come from ACP `models` or a model select of `configOptions` (flat or grouped)', () => {
    expect(modelChoice({ models: { currentModelId: 'default', availableModels: [{ modelId: 'default', name: 'Default' }, { modelId: 'opus' }] } })).toEqual({
      currentModelId: 'default',
      availableModels: [{ id: 'default', name: 'Default' }, { id: 'opus', name: 'opus' }],
    })
    const select = { id: 'model', category: 'model', type: 'select', currentValue: 'gpt-5.4' }
    expect(modelChoice({ configOptions: [{ ...select, options: [{ value: 'gpt-5.4', name: 'GPT-5.4' }] }] })?.availableModels).toEqual([{ id: 'gpt-5.4', name: 'GPT-5.4' }])
    expect(modelChoice({ configOptions: [{ ...select, options: [{ group: 'g', name: 'G', options: [{ value: 'm', name: 'M' }] }] }] })?.availableModels).toEqual([
      { id: 'm', name: 'M' },
    ])
    expect(modelChoice({})).toBeUndefined()
    expect(modelChoice({ configOptions: [{ id: 'mode', category: 'mode', type: 'select', options: [] }] })).toBeUndefined()
  })

  it('the current mode comes from the answer’s `modes`', () => {
    expect(currentModeId({ modes: { currentModeId: 'default', availableModes: [] } })).toBe('default')
    expect(currentModeId({})).toBeUndefined()
  })
})

describe('the reasons agents give', () => {
  it.each([
    ['Internal error: Invalid API key · Fix external API key', undefined, 'Internal error: Invalid API key · Fix external API key'],
    ['Internal error: API Error: 429 {"type":"rate_limit_error"}', undefined, 'Rate limited by the model provider: Internal error: API Error: 429 {"type":"rate_limit_error"}'],
    ['Internal error: API Error: 529 {"type":"overloaded_error"}', undefined, 'The model provider is overloaded: Internal error: API Error: 529 {"type":"overloaded_error"}'],
    ['Internal error', { message: 'exceeded retry limit, last status: 429 Too Many Requests' }, 'Rate limited by the model provider: Internal error: exceeded retry limit, last status: 429 Too Many Requests'],
    ['Internal error', { details: 'Query closed before response received' }, 'Internal error: Query closed before response received'],
    ['', undefined, 'Agent error -32603.'],
  ])('%s (data %j) reads "%s"', (message, data, reason) => {
    expect(agentErrorReason(new RequestError(-32603, message, data))).toBe(reason)
  })

  it('an error reason is at most 512 bytes of UTF-8', () => {
    const reason = agentErrorReason(new RequestError(-32603, '€'.repeat(1000)))
    expect(bytes(reason)).toBeLessThanOrEqual(512)
    expect(reason).toBe('€'.repeat(170))
  })

  it('a launch failure carries the agent’s error and the tail of its stderr', () => {
    expect(launchFailureReason('Agent refused session/new.', new RequestError(-32603, 'Internal error', { details: 'nope' }), 'boom')).toBe(
      'Agent refused session/new. — Internal error: nope — stderr: boom',
    )
    expect(launchFailureReason('Agent exited during initialize (code 1).', new Error('ACP connection closed'), '')).toBe('Agent exited during initialize (code 1).')
  })
})

describe('signing in with a key from the environment', () => {
  const codex = [
    { id: 'chatgpt', name: 'Login with ChatGPT' },
    { type: 'env_var', id: 'codex-api-key', name: 'CODEX_API_KEY', vars: [{ name: 'CODEX_API_KEY' }] },
    { type: 'env_var', id: 'openai-api-key', name: 'OPENAI_API_KEY', vars: [{ name: 'OPENAI_API_KEY' }] },
  ]
  it.each([
    ['no key set: nothing to sign in with', {}, undefined],
    ['an empty key does not count', { CODEX_API_KEY: '' }, undefined],
    ['the first method whose variables are set', { OPENAI_API_KEY: 'sk' }, 'openai-api-key'],
    ['in the agent’s order', { OPENAI_API_KEY: 'sk', CODEX_API_KEY: 'ck' }, 'codex-api-key'],
  ] as const)('%s', (_name, env, method) => {
    expect(envAuthMethod(codex, env)).toBe(method)
  })

  it('an optional variable need not be set; methods of other kinds and malformed ones are never chosen', () => {
    expect(envAuthMethod([{ type: 'env_var', id: 'k', vars: [{ name: 'KEY' }, { name: 'ORG', optional: true }] }], { KEY: 'x' })).toBe('k')
    expect(envAuthMethod([{ type: 'terminal', id: 't', vars: [{ name: 'KEY' }] }, { type: 'env_var', id: 'e', vars: [] }], { KEY: 'x' })).toBeUndefined()
    expect(envAuthMethod(undefined, { KEY: 'x' })).toBeUndefined()
  })
})

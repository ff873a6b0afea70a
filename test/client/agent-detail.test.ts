// v1.4 in the SDK: a permission's options, a tool call's detail, the plan and the mode reach the
// session store by the same rules as the rest of a transcript (streamed frames carry neither
// options nor detail; a detail change is a null append, mended by reading the message whole).
import { describe, expect, it } from 'vitest'
import { isRejectOption, toolCallCommand, type PermissionOption, type ToolCallDetail } from '../../packages/client/src/index.ts'
import { harness, message, sessionEvent, sessionInfo, settle } from './harness.ts'

const options: PermissionOption[] = [
  { id: 'allow_always', name: 'Always Allow', kind: 'ALLOW_ALWAYS' },
  { id: 'allow', name: 'Allow', kind: 'ALLOW_ONCE' },
  { id: 'reject', name: 'Reject', kind: 'REJECT_ONCE' },
]

const detail = (extra: Partial<ToolCallDetail> = {}): ToolCallDetail => ({ kind: 'execute', locations: [], diffs: [], rawInput: null, truncated: false, ...extra })

/** A client following s1, whose snapshot holds `messages`. */
function following(messages = [message('m1', 's1', 1)]) {
  const h = harness()
  h.client.setVisibleSessions(['s1'])
  const sub = h.socket.live('ClientSessionEvents')[0]!
  sub.next(sessionEvent.joined('s1', messages))
  const held = (id: string) => h.client.sessions.getState().byId.s1!.messages[id]!
  return { h, sub, held }
}

describe('v1.4 agent detail in the session store', () => {
  it('the snapshot keeps a permission request\'s options in the agent\'s order, and its tool call detail', () => {
    const request = message('p1', 's1', 1, 'Edit src/app.ts', {
      kind: 'PERMISSION_REQUEST',
      status: 'PENDING',
      pendingId: 'pending-1',
      permissionOptions: options,
      toolCall: detail({ kind: 'edit', diffs: [{ path: '/w/src/app.ts', oldText: 'const a = 1\n', newText: 'const a = 2\n' }] }),
    })
    const { held } = following([request])
    expect(held('p1').permissionOptions.map((o) => o.id)).toEqual(['allow_always', 'allow', 'reject'])
    expect(held('p1').toolCall?.diffs[0]?.newText).toBe('const a = 2\n')
  })

  it('an applied append keeps the options and the detail the copy holds (a streamed frame carries neither)', () => {
    const withDetail = message('m1', 's1', 1, 'v1', { toolCall: detail({ rawInput: '{"command":"ls"}' }), permissionOptions: options })
    const { h, sub, held } = following([withDetail])
    sub.next(sessionEvent.updated(message('m1', 's1', 2), { offset: 2, text: ' more' }))
    h.runFrames()
    expect(held('m1')).toMatchObject({ content: 'v1 more', version: 2, toolCall: withDetail.toolCall, permissionOptions: options })
  })

  it('a tool call whose detail changed (a null append of a newer version) is read whole, and the read brings the new detail', async () => {
    const call = message('t1', 's1', 1, 'Run npm test', { kind: 'TOOL_CALL', status: 'IN_PROGRESS', toolCall: detail({ rawInput: '{"command":"npm test"}' }) })
    const { h, sub, held } = following([call])
    sub.next(sessionEvent.updated({ ...call, version: 2, status: 'COMPLETED' }))
    h.runFrames()
    await settle()
    expect(held('t1').version).toBe(1) // nothing applied from the frame: it has no detail
    const read = h.socket.pending('ClientMessage')
    expect(read.variables).toEqual({ sessionId: 's1', id: 't1' })
    const done = { ...call, version: 2, status: 'COMPLETED', toolCall: detail({ rawInput: '{"command":"npm test"}', locations: [{ path: '/w/package.json', line: null }] }) }
    read.reply({ session: { id: 's1', message: done } })
    await settle()
    expect(held('t1')).toMatchObject({ status: 'COMPLETED', version: 2, toolCall: done.toolCall })
  })

  it('SessionStateChanged brings the plan and the mode; the plan is replaced whole', () => {
    const { h, sub } = following()
    const plan = [
      { content: 'Fix', priority: 'HIGH' as const, status: 'IN_PROGRESS' as const },
      { content: 'Test', priority: 'LOW' as const, status: 'PENDING' as const },
    ]
    sub.next(sessionEvent.stateChanged(sessionInfo('s1', { plan, currentModeId: 'plan' })))
    expect(h.client.sessions.getState().byId.s1!.session).toMatchObject({ plan, currentModeId: 'plan' })
    sub.next(sessionEvent.stateChanged(sessionInfo('s1', { plan: [{ ...plan[0]!, status: 'COMPLETED' }], currentModeId: null })))
    expect(h.client.sessions.getState().byId.s1!.session).toMatchObject({ plan: [{ content: 'Fix', status: 'COMPLETED' }], currentModeId: null })
  })
})

describe('toolCallCommand: the command line a permission allows', () => {
  it.each([
    { agent: 'Claude Code (a string)', rawInput: '{"command":"npm test","description":"Run tests"}', expected: 'npm test' },
    { agent: 'Codex (an argv)', rawInput: '{"command":["/bin/bash","-lc","npm test"]}', expected: "/bin/bash -lc 'npm test'" },
    { agent: 'an argv with a quote', rawInput: `{"command":["echo","it's"]}`, expected: `echo 'it'"'"'s'` },
    { agent: 'an argv of plain words', rawInput: '{"command":["git","status","--short"]}', expected: 'git status --short' },
  ])('$agent', ({ rawInput, expected }) => {
    expect(toolCallCommand(detail({ rawInput }))).toBe(expected)
  })

  it.each([
    { name: 'no detail', value: null },
    { name: 'no rawInput', value: detail() },
    { name: 'no command in it', value: detail({ rawInput: '{"path":"/w/a.ts"}' }) },
    { name: 'an argv holding a non-string', value: detail({ rawInput: '{"command":["ls",1]}' }) },
    { name: 'an empty argv', value: detail({ rawInput: '{"command":[]}' }) },
    { name: 'JSON cut to its bound (no longer parses)', value: detail({ rawInput: '{"command":"npm te', truncated: true }) },
    { name: 'a JSON array', value: detail({ rawInput: '["npm","test"]' }) },
  ])('null for $name: the page shows rawInput itself', ({ value }) => {
    expect(toolCallCommand(value)).toBeNull()
  })

  it('reject kinds are the secondary choices', () => {
    expect(options.map(isRejectOption)).toEqual([false, false, true])
    expect(isRejectOption({ kind: 'REJECT_ALWAYS' })).toBe(true)
  })
})

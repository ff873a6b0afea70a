import { describe, expect, it } from 'vitest'
import { activeError } from '../../src/summary/active-error.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import type { LaunchErrorObservation, SessionObservation } from '../../src/summary/inputs.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import type { ActiveError, SessionState } from '../../src/summary/types.ts'
import { ascii, at, inputs, isWellFormed, iso, launchError, session, sessionError, utf8Bytes } from './builders.ts'

/** A session with one error `stamp` at `minutes`. */
const failing = (id: string, stamp: string, minutes: number, overrides: Partial<SessionObservation> = {}) =>
  session({ id, state: 'RUNNING', error: sessionError(stamp, minutes), ...overrides })

describe('activeError: choosing the record', () => {
  it.each<{
    name: string
    sessions: SessionObservation[]
    launch: LaunchErrorObservation | null
    expected: Pick<ActiveError, 'sessionId' | 'stamp' | 'taskRepositoryId'> | null
  }>([
    { name: 'no sessions, no launch error', sessions: [], launch: null, expected: null },
    { name: 'sessions without errors', sessions: [session({ id: 'a' }), session({ id: 'b' })], launch: null, expected: null },
    {
      name: 'one session error',
      sessions: [failing('a', 'e1', 3)],
      launch: null,
      expected: { sessionId: 'a', stamp: 'e1', taskRepositoryId: null },
    },
    {
      name: 'the newer of two session errors (newer listed last)',
      sessions: [failing('a', 'e1', 3), failing('b', 'e2', 4)],
      launch: null,
      expected: { sessionId: 'b', stamp: 'e2', taskRepositoryId: null },
    },
    {
      name: 'the newer of two session errors (newer listed first)',
      sessions: [failing('b', 'e2', 4), failing('a', 'e1', 3)],
      launch: null,
      expected: { sessionId: 'b', stamp: 'e2', taskRepositoryId: null },
    },
    {
      name: 'spec: task-owned error newer than session error → the launch error',
      sessions: [failing('a', 'e1', 3)],
      launch: launchError({ stamp: 'L', occurredAt: at(5), taskRepositoryId: 'repo-9' }),
      expected: { sessionId: null, stamp: 'L', taskRepositoryId: 'repo-9' },
    },
    {
      name: 'spec: session error newer than task-owned error → the session error',
      sessions: [failing('a', 'e1', 7)],
      launch: launchError({ stamp: 'L', occurredAt: at(5) }),
      expected: { sessionId: 'a', stamp: 'e1', taskRepositoryId: null },
    },
    {
      name: 'spec: auto-start stops before a session exists → launch error without session ID',
      sessions: [],
      launch: launchError({ stamp: 'L', taskRepositoryId: 'repo-1' }),
      expected: { sessionId: null, stamp: 'L', taskRepositoryId: 'repo-1' },
    },
    {
      name: 'task-owned launch error without a repository target',
      sessions: [],
      launch: launchError({ stamp: 'L', taskRepositoryId: null }),
      expected: { sessionId: null, stamp: 'L', taskRepositoryId: null },
    },
    {
      name: 'a cleared launch error is ignored',
      sessions: [],
      launch: launchError({ cleared: true }),
      expected: null,
    },
    {
      name: 'a cleared newer launch error leaves the older session error',
      sessions: [failing('a', 'e1', 1)],
      launch: launchError({ cleared: true, occurredAt: at(9) }),
      expected: { sessionId: 'a', stamp: 'e1', taskRepositoryId: null },
    },
    {
      name: 'a session error whose stamp equals errorClearedStamp is ignored (dismissed)',
      sessions: [failing('a', 'e1', 3, { errorClearedStamp: 'e1' })],
      launch: null,
      expected: null,
    },
    {
      name: 'a dismissed newer session error leaves the older one of another session',
      sessions: [failing('a', 'e1', 3), failing('b', 'e2', 9, { errorClearedStamp: 'e2' })],
      launch: null,
      expected: { sessionId: 'a', stamp: 'e1', taskRepositoryId: null },
    },
    {
      name: 'a dismissed newer session error leaves an older launch error',
      sessions: [failing('b', 'e2', 9, { errorClearedStamp: 'e2' })],
      launch: launchError({ stamp: 'L', occurredAt: at(2) }),
      expected: { sessionId: null, stamp: 'L', taskRepositoryId: 'repo-1' },
    },
    {
      name: 'a cleared stamp different from the current error does not hide it (a new error after dismissal)',
      sessions: [failing('a', 'e2', 3, { errorClearedStamp: 'e1' })],
      launch: null,
      expected: { sessionId: 'a', stamp: 'e2', taskRepositoryId: null },
    },
    {
      name: 'one session’s cleared stamp does not hide another session’s error with the same stamp',
      sessions: [session({ id: 'a', errorClearedStamp: 'e1' }), failing('b', 'e1', 3)],
      launch: null,
      expected: { sessionId: 'b', stamp: 'e1', taskRepositoryId: null },
    },
    {
      name: 'a launch error with an invalid occurredAt is ignored',
      sessions: [failing('a', 'e1', 1)],
      launch: launchError({ occurredAt: new Date('not a date') }),
      expected: { sessionId: 'a', stamp: 'e1', taskRepositoryId: null },
    },
  ])('$name', ({ sessions, launch, expected }) => {
    const result = activeError(sessions, launch)
    if (expected === null) expect(result).toBeNull()
    else expect(result).toMatchObject(expected)
  })

  it('a full session-owned record', () => {
    const s = session({
      id: 'a',
      state: 'RUNNING',
      error: { code: 'RATE_LIMITED', message: 'slow down', stamp: 'e1', occurredAt: at(3) },
    })
    expect(activeError([s], null)).toEqual({
      sessionId: 'a',
      taskRepositoryId: null,
      stamp: 'e1',
      occurredAt: '2026-01-01T00:03:00.000Z',
      preview: 'slow down',
      category: 'RATE_LIMITED',
      recoveryActions: ['RETRY_DEFAULT'],
    })
  })

  it('a full task-owned record (spec: auto-start stopped before creating a session)', () => {
    const launch = launchError({
      taskRepositoryId: 'repo-2',
      stamp: 'L7',
      category: 'BASE_BRANCH_MISSING',
      message: 'base branch main not found',
      recoveryActions: '["PICK_BASE_BRANCH","RETRY_DEFAULT"]',
      occurredAt: at(4),
    })
    const summary = deriveSummary(inputs({ launchError: launch }))
    expect(summary.activeError).toEqual({
      sessionId: null,
      taskRepositoryId: 'repo-2',
      stamp: 'L7',
      occurredAt: '2026-01-01T00:04:00.000Z',
      preview: 'base branch main not found',
      category: 'BASE_BRANCH_MISSING',
      recoveryActions: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT'],
    })
    expect(summary.primarySession).toBeNull()
    validateSummary(summary)
  })

  it('a launch error with a null category keeps category null', () => {
    expect(activeError([], launchError({ category: null }))?.category).toBeNull()
  })
})

describe('activeError: deterministic ties', () => {
  const sameTime = 3
  it.each<{ name: string; sessions: SessionObservation[]; launch: LaunchErrorObservation | null; sessionId: string | null; stamp: string }>([
    {
      name: 'same time: the greater stamp wins',
      sessions: [failing('a', 'e-a', sameTime), failing('b', 'e-b', sameTime)],
      launch: null,
      sessionId: 'b',
      stamp: 'e-b',
    },
    {
      name: 'same time: stamp decides before session id',
      sessions: [failing('z', 'e-a', sameTime), failing('a', 'e-b', sameTime)],
      launch: null,
      sessionId: 'a',
      stamp: 'e-b',
    },
    {
      name: 'same time and stamp: the greater session id wins',
      sessions: [failing('s-a', 'e', sameTime), failing('s-b', 'e', sameTime)],
      launch: null,
      sessionId: 's-b',
      stamp: 'e',
    },
    {
      name: 'same time and stamp: a session record beats the session-less launch record',
      sessions: [failing('s-a', 'e', sameTime)],
      launch: launchError({ stamp: 'e', occurredAt: at(sameTime) }),
      sessionId: 's-a',
      stamp: 'e',
    },
    {
      name: 'same time: a launch record with the greater stamp wins',
      sessions: [failing('s-a', 'e1', sameTime)],
      launch: launchError({ stamp: 'e2', occurredAt: at(sameTime) }),
      sessionId: null,
      stamp: 'e2',
    },
  ])('$name, whatever the input order', ({ sessions, launch, sessionId, stamp }) => {
    const forward = activeError(sessions, launch)
    const backward = activeError([...sessions].reverse(), launch)
    expect(forward).toMatchObject({ sessionId, stamp })
    expect(backward).toEqual(forward)
  })
})

describe('activeError: bounded preview and category', () => {
  // 'é' is 2 bytes, '😀' is 4 bytes (a surrogate pair in UTF-16).
  it.each([
    { name: 'short message kept', message: 'boom', preview: 'boom' },
    { name: 'exactly 512 ASCII bytes kept', message: ascii(512), preview: ascii(512) },
    { name: '513 ASCII bytes cut to 512', message: ascii(513), preview: ascii(512) },
    { name: 'é straddling the limit (511 + 2 bytes) is dropped', message: ascii(511) + 'é', preview: ascii(511) },
    { name: 'é ending exactly at 512 is kept', message: ascii(510) + 'é' + 'tail', preview: ascii(510) + 'é' },
    { name: 'emoji straddling by 1 byte (509 + 4) is dropped whole', message: ascii(509) + '😀', preview: ascii(509) },
    { name: 'emoji straddling by 3 bytes (511 + 4) is dropped whole', message: ascii(511) + '😀x', preview: ascii(511) },
    { name: 'emoji ending exactly at 512 is kept', message: ascii(508) + '😀' + 'x', preview: ascii(508) + '😀' },
    { name: 'all 2-byte characters: 256 é fit exactly', message: 'é'.repeat(300), preview: 'é'.repeat(256) },
    { name: 'all 4-byte characters: 128 emoji fit exactly', message: '😀'.repeat(200), preview: '😀'.repeat(128) },
    { name: 'mixed: odd offset then 2-byte run', message: 'a' + 'é'.repeat(300), preview: 'a' + 'é'.repeat(255) },
  ])('preview: $name', ({ message, preview }) => {
    const s = session({ id: 'a', error: sessionError('e1', 1, { message }) })
    const result = activeError([s], null)!
    expect(result.preview).toBe(preview)
    expect(utf8Bytes(result.preview)).toBeLessThanOrEqual(512)
    expect(isWellFormed(result.preview)).toBe(true)
  })

  it.each([
    { name: 'short category kept', category: 'AGENT_CRASHED', expected: 'AGENT_CRASHED' },
    { name: 'exactly 64 bytes kept', category: ascii(64), expected: ascii(64) },
    { name: '65 bytes cut to 64', category: ascii(65), expected: ascii(64) },
    { name: 'é straddling 64 (63 + 2) dropped', category: ascii(63) + 'é', expected: ascii(63) },
    { name: 'emoji straddling 64 (62 + 4) dropped whole', category: ascii(62) + '😀', expected: ascii(62) },
    { name: 'emoji ending at 64 (60 + 4) kept', category: ascii(60) + '😀' + 'zz', expected: ascii(60) + '😀' },
    { name: 'empty category kept', category: '', expected: '' },
  ])('category (session code): $name', ({ category, expected }) => {
    const s = session({ id: 'a', error: sessionError('e1', 1, { code: category }) })
    const result = activeError([s], null)!
    expect(result.category).toBe(expected)
    expect(utf8Bytes(result.category!)).toBeLessThanOrEqual(64)
    expect(isWellFormed(result.category!)).toBe(true)
  })

  it('launch error preview and category are bounded too, and the summary validates', () => {
    const launch = launchError({ message: ascii(511) + '😀', category: ascii(63) + 'é' })
    const summary = deriveSummary(inputs({ launchError: launch }))
    expect(summary.activeError?.preview).toBe(ascii(511))
    expect(summary.activeError?.category).toBe(ascii(63))
    validateSummary(summary)
  })
})

describe('activeError: recovery actions', () => {
  it.each([
    { name: 'one known action', json: '["RETRY_DEFAULT"]', expected: ['RETRY_DEFAULT'] },
    { name: 'empty list', json: '[]', expected: [] },
    {
      name: 'order kept',
      json: '["MARK_REVIEW_DONE","PICK_BASE_BRANCH","RETRY_DEFAULT"]',
      expected: ['MARK_REVIEW_DONE', 'PICK_BASE_BRANCH', 'RETRY_DEFAULT'],
    },
    {
      name: 'duplicates removed, first occurrence kept',
      json: '["PICK_BASE_BRANCH","RETRY_DEFAULT","PICK_BASE_BRANCH","RETRY_DEFAULT"]',
      expected: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT'],
    },
    {
      name: 'unknown values dropped',
      json: '["REBOOT_UNIVERSE","RETRY_DEFAULT","retry_default"]',
      expected: ['RETRY_DEFAULT'],
    },
    { name: 'non-string values dropped', json: '[1,null,{"a":1},["RETRY_DEFAULT"],"RESUME_SESSION"]', expected: ['RESUME_SESSION'] },
    {
      name: 'all four known actions → first three',
      json: '["RETRY_DEFAULT","PICK_BASE_BRANCH","MARK_REVIEW_DONE","RESUME_SESSION"]',
      expected: ['RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'MARK_REVIEW_DONE'],
    },
    {
      name: 'duplicates do not use up the three slots',
      json: '["RETRY_DEFAULT","RETRY_DEFAULT","RETRY_DEFAULT","PICK_BASE_BRANCH","X","MARK_REVIEW_DONE","RESUME_SESSION"]',
      expected: ['RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'MARK_REVIEW_DONE'],
    },
  ])('launch recoveryActions $name', ({ json, expected }) => {
    const summary = deriveSummary(inputs({ launchError: launchError({ recoveryActions: json }) }))
    expect(summary.activeError?.recoveryActions).toEqual(expected)
    validateSummary(summary)
  })

  it.each([
    { name: 'not JSON', json: 'RETRY_DEFAULT' },
    { name: 'truncated JSON', json: '["RETRY_DEFAULT"' },
    { name: 'empty string', json: '' },
    { name: 'an object', json: '{"actions":["RETRY_DEFAULT"]}' },
    { name: 'a string', json: '"RETRY_DEFAULT"' },
    { name: 'null', json: 'null' },
    { name: 'a number', json: '3' },
  ])('malformed launch recoveryActions ($name) → the launch record is ignored', ({ json }) => {
    expect(activeError([], launchError({ recoveryActions: json }))).toBeNull()
    // A (older) session error can still be chosen instead of the newer malformed launch record.
    const older = failing('a', 'e1', 1)
    expect(activeError([older], launchError({ recoveryActions: json, occurredAt: at(9) }))).toMatchObject({
      sessionId: 'a',
      stamp: 'e1',
    })
  })

  it.each<{ state: SessionState; expected: string[] }>([
    { state: 'FAILED', expected: ['RESUME_SESSION'] },
    { state: 'CANCELLED', expected: ['RESUME_SESSION'] },
    { state: 'COMPLETED', expected: ['RESUME_SESSION'] },
    { state: 'RUNNING', expected: ['RETRY_DEFAULT'] },
    { state: 'WAITING_FOR_INPUT', expected: ['RETRY_DEFAULT'] },
    { state: 'IDLE', expected: ['RETRY_DEFAULT'] },
    { state: 'STARTING', expected: ['RETRY_DEFAULT'] },
    { state: 'CREATED', expected: ['RETRY_DEFAULT'] },
  ])('session in $state → $expected', ({ state, expected }) => {
    expect(activeError([failing('a', 'e1', 1, { state })], null)?.recoveryActions).toEqual(expected)
  })
})

describe('activeError in deriveSummary', () => {
  it('spec: task-owned and session-owned errors → the newer active record, and it validates', () => {
    const sessions = [failing('a', 'e1', 2, { state: 'FAILED' })]
    const newerLaunch = deriveSummary(inputs({ sessions, launchError: launchError({ stamp: 'L', occurredAt: at(3) }) }))
    expect(newerLaunch.activeError).toMatchObject({ sessionId: null, stamp: 'L', occurredAt: iso(3) })
    validateSummary(newerLaunch)
    const olderLaunch = deriveSummary(inputs({ sessions, launchError: launchError({ stamp: 'L', occurredAt: at(1) }) }))
    expect(olderLaunch.activeError).toMatchObject({ sessionId: 'a', stamp: 'e1', occurredAt: iso(2), recoveryActions: ['RESUME_SESSION'] })
    validateSummary(olderLaunch)
  })
})

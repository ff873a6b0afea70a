import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { observeRepository } from '../../src/git/observe.ts'
import { FIXTURES } from './observation-fixtures.ts'

// Every `git` the observation starts goes through a wrapper on PATH that logs the call and runs
// the real git, so the count is of processes, whatever code path started them.

// Shapes the three-process path hands to the old observation (rare, and results first), and the one
// whose first look asks Git for attributes: each documented in src/git/observe.ts.
const FALLBACKS = new Set(['localPath below the top of the work tree', 'criss-cross history: two merge bases', 'unrelated histories: no merge base'])
const ASKS_ATTRIBUTES_ONCE = new Set([
  'attributes: binary, forced text, CRLF text',
  'info/attributes marks untracked files binary',
  'a .gitattributes deleted from the work tree but still in the index',
])

describe('one repository observation starts at most three Git processes (real git, counted through a PATH wrapper)', () => {
  const shim = mkdtempSync(path.join(os.tmpdir(), 'tss-git-shim-'))
  const log = path.join(shim, 'calls.log')
  const originalPath = process.env.PATH
  beforeAll(() => {
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
    writeFileSync(path.join(shim, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${realGit}' "$@"\n`)
    chmodSync(path.join(shim, 'git'), 0o755)
  })
  afterAll(() => {
    process.env.PATH = originalPath
    rmSync(shim, { recursive: true, force: true })
  })

  /** The git command lines one observation ran. */
  async function calls(dir: string, base: string | null): Promise<string[]> {
    writeFileSync(log, '')
    process.env.PATH = `${shim}${path.delimiter}${originalPath}`
    try {
      await observeRepository(dir, base).catch(() => undefined)
    } finally {
      process.env.PATH = originalPath
    }
    return readFileSync(log, 'utf8').split('\n').filter(Boolean)
  }

  it.each(FIXTURES.filter((f) => !FALLBACKS.has(f.name)))('$name', async ({ name, build }) => {
    const { dir, base } = build()
    const first = await calls(dir, base)
    if (!ASKS_ATTRIBUTES_ONCE.has(name)) expect(first.length, first.join('\n')).toBeLessThanOrEqual(3)
    const again = await calls(dir, base)
    expect(again.length, again.join('\n')).toBeLessThanOrEqual(3)
  })

  it('counts what it claims to: the wrapper sees the old observation’s eight-plus processes', async () => {
    const { observeRepositoryLegacy } = await import('../../src/git/legacy-observe.ts')
    const { dir, base } = FIXTURES[0]!.build()
    writeFileSync(log, '')
    process.env.PATH = `${shim}${path.delimiter}${originalPath}`
    try {
      await observeRepositoryLegacy(dir, base)
    } finally {
      process.env.PATH = originalPath
    }
    expect(readFileSync(log, 'utf8').split('\n').filter(Boolean).length).toBe(9)
  })
})

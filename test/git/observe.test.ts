import { rmSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { GitObservationError, observeRepository } from '../../src/git/observe.ts'
import { observeRepositoryLegacy } from '../../src/git/legacy-observe.ts'
import { gitRepo } from '../support/git-repo.ts'
import { FIXTURES, type Expected } from './observation-fixtures.ts'

/** What an observation came to, errors included, in the terms of the fixtures' expectations. */
async function outcome(observe: typeof observeRepository, dir: string, base: string | null): Promise<Expected> {
  try {
    return await observe(dir, base)
  } catch (error) {
    return error instanceof GitObservationError ? 'not-a-repository' : 'throws'
  }
}

describe('observeRepository (git CLI on real repositories)', () => {
  it('counts committed and working-tree changes against the base, untracked files included, and ahead/behind', async () => {
    const repo = gitRepo({ 'a.txt': 'one\ntwo\nthree\n' })
    repo.git('checkout', '-q', '-b', 'feature')
    repo.write('a.txt', 'one\nTWO\nthree\nfour\n')
    repo.commitAll('edit a') // feature is 1 ahead
    repo.git('checkout', '-q', 'main')
    repo.write('c.txt', 'main only\n')
    repo.commitAll('main moves') // and 1 behind; c.txt is not the task's change
    repo.git('checkout', '-q', 'feature')
    repo.write('a.txt', 'one\nTWO\nthree\nfour\nfive\n') // working tree: one more line
    repo.write('b.txt', 'x\ny\n') // untracked: two lines
    expect(await observeRepository(repo.dir, 'main')).toEqual({
      additions: 5,
      deletions: 1,
      changedFiles: 2,
      ahead: 1,
      behind: 1,
      comparisonUnavailable: false,
    })
  })

  it('reports a missing base branch as unavailable instead of a clean tree', async () => {
    const repo = gitRepo()
    repo.write('README.md', 'changed\n')
    expect(await observeRepository(repo.dir, 'no-such-branch')).toBe('base-unavailable')
  })

  it('throws for a folder that is not a repository', async () => {
    const repo = gitRepo()
    rmSync(path.join(repo.dir, '.git'), { recursive: true, force: true })
    await expect(observeRepository(repo.dir, 'main')).rejects.toBeInstanceOf(GitObservationError)
  })
})

// The expectations were captured from the observation before it was cut to three Git processes;
// the old observation is kept (legacy-observe.ts) and must still give them too.
describe('the three-process observation gives the old observation’s results', () => {
  it.each(FIXTURES)('$name', async ({ build, expected }) => {
    const { dir, base } = build()
    expect(await outcome(observeRepository, dir, base)).toEqual(expected)
    expect(await outcome(observeRepository, dir, base)).toEqual(expected) // again, with what the first run kept
    expect(await outcome(observeRepositoryLegacy, dir, base)).toEqual(expected)
  })
})

// Real repositories in the shapes a Git observation meets, built fresh for each test. The
// expected totals were captured from the observation before it was cut to three Git processes
// (8 Git processes + 1 per untracked file), run on these same fixtures.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { RepositoryObservation } from '../../src/git/observe.ts'
import { gitRepo } from '../support/git-repo.ts'

type Repo = ReturnType<typeof gitRepo>
export type Expected = RepositoryObservation | 'base-unavailable' | 'not-a-repository' | 'throws'
export interface Fixture {
  name: string
  build: () => { dir: string; base: string | null }
  expected: Expected
}

const NUL_LATE = `${'x'.repeat(8100)}\0tail\n` // a NUL past git's 8,000-byte binary probe: text
const totals = (additions: number, deletions: number, changedFiles: number, ahead = 0, behind = 0): RepositoryObservation => ({
  additions,
  deletions,
  changedFiles,
  ahead,
  behind,
  comparisonUnavailable: false,
})

/** main with a.txt, feature 1 ahead and 1 behind, a working-tree edit: the common shape. */
function feature(files: Record<string, string> = {}): Repo {
  const repo = gitRepo({ 'a.txt': 'one\ntwo\nthree\n', ...files })
  repo.git('checkout', '-q', '-b', 'feature')
  repo.write('a.txt', 'one\nTWO\nthree\nfour\n')
  repo.commitAll('edit a')
  repo.git('checkout', '-q', 'main')
  repo.write('c.txt', 'main only\n')
  repo.commitAll('main moves')
  repo.git('checkout', '-q', 'feature')
  repo.write('a.txt', 'one\nTWO\nthree\nfour\nfive\n')
  return repo
}

const at = (repo: Repo, base: string | null = 'main') => ({ dir: repo.dir, base })

export const FIXTURES: Fixture[] = [
  { name: 'feature branch, working edit, untracked file, no upstream', expected: totals(5, 1, 2, 1, 1), build: () => {
    const repo = feature()
    repo.write('b.txt', 'x\ny\n')
    return at(repo)
  } },
  { name: 'clean tree on the base', expected: totals(0, 0, 0), build: () => at(gitRepo()) },
  { name: 'baseBranch null means main', expected: totals(3, 1, 1, 1, 1), build: () => at(feature(), null) },
  { name: 'no commits yet', expected: 'base-unavailable', build: () => {
    const repo = gitRepo()
    repo.git('checkout', '-q', '--orphan', 'fresh')
    repo.git('rm', '-rqf', '--cached', '.')
    return at(repo)
  } },
  { name: 'missing base branch', expected: 'base-unavailable', build: () => {
    const repo = gitRepo()
    repo.write('README.md', 'changed\n')
    return at(repo, 'no-such-branch')
  } },
  { name: 'base names a tree, not a commit', expected: 'base-unavailable', build: () => at(gitRepo(), 'main^{tree}') },
  { name: 'not a repository', expected: 'not-a-repository', build: () => {
    const repo = gitRepo()
    rmSync(path.join(repo.dir, '.git'), { recursive: true, force: true })
    return at(repo)
  } },
  { name: 'folder that does not exist', expected: 'not-a-repository', build: () => ({ dir: path.join(os.tmpdir(), 'tss-git-missing', String(process.pid)), base: 'main' }) },
  { name: 'detached HEAD with an edit', expected: totals(3, 1, 1, 1, 1), build: () => {
    const repo = feature()
    repo.git('checkout', '-q', '--detach')
    return at(repo)
  } },
  { name: 'upstream set: ahead/behind against it, changes against the base', expected: totals(3, 1, 1, 1, 0), build: () => {
    const repo = feature()
    repo.git('branch', '-q', 'up', 'main~1')
    repo.git('branch', '-q', '--set-upstream-to=up')
    return at(repo)
  } },
  { name: 'upstream gone: ahead/behind against the base', expected: totals(3, 1, 1, 1, 1), build: () => {
    const repo = feature()
    repo.git('branch', '-q', 'up', 'main')
    repo.git('branch', '-q', '--set-upstream-to=up')
    repo.git('branch', '-q', '-D', 'up')
    return at(repo)
  } },
  { name: 'untracked: empty, no final newline, CRLF, nested folder, ignored, spaces', expected: totals(9, 1, 6, 1, 1), build: () => {
    const repo = feature({ '.gitignore': 'ignored/\n*.log\n' })
    repo.write('empty.txt', '')
    repo.write('partial.txt', 'a\nb')
    repo.write('crlf.txt', 'a\r\nb\r\n')
    mkdirSync(path.join(repo.dir, 'deep', 'er'), { recursive: true })
    repo.write('deep/er/x.txt', 'x\n')
    repo.write('with space.txt', 'a\n')
    mkdirSync(path.join(repo.dir, 'ignored'))
    repo.write('ignored/skip.txt', 'no\n')
    repo.write('skip.log', 'no\n')
    return at(repo)
  } },
  { name: 'untracked: binary, NUL past 8,000 bytes, symlink, non-ASCII and quoted names', expected: totals(5, 1, 6, 1, 1), build: () => {
    const repo = feature()
    repo.write('bin.dat', 'a\0b\n')
    repo.write('late-nul.txt', NUL_LATE)
    symlinkSync('a.txt', path.join(repo.dir, 'link'))
    repo.write('ä.txt', 'counted by nobody\n')
    repo.write('q"t.txt', 'x\n')
    return at(repo)
  } },
  { name: 'untracked nested repository', expected: totals(3, 1, 2, 1, 1), build: () => {
    const repo = feature()
    const nested = gitRepo({ 'n.txt': 'n\n' })
    rmSync(path.join(repo.dir, 'nested'), { recursive: true, force: true })
    mkdirSync(path.join(repo.dir, 'nested'))
    nested.git('clone', '-q', nested.dir, path.join(repo.dir, 'nested'))
    return at(repo)
  } },
  { name: 'rename, staged new file, deletion, intent-to-add, binary edit', expected: totals(8, 4, 6, 1, 1), build: () => {
    const repo = feature({ 'img.bin': 'x\0y', 'gone.txt': 'g\n' })
    repo.git('mv', 'a.txt', 'moved.txt')
    repo.write('staged.txt', 's\n')
    repo.git('add', 'staged.txt')
    repo.git('rm', '-q', 'gone.txt')
    repo.write('ita.txt', 'i\nj\n')
    repo.git('add', '-N', 'ita.txt')
    repo.write('img.bin', 'x\0z')
    return at(repo)
  } },
  { name: 'file removed from the index but kept on disk', expected: totals(3, 4, 2, 1, 1), build: () => {
    const repo = feature({ 'kept.txt': '1\n2\n3\n' })
    repo.git('rm', '-q', '--cached', 'kept.txt')
    return at(repo)
  } },
  { name: 'attributes: binary, forced text, CRLF text', expected: totals(8, 1, 6, 1, 1), build: () => {
    const repo = feature({ '.gitattributes': '*.bin binary\n*.txtnul diff\n* text=auto\n' })
    repo.write('plain.bin', 'looks\nlike\ntext\n')
    repo.write('forced.txtnul', 'a\0b\nc\n')
    repo.write('sub.txt', 'a\r\nb\r\n')
    mkdirSync(path.join(repo.dir, 'd'))
    writeFileSync(path.join(repo.dir, 'd', '.gitattributes'), '*.md -diff\n')
    repo.write('d/x.md', 'x\n')
    return at(repo)
  } },
  { name: 'info/attributes marks untracked files binary', expected: totals(0, 0, 2, 1, 1), build: () => {
    const repo = feature()
    writeFileSync(path.join(repo.dir, '.git', 'info', 'attributes'), '*.txt -diff\n')
    repo.write('new.txt', 'a\nb\n')
    return at(repo)
  } },
  { name: 'a .gitattributes deleted from the work tree but still in the index', expected: totals(5, 1, 2, 2, 1), build: () => {
    const repo = feature({ '.gitattributes': '*.bin binary\n' })
    mkdirSync(path.join(repo.dir, 'd'))
    repo.write('d/.gitattributes', '*.txt -diff\n')
    repo.commitAll('attributes')
    rmSync(path.join(repo.dir, 'd', '.gitattributes')) // `git diff --no-index` reads no index: it no longer applies
    repo.write('d/new.txt', 'a\nb\n')
    return at(repo)
  } },
  { name: 'large untracked files: lines and CRLF across read chunks, a late NUL', expected: totals(140016, 1, 4, 1, 1), build: () => {
    const repo = feature()
    repo.write('big.txt', `${'0123456789abcde\n'.repeat(40_000)}no newline`)
    repo.write('big-crlf.txt', `${'x'.repeat(256 * 1024 - 1)}\r\n${'y\r\n'.repeat(10)}`)
    repo.write('big-nul.txt', `${'z\n'.repeat(100_000)}\0`)
    return at(repo)
  } },
  { name: 'localPath below the top of the work tree', expected: totals(4, 1, 2, 1, 1), build: () => {
    const repo = feature()
    mkdirSync(path.join(repo.dir, 'pkg'))
    repo.write('pkg/new.txt', 'p\n')
    repo.write('top.txt', 'not seen from pkg\n')
    return { dir: path.join(repo.dir, 'pkg'), base: 'main' }
  } },
  { name: 'linked work tree (.git is a file)', expected: totals(4, 1, 2, 1, 1), build: () => {
    const repo = feature()
    const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'tss-git-wt-')), 'wt')
    repo.git('worktree', 'add', '-q', '--detach', dir, 'feature')
    writeFileSync(path.join(dir, 'a.txt'), 'one\nTWO\nthree\nfour\nfive\n')
    writeFileSync(path.join(dir, 'u.txt'), 'u\n')
    return { dir, base: 'main' }
  } },
  { name: 'a file named like the base branch', expected: totals(4, 1, 2, 1, 1), build: () => {
    const repo = feature()
    repo.write('main', 'm\n')
    return at(repo)
  } },
  { name: 'criss-cross history: two merge bases', expected: totals(2, 0, 2, 1, 1), build: () => {
    const repo = gitRepo({ 'f.txt': 'f\n' })
    repo.git('checkout', '-q', '-b', 'side')
    repo.write('s.txt', 's\n')
    repo.commitAll('s')
    repo.git('checkout', '-q', 'main')
    repo.write('m.txt', 'm\n')
    repo.commitAll('m')
    repo.git('branch', '-q', 'main2')
    repo.git('merge', '-q', '--no-edit', 'side')
    repo.git('checkout', '-q', 'side')
    repo.git('merge', '-q', '--no-edit', 'main2')
    repo.write('w.txt', 'w\n')
    return at(repo)
  } },
  { name: 'unrelated histories: no merge base', expected: 'throws', build: () => {
    const repo = gitRepo()
    repo.git('checkout', '-q', '--orphan', 'other')
    repo.commitAll('unrelated')
    return at(repo)
  } },
]

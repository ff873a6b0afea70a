import { lstat } from 'node:fs/promises'
import path from 'node:path'
import type { GitTotals } from '../summary/types.ts'
import { git } from './git-cli.ts'
import { addNumstat, aheadBehind, observeFromMergeBase, observeRepositoryLegacy, resolvesToCommit } from './legacy-observe.ts'
import { untrackedLines } from './untracked-lines.ts'

export { GitObservationError } from './observation-error.ts'

/** The numbers of one working tree: the same fields the summary totals. */
export type RepositoryObservation = GitTotals

// Reads only: no index refresh written back, no fsmonitor hook process.
const READ_ONLY = ['--no-optional-locks', '-c', 'core.fsmonitor=false']

/**
 * Whether Git run in `localPath` finds its repository right there (a `.git` folder or gitfile),
 * so paths from the top of the work tree are the paths the old observation saw from its cwd. A
 * folder below the top (or one Git would reach through GIT_DIR) takes the old path, unchanged.
 */
async function atTopOfWorkTree(localPath: string): Promise<boolean> {
  if (process.env.GIT_DIR || process.env.GIT_WORK_TREE) return false
  const dotGit = path.join(localPath, '.git')
  const stats = await lstat(dotGit).catch(() => undefined)
  if (stats?.isFile()) return true
  if (!stats?.isDirectory()) return false
  const parts = await Promise.all(['HEAD', 'objects', 'refs'].map((p) => lstat(path.join(dotGit, p)).then(() => true, () => false)))
  return parts.every(Boolean)
}

interface Status {
  unborn: boolean
  /** [ahead, behind] against an upstream that exists; absent without one (or with a gone one). */
  upstream?: [number, number]
  /** Untracked files as `git ls-files --others --exclude-standard` prints them from the top. */
  untracked: string[]
}

function parseStatus(out: string): Status {
  const status: Status = { unborn: false, untracked: [] }
  for (const line of out.split('\n')) {
    if (line.startsWith('? ')) status.untracked.push(line.slice(2))
    else if (line === '# branch.oid (initial)') status.unborn = true
    else if (line.startsWith('# branch.ab ')) {
      const [, ahead, behind] = /^# branch\.ab \+(\d+) -(\d+)$/.exec(line) ?? []
      if (ahead !== undefined) status.upstream = [Number(ahead), Number(behind)]
    }
  }
  return status
}

/**
 * One observation of a working tree with the git CLI: additions, deletions and changed files
 * against the merge base with the base branch (working tree and untracked files included), and
 * ahead / behind against the upstream (or the base). `null` numbers never stand for a clean
 * tree: when the base cannot be resolved, `comparisonUnavailable` is set and the caller keeps
 * its last good totals. Throws GitObservationError when the folder is not a usable repository.
 *
 * At most three Git processes: `git status --porcelain=v2 --branch` (untracked files, an unborn
 * HEAD, ahead/behind against an upstream), `git diff --numstat --merge-base <base>` (the merge
 * base and the changes in one), and `git rev-list --left-right --count` only when there is no
 * upstream. Untracked files' lines are counted here rather than by a Git process per file
 * (untracked-lines.ts). The results are the old observation's (legacy-observe.ts), which still
 * answers the rare shapes this path does not cover, at its old cost: a localPath below the top of
 * its work tree, a base with several merge bases or none, untracked entries Git itself must count
 * (special files, filter or working-tree-encoding attributes). One more process, `git check-attr`,
 * runs when an attribute file names diff, binary or filter attributes and an untracked file is new
 * since the last look at that tree.
 */
export async function observeRepository(localPath: string, baseBranch: string | null): Promise<RepositoryObservation | 'base-unavailable'> {
  if (!(await atTopOfWorkTree(localPath))) return observeRepositoryLegacy(localPath, baseBranch)
  const base = baseBranch ?? 'main'
  let status: Status
  try {
    const args = ['status', '--porcelain=v2', '--branch', '--ahead-behind', '--untracked-files=all', '--ignore-submodules=all', '--no-renames']
    status = parseStatus(await git(localPath, [...READ_ONLY, ...args]))
  } catch {
    return observeRepositoryLegacy(localPath, baseBranch) // not usable after all: the old path tells how, exactly
  }
  if (status.unborn) return 'base-unavailable'
  let numstat: string
  try {
    numstat = await git(localPath, [...READ_ONLY, 'diff', '--numstat', '--merge-base', base, '--'])
  } catch {
    // No such base, or no single merge base: the first is a steady state, answered in one more process.
    if (!(await resolvesToCommit(localPath, base))) return 'base-unavailable'
    return observeFromMergeBase(localPath, base)
  }
  const totals = { additions: 0, deletions: 0, files: new Set<string>() }
  addNumstat(numstat, totals)
  const untracked = status.untracked.filter((file) => !totals.files.has(file))
  for (const file of untracked) totals.files.add(file)
  totals.additions += await untrackedLines(localPath, untracked)
  const [ahead, behind] = status.upstream ?? (await aheadBehind(localPath, base))
  return { additions: totals.additions, deletions: totals.deletions, changedFiles: totals.files.size, ahead, behind, comparisonUnavailable: false }
}

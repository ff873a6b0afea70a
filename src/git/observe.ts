import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { GitTotals } from '../summary/types.ts'

const run = promisify(execFile)

/** The numbers of one working tree: the same fields the summary totals. */
export type RepositoryObservation = GitTotals

export class GitObservationError extends Error {}

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', cwd, ...args], { timeout: 15_000, maxBuffer: 32 * 1024 * 1024 })
  return stdout
}

async function resolves(cwd: string, ref: string): Promise<boolean> {
  try {
    await git(cwd, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
    return true
  } catch {
    return false
  }
}

/** Lines of an untracked file (binary files count as changed with no lines). */
async function untrackedLines(cwd: string, file: string): Promise<number> {
  const out = await git(cwd, ['diff', '--no-index', '--numstat', '/dev/null', file]).catch((error: { stdout?: string }) => error.stdout ?? '')
  const added = Number(out.split('\t')[0])
  return Number.isFinite(added) ? added : 0
}

/**
 * One observation of a working tree with the git CLI: additions, deletions and changed files
 * against the merge base with the base branch (working tree and untracked files included), and
 * ahead / behind against the upstream (or the base). `null` numbers never stand for a clean
 * tree: when the base cannot be resolved, `comparisonUnavailable` is set and the caller keeps
 * its last good totals. Throws GitObservationError when the folder is not a usable repository.
 */
export async function observeRepository(localPath: string, baseBranch: string | null): Promise<RepositoryObservation | 'base-unavailable'> {
  try {
    await git(localPath, ['rev-parse', '--git-dir'])
  } catch {
    throw new GitObservationError(`not a git repository: ${localPath}`)
  }
  const base = baseBranch ?? 'main'
  if (!(await resolves(localPath, base)) || !(await resolves(localPath, 'HEAD'))) return 'base-unavailable'
  const mergeBase = (await git(localPath, ['merge-base', 'HEAD', base])).trim()
  let additions = 0
  let deletions = 0
  const files = new Set<string>()
  for (const line of (await git(localPath, ['diff', '--numstat', mergeBase])).split('\n')) {
    const [added, deleted, file] = line.split('\t')
    if (!file) continue
    files.add(file)
    additions += Number(added) || 0 // "-" for binary files
    deletions += Number(deleted) || 0
  }
  for (const file of (await git(localPath, ['ls-files', '--others', '--exclude-standard'])).split('\n')) {
    if (!file || files.has(file)) continue
    files.add(file)
    additions += await untrackedLines(localPath, file)
  }
  const upstream = await git(localPath, ['rev-parse', '--abbrev-ref', '--symbolic-full-name', '@{upstream}'])
    .then((s) => s.trim())
    .catch(() => base)
  const [ahead, behind] = (await git(localPath, ['rev-list', '--left-right', '--count', `HEAD...${upstream}`])).trim().split(/\s+/).map(Number)
  return { additions, deletions, changedFiles: files.size, ahead: ahead ?? 0, behind: behind ?? 0, comparisonUnavailable: false }
}

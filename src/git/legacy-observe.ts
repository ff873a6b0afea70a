import { git } from './git-cli.ts'
import type { RepositoryObservation } from './observe.ts'
import { GitObservationError } from './observation-error.ts'

// The observation as it was before it was cut to three Git processes (8 + one per untracked file).
// It stays as the definition of the result: observe.ts falls back to it, or to parts of it, in the
// rare shapes its fast path does not cover (a localPath below the top of its work tree, criss-cross
// merge bases, untracked entries that are not regular files), and the tests compare the two.

/** Whether `ref` names a commit (one Git process). */
export async function resolvesToCommit(cwd: string, ref: string): Promise<boolean> {
  try {
    await git(cwd, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
    return true
  } catch {
    return false
  }
}

/** Lines of an untracked file (binary files count as changed with no lines). */
export async function untrackedLinesByGit(cwd: string, file: string): Promise<number> {
  const out = await git(cwd, ['diff', '--no-index', '--numstat', '/dev/null', file]).catch((error: { stdout?: string }) => error.stdout ?? '')
  const added = Number(out.split('\t')[0])
  return Number.isFinite(added) ? added : 0
}

/** Adds `git diff --numstat` output to the totals; its file names are the keys untracked files are deduplicated against. */
export function addNumstat(out: string, totals: { additions: number; deletions: number; files: Set<string> }): void {
  for (const line of out.split('\n')) {
    const [added, deleted, file] = line.split('\t')
    if (!file) continue
    totals.files.add(file)
    totals.additions += Number(added) || 0 // "-" for binary files
    totals.deletions += Number(deleted) || 0
  }
}

/** `git rev-list --left-right --count HEAD...<other>` as [ahead, behind]. */
export async function aheadBehind(cwd: string, other: string): Promise<[number, number]> {
  const [ahead, behind] = (await git(cwd, ['rev-list', '--left-right', '--count', `HEAD...${other}`])).trim().split(/\s+/).map(Number)
  return [ahead ?? 0, behind ?? 0]
}

/** The numbers against `mergeBase`, from `git merge-base` on (the tail of the old observation, for criss-cross histories). */
export async function observeFromMergeBase(localPath: string, base: string): Promise<RepositoryObservation> {
  const mergeBase = (await git(localPath, ['merge-base', 'HEAD', base])).trim()
  const totals = { additions: 0, deletions: 0, files: new Set<string>() }
  addNumstat(await git(localPath, ['diff', '--numstat', mergeBase]), totals)
  for (const file of (await git(localPath, ['ls-files', '--others', '--exclude-standard'])).split('\n')) {
    if (!file || totals.files.has(file)) continue
    totals.files.add(file)
    totals.additions += await untrackedLinesByGit(localPath, file)
  }
  const upstream = await git(localPath, ['rev-parse', '--abbrev-ref', '--symbolic-full-name', '@{upstream}'])
    .then((s) => s.trim())
    .catch(() => base)
  const [ahead, behind] = await aheadBehind(localPath, upstream)
  return { additions: totals.additions, deletions: totals.deletions, changedFiles: totals.files.size, ahead, behind, comparisonUnavailable: false }
}

/** The old observation, whole. */
export async function observeRepositoryLegacy(localPath: string, baseBranch: string | null): Promise<RepositoryObservation | 'base-unavailable'> {
  try {
    await git(localPath, ['rev-parse', '--git-dir'])
  } catch {
    throw new GitObservationError(`not a git repository: ${localPath}`)
  }
  const base = baseBranch ?? 'main'
  if (!(await resolvesToCommit(localPath, base)) || !(await resolvesToCommit(localPath, 'HEAD'))) return 'base-unavailable'
  return observeFromMergeBase(localPath, base)
}

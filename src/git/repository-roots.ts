import { realpath, stat } from 'node:fs/promises'
import path from 'node:path'

/** The reason never says whether a refused path exists: that would let a caller probe the disk. */
export type LocalPathCheck = { ok: true; realPath: string } | { ok: false; reason: 'not-absolute' | 'not-allowed' }

function contains(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate)
  return relative === '' || (!path.isAbsolute(relative) && relative !== '..' && !relative.startsWith(`..${path.sep}`))
}

async function existingDirectory(candidate: string): Promise<string | undefined> {
  try {
    const real = await realpath(candidate)
    return (await stat(real)).isDirectory() ? real : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether a task repository's localPath may be observed: compared by real path (symlinks and
 * `..` resolved, on the roots too), so a link inside a root cannot point the Git monitor at a
 * directory outside every root. The real path is what gets stored, so retargeting a symlink
 * later does not move the observed directory either.
 */
export async function checkLocalPath(localPath: string, roots: readonly string[]): Promise<LocalPathCheck> {
  if (!path.isAbsolute(localPath)) return { ok: false, reason: 'not-absolute' }
  const [real, ...realRoots] = await Promise.all([existingDirectory(localPath), ...roots.map(existingDirectory)])
  if (real && realRoots.some((root) => root !== undefined && contains(root, real))) return { ok: true, realPath: real }
  return { ok: false, reason: 'not-allowed' }
}

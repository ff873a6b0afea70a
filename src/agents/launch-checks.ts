import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Whether `branch` names a commit in the repository at `localPath` (git CLI, no network). */
export async function branchExists(localPath: string, branch: string): Promise<boolean> {
  try {
    await run('git', ['-C', localPath, 'rev-parse', '--verify', '--quiet', `${branch}^{commit}`], { timeout: 10_000 })
    return true
  } catch {
    return false
  }
}

import { mkdirSync, statSync } from 'node:fs'
import path from 'node:path'

/**
 * `mkdir -p` that tries each missing folder once. Node's own `{ recursive: true }` loops forever
 * (a core at full spin, no output) where a folder exists but answers ENOENT for a new child, as
 * procfs does: mkdir('/proc/nope') ENOENT, mkdir('/proc') EEXIST, mkdir('/proc/nope') ENOENT, …,
 * in the sync and the promise version alike. Here every error but a concurrent EEXIST is final.
 */
export function makeFolderSync(folder: string): void {
  const missing: string[] = []
  for (let current = path.resolve(folder); ; current = path.dirname(current)) {
    const found = existingEntry(current)
    if (found === 'folder') break
    if (found === 'other') throw Object.assign(new Error(`ENOTDIR: not a folder, mkdir '${current}'`), { code: 'ENOTDIR', path: current })
    missing.push(current)
    if (path.dirname(current) === current) break
  }
  for (const each of missing.reverse()) {
    try {
      mkdirSync(each)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}

function existingEntry(entry: string): 'folder' | 'other' | undefined {
  try {
    return statSync(entry).isDirectory() ? 'folder' : 'other'
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

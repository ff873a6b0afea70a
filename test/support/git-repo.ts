import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** A real git repository in a temp folder, with helpers to change it. */
export function gitRepo(files: Record<string, string> = { 'README.md': 'hello\n' }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-git-'))
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { encoding: 'utf8' })
  git('init', '-q', '-b', 'main')
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content)
  git('add', '-A')
  git('commit', '-qm', 'init')
  return {
    dir,
    git,
    write(name: string, content: string) {
      writeFileSync(path.join(dir, name), content)
    },
    commitAll(message: string) {
      git('add', '-A')
      git('commit', '-qm', message)
    },
  }
}

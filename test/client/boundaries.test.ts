import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const repo = path.resolve(import.meta.dirname, '../..')
const sdk = path.join(repo, 'packages/client')
const web = path.join(repo, 'src/web')
const manifest = JSON.parse(readFileSync(path.join(sdk, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
}

const sources = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => path.join(dir, f))

/** Every module specifier a source file imports (static, dynamic and re-exports). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!)
}

/** `zustand/vanilla` belongs to `zustand`, `@scope/name/sub` to `@scope/name`. */
const packageOf = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/')

describe('what the client half may import', () => {
  it('the SDK package imports only itself and what its package.json declares: nothing of the server', () => {
    const declared = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)])
    for (const file of sources(path.join(sdk, 'src')))
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.')) expect(path.resolve(path.dirname(file), spec).startsWith(path.join(sdk, 'src') + path.sep), `${file}: ${spec}`).toBe(true)
        else expect(declared, `${file}: ${spec}`).toContain(packageOf(spec))
      }
  })

  it('only the /react subpath imports react (the core runs in Node without it)', () => {
    for (const file of sources(path.join(sdk, 'src')).filter((f) => !f.includes(`${path.sep}react${path.sep}`)))
      for (const spec of specifiers(file)) expect(['react', 'zustand'], `${file}: ${spec}`).not.toContain(spec)
  })

  it('src/web imports the SDK as the package and the page libraries, never the server', () => {
    for (const file of sources(web))
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.')) expect(path.resolve(path.dirname(file), spec).startsWith(web + path.sep), `${file}: ${spec}`).toBe(true)
        // diff (jsdiff): the page's unified view of an agent's proposed edit.
        else expect(['react', 'react-dom/client', 'zustand', 'diff', '@task-status/client', '@task-status/client/react'], `${file}: ${spec}`).toContain(spec)
      }
  })
})

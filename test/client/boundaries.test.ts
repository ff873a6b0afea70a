import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const root = path.resolve(import.meta.dirname, '../../src')
const sources = (dir: string): string[] =>
  readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => path.join(dir, f))

/** Every module specifier a source file imports (static, dynamic and re-exports). */
function specifiers(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!)
}

describe('what the client half may import', () => {
  it('src/client imports only itself and graphql, graphql-ws, zustand and immer: nothing of the server', () => {
    for (const file of sources('client'))
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.')) expect(path.resolve(root, path.dirname(file), spec).startsWith(path.join(root, 'client') + path.sep), `${file}: ${spec}`).toBe(true)
        else expect(['graphql', 'graphql-ws', 'zustand/vanilla', 'immer', '@graphql-typed-document-node/core'], `${file}: ${spec}`).toContain(spec)
      }
  })

  it('src/web imports the client SDK and the page libraries, never the server', () => {
    for (const file of sources('web'))
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.')) {
          const target = path.resolve(root, path.dirname(file), spec)
          expect([path.join(root, 'web'), path.join(root, 'client')].some((dir) => target.startsWith(dir + path.sep)), `${file}: ${spec}`).toBe(true)
        } else expect(['react', 'react-dom/client', 'zustand'], `${file}: ${spec}`).toContain(spec)
      }
  })
})

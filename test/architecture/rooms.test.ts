// The house rules of docs/architecture.md, checked on the source: imports run downhill (a room
// imports values only from rooms below it; `import type` is free), the page reaches the SDK only as the
// package `@task-status/client`, store/ alone imports the Prisma clients, and no hand-written file
// (server, page or SDK package) passes 350 lines.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const SRC = new URL('../../src/', import.meta.url).pathname
const SDK = new URL('../../packages/client/src/', import.meta.url).pathname

/** Each room's floor: a room may import values from rooms of a lower floor only (docs/architecture.md). */
export const FLOORS: Record<string, number> = {
  util: 0,
  errors: 0,
  config: 0,
  summary: 0,
  auth: 0,
  observability: 0,
  store: 1,
  outbound: 1,
  generated: 0,
  pubsub: 2,
  contract: 2,
  access: 2,
  git: 2,
  github: 2,
  recovery: 2,
  feed: 2,
  projector: 2,
  'session-stream': 3,
  agents: 3,
  delivery: 4,
  instances: 4,
  schema: 5,
  server: 6,
  app: 7,
  main: 8,
  demo: 8,
}
/** The browser side of src/: the page, which imports nothing of the server. */
const CLIENT_SIDE = new Set(['web'])

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(full)
    return /\.(ts|tsx)$/.test(entry.name) ? [full] : []
  })
}

const roomOf = (file: string) => {
  const rel = path.relative(SRC, file)
  return rel.includes(path.sep) ? rel.split(path.sep)[0]! : rel.replace(/\.tsx?$/, '')
}

/** Rooms whose type imports run downhill too: the append path's two rooms declare what they need of the rooms above. */
const STRICT_ROOMS = new Set(['outbound', 'delivery'])

/** Every relative import and re-export, type-only ones included. */
function allImports(file: string): string[] {
  const source = readFileSync(file, 'utf8')
  return [...source.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'/gm)].map((m) => path.normalize(path.join(path.dirname(file), m[1]!)))
}

/** Relative imports that bring values (not `import type`, not `{ type A, type B }` only). */
function valueImports(file: string): string[] {
  const source = readFileSync(file, 'utf8')
  const found: string[] = []
  const pattern = /^(?:import|export)\s+(type\s+)?((?:\w+\s*,\s*)?\{[^}]*\}|\*(?:\s+as\s+\w+)?|[^\n{]*?)\s+from\s+'(\.[^']+)'/gm
  for (const match of source.matchAll(pattern)) {
    if (match[1]) continue
    const names = match[2]!
    const braces = /^\{([^}]*)\}$/.exec(names.trim())
    if (braces && braces[1]!.split(',').every((n) => !n.trim() || n.trim().startsWith('type '))) continue
    found.push(path.normalize(path.join(path.dirname(file), match[3]!)))
  }
  return found
}

const files = sourceFiles(SRC)

describe('rooms (docs/architecture.md)', () => {
  it('every room of src/ has a floor or is on the client side', () => {
    const rooms = new Set(files.map(roomOf))
    expect([...rooms].filter((r) => FLOORS[r] === undefined && !CLIENT_SIDE.has(r))).toEqual([])
  })

  it('imports run downhill: a value import goes to a room on a lower floor', () => {
    const uphill: string[] = []
    for (const file of files) {
      const from = roomOf(file)
      if (CLIENT_SIDE.has(from)) continue
      for (const target of valueImports(file)) {
        const to = roomOf(target)
        if (to !== from && !(FLOORS[to]! < FLOORS[from]!)) uphill.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`)
      }
    }
    expect(uphill).toEqual([])
  })

  it('outbound/ and delivery/ import nothing above them, not even a type', () => {
    const uphill: string[] = []
    for (const file of files.filter((f) => STRICT_ROOMS.has(roomOf(f)))) {
      const from = roomOf(file)
      for (const target of allImports(file)) {
        const to = roomOf(target)
        if (to !== from && !(FLOORS[to]! < FLOORS[from]!)) uphill.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`)
      }
    }
    expect(uphill).toEqual([])
  })

  it('the page imports only itself and the SDK package (never a relative path out of src/web)', () => {
    const outside: string[] = []
    for (const file of files.filter((f) => CLIENT_SIDE.has(roomOf(f)))) {
      const source = readFileSync(file, 'utf8')
      for (const match of source.matchAll(/from\s+'(\.[^']+)'/g)) {
        const to = roomOf(path.normalize(path.join(path.dirname(file), match[1]!)))
        if (!CLIENT_SIDE.has(to)) outside.push(`${path.relative(SRC, file)} → ${match[1]}`)
      }
    }
    expect(outside).toEqual([])
  })

  it('store/ alone imports the generated Prisma clients', () => {
    const importers = files.filter((f) => /from\s+'[^']*generated\/(sqlite|postgres)/.test(readFileSync(f, 'utf8')))
    expect(importers.map(roomOf).filter((room) => room !== 'store')).toEqual([])
  })

  it('no hand-written file under src/ or packages/client/src/ passes 350 lines', () => {
    const long = [...files, ...sourceFiles(SDK)].map((f) => [f, readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > 350)
    expect(long).toEqual([])
  })
})

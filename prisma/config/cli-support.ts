// Helpers shared by the two Prisma CLI configs.
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export type Provider = 'sqlite' | 'postgres'

const ENV_BY_PROVIDER = { sqlite: 'SQLITE_URL', postgres: 'POSTGRES_URL' } as const
const FALLBACK = { sqlite: 'file:./data/app.db', postgres: 'postgresql://postgres@127.0.0.1:5432/app' } as const

export function providerOf(url: string): Provider | undefined {
  if (url.startsWith('file:')) return 'sqlite'
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgres'
  return undefined
}

/** The URL the CLI works on: the provider's own variable, else DATABASE_URL when it names this provider. */
export function resolveCliUrl(provider: Provider): string {
  const name = ENV_BY_PROVIDER[provider]
  const fromDatabaseUrl =
    process.env.DATABASE_URL && providerOf(process.env.DATABASE_URL) === provider ? process.env.DATABASE_URL : undefined
  // The datasource block reads this variable: it must be set or Prisma falls back to a native engine download.
  process.env[name] ??= fromDatabaseUrl ?? FALLBACK[provider]
  return process.env[name]!
}

/** The wasm schema engine leaves 10 s / 60 s timers behind; without this the CLI lingers after finishing. */
export function unrefLongTimers(): void {
  const original = globalThis.setTimeout
  globalThis.setTimeout = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const timer = original(fn, ms, ...args)
    if ((ms ?? 0) >= 10_000) timer.unref()
    return timer
  }) as typeof setTimeout
}

/** The project folder: this file lives in prisma/config. */
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The copy a provider's folder holds: the one model definition under a do-not-edit line. */
export function modelsCopy(models: string): string {
  return `// Generated from prisma/models.prisma by prisma.*.config.ts on every Prisma command: edit that file, not this one.\n${models}`
}

/**
 * Writes prisma/<provider>/models.prisma from prisma/models.prisma, the one model definition.
 * Each config calls it, so every Prisma CLI command (generate, migrate, validate, …) reads the
 * current models; the copies are not committed (.gitignore). Written only when they differ, and
 * through a rename, so CLI runs in parallel (tests deploying migrations) never read a half-written file.
 */
export function syncModels(provider: Provider, root = projectRoot): void {
  const source = modelsCopy(readFileSync(path.join(root, 'prisma', 'models.prisma'), 'utf8'))
  const target = path.join(root, 'prisma', provider, 'models.prisma')
  let current: string | undefined
  try {
    current = readFileSync(target, 'utf8')
  } catch {
    current = undefined // a fresh clone: not there yet
  }
  if (current === source) return
  const temporary = `${target}.${process.pid}.tmp`
  writeFileSync(temporary, source)
  renameSync(temporary, target)
}

// Helpers shared by the two Prisma CLI configs.

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

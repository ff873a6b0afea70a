import pg from 'pg'

type QueryResultLike = { fields?: { dataTypeID: number }[] }

// prisma/orm#27403: @prisma/adapter-pg 6.x cannot deserialize the catalog types `name` (oid 19)
// and `"char"` (oid 18) that the schema engine reads; report them as text (oid 25).
function reportCatalogTypesAsText<T>(result: T): T {
  for (const r of (Array.isArray(result) ? result : [result]) as QueryResultLike[])
    for (const f of r?.fields ?? []) if (f.dataTypeID === 19 || f.dataTypeID === 18) f.dataTypeID = 25
  return result
}

class CatalogSafeClient extends pg.Client {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    const callbackIndex = args.findIndex((a) => typeof a === 'function')
    if (callbackIndex >= 0) {
      const callback = args[callbackIndex]
      args[callbackIndex] = (err: unknown, res: unknown) => callback(err, err ? res : reportCatalogTypesAsText(res))
      return (super.query as (...a: unknown[]) => unknown)(...args)
    }
    const ret = (super.query as (...a: unknown[]) => unknown)(...args) as Promise<unknown> | undefined
    return ret && typeof ret.then === 'function' ? ret.then(reportCatalogTypesAsText) : ret
  }
}

/** Discrete fields, not connectionString: a connectionString would override `database` for the shadow DB. */
export function catalogSafePoolConfig(url: string): pg.PoolConfig {
  const u = new URL(url)
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username) || 'postgres',
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)),
    Client: CatalogSafeClient as unknown as typeof pg.Client,
    allowExitOnIdle: true,
  }
}

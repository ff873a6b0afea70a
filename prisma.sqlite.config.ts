// Prisma CLI config for SQLite (the embedded default). See ../shared/notes/prisma.md:
// the JS engine with a driver adapter and the wasm schema engine, so the CLI downloads nothing.
import path from 'node:path'
import { defineConfig } from 'prisma/config'
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3'
import { resolveCliUrl, syncModels, unrefLongTimers } from './prisma/config/cli-support.ts'

syncModels('sqlite')
const url = resolveCliUrl('sqlite')
const base = new PrismaBetterSQLite3({ url })
unrefLongTimers()

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'sqlite'),
  migrations: { path: path.join('prisma', 'sqlite', 'migrations') },
  async adapter() {
    return {
      provider: base.provider,
      adapterName: base.adapterName,
      connect: () => base.connect(),
      // The wasm engine replays migration.sql files on the shadow database through executeRaw,
      // which better-sqlite3 accepts for one statement only: route argument-less SQL to exec().
      async connectToShadowDb() {
        const shadow = await base.connectToShadowDb()
        const executeRaw = shadow.executeRaw.bind(shadow)
        shadow.executeRaw = async (q) => {
          if (q.args.length === 0) {
            await shadow.executeScript(q.sql)
            return 0
          }
          return executeRaw(q)
        }
        return shadow
      },
    }
  },
})

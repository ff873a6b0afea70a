// Prisma CLI config for PostgreSQL. See ../shared/notes/prisma.md for why each workaround exists.
import path from 'node:path'
import { defineConfig } from 'prisma/config'
import { PrismaPg } from '@prisma/adapter-pg'
import { resolveCliUrl, syncModels, unrefLongTimers } from './prisma/config/cli-support.ts'
import { catalogSafePoolConfig } from './prisma/config/pg-catalog-safe.ts'

syncModels('postgres')
const poolConfig = catalogSafePoolConfig(resolveCliUrl('postgres'))
const base = new PrismaPg(poolConfig)
unrefLongTimers()

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'postgres'),
  migrations: { path: path.join('prisma', 'postgres', 'migrations') },
  async adapter() {
    return {
      provider: base.provider,
      adapterName: base.adapterName,
      connect: () => base.connect(),
      // adapter-pg 6 drops the shadow database while its own pool still holds a connection:
      // create and drop it ourselves, disposing the shadow pool first.
      async connectToShadowDb() {
        const admin = await base.connect()
        const name = `prisma_shadow_${process.pid}_${Date.now()}`
        await admin.executeScript(`CREATE DATABASE "${name}"`)
        const shadow = await new PrismaPg({ ...poolConfig, database: name }).connect()
        const dispose = shadow.dispose.bind(shadow)
        shadow.dispose = async () => {
          await dispose()
          await admin.executeScript(`DROP DATABASE IF EXISTS "${name}"`)
          await admin.dispose()
        }
        return shadow
      },
    }
  },
})

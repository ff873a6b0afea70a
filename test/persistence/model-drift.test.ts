import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** The generated client embeds the data model it was generated from. */
function generatedDataModel(provider: 'sqlite' | 'postgres'): unknown {
  const source = read(`src/generated/${provider}/internal/class.ts`)
  const match = /config\.runtimeDataModel = JSON\.parse\((".*")\)/.exec(source)
  if (!match) throw new Error(`no runtimeDataModel in the ${provider} client`)
  return JSON.parse(JSON.parse(match[1]!) as string)
}

describe('the two providers’ models', () => {
  it('are copies of prisma/models.prisma (run `npm run db:sync-models` after editing it)', () => {
    const source = read('prisma/models.prisma')
    expect(read('prisma/sqlite/models.prisma')).toBe(source)
    expect(read('prisma/postgres/models.prisma')).toBe(source)
  })

  it('generate clients with the same data model', () => {
    const sqlite = generatedDataModel('sqlite')
    expect(Object.keys((sqlite as { models: object }).models).length).toBeGreaterThan(10)
    expect(generatedDataModel('postgres')).toEqual(sqlite)
  })
})

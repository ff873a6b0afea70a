import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { modelsCopy, syncModels } from '../../prisma/config/cli-support.ts'

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** The generated client embeds the data model it was generated from. */
function generatedDataModel(provider: 'sqlite' | 'postgres'): unknown {
  const source = read(`src/generated/${provider}/internal/class.ts`)
  const match = /config\.runtimeDataModel = JSON\.parse\((".*")\)/.exec(source)
  if (!match) throw new Error(`no runtimeDataModel in the ${provider} client`)
  return JSON.parse(JSON.parse(match[1]!) as string)
}

describe('the two providers’ models', () => {
  it('each Prisma config writes prisma/models.prisma into its provider’s folder, replacing a stale or missing copy', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tss-models-'))
    try {
      for (const provider of ['sqlite', 'postgres']) mkdirSync(path.join(root, 'prisma', provider), { recursive: true })
      writeFileSync(path.join(root, 'prisma', 'models.prisma'), 'model A {\n  id String @id\n}\n')
      writeFileSync(path.join(root, 'prisma', 'postgres', 'models.prisma'), 'model Stale {\n  id String @id\n}\n')
      syncModels('sqlite', root)
      syncModels('postgres', root)
      const expected = modelsCopy('model A {\n  id String @id\n}\n')
      expect(readFileSync(path.join(root, 'prisma', 'sqlite', 'models.prisma'), 'utf8')).toBe(expected)
      expect(readFileSync(path.join(root, 'prisma', 'postgres', 'models.prisma'), 'utf8')).toBe(expected)
      // An edit to the one definition reaches the copies at the next command.
      writeFileSync(path.join(root, 'prisma', 'models.prisma'), 'model B {\n  id String @id\n}\n')
      syncModels('sqlite', root)
      expect(readFileSync(path.join(root, 'prisma', 'sqlite', 'models.prisma'), 'utf8')).toBe(modelsCopy('model B {\n  id String @id\n}\n'))
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it('both Prisma configs sync their copy before the CLI reads the schema', () => {
    for (const provider of ['sqlite', 'postgres']) expect(read(`prisma.${provider}.config.ts`)).toMatch(new RegExp(`^syncModels\\('${provider}'\\)$`, 'm'))
  })

  it('the working copies are the current prisma/models.prisma (the last Prisma command wrote them)', () => {
    const expected = modelsCopy(read('prisma/models.prisma'))
    expect(read('prisma/sqlite/models.prisma')).toBe(expected)
    expect(read('prisma/postgres/models.prisma')).toBe(expected)
  })

  it('generate clients with the same data model', () => {
    const sqlite = generatedDataModel('sqlite')
    expect(Object.keys((sqlite as { models: object }).models).length).toBeGreaterThan(10)
    expect(generatedDataModel('postgres')).toEqual(sqlite)
  })
})

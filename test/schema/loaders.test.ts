import { describe, expect, it } from 'vitest'
import { createLoaders } from '../../src/schema/loaders.ts'
import type { Projector } from '../../src/projector/projector.ts'
import type { Store } from '../../src/store/store.ts'

describe('createLoaders (each loader made on first use)', () => {
  const projector = () => {
    const batches: string[][] = []
    const fake = {
      ensure: async (ids: readonly string[]) => {
        batches.push([...ids])
        return new Map(ids.map((id) => [id, { taskId: id, revision: 1, updatedAt: new Date(0), payload: {} }]))
      },
    }
    return { batches, projector: fake as unknown as Projector }
  }

  it('keeps one loader per context, so loads of one tick share a batch and a cache', async () => {
    const { batches, projector: p } = projector()
    const loaders = createLoaders({ store: {} as Store, projector: p }, 'user')
    expect(loaders.statusSummary).toBe(loaders.statusSummary)
    await Promise.all([loaders.statusSummary.load('a'), loaders.statusSummary.load('b')])
    await loaders.statusSummary.load('a')
    expect(batches).toEqual([['a', 'b']])
  })

  it('shares nothing between contexts', async () => {
    const { batches, projector: p } = projector()
    const first = createLoaders({ store: {} as Store, projector: p }, 'user')
    const second = createLoaders({ store: {} as Store, projector: p }, 'user')
    expect(first.statusSummary).not.toBe(second.statusSummary)
    await first.statusSummary.load('a')
    await second.statusSummary.load('a')
    expect(batches).toEqual([['a'], ['a']])
  })
})

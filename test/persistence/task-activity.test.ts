// A task row's lastActivityAt only moves forward, even when two updates race and the one that
// took the earlier time commits last (two instances, or two requests interleaved): a rebuild of
// the summary from the rows must find the latest activity the projector already published.
import { afterEach, describe, expect, it } from 'vitest'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'
import { createTask, updateTask } from '../../src/store/tasks.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { migratedDatabase, PROVIDERS } from '../support/databases.ts'

describe.each(PROVIDERS)('task activity time on %s', (provider) => {
  let store: Store | undefined
  afterEach(async () => {
    await store?.db.$disconnect()
  })

  it('a racing update that took an earlier time never moves lastActivityAt back', async () => {
    const db = await connectDatabase(provider, await migratedDatabase(provider))
    const later = new Date('2026-12-05T12:00:02Z')
    const earlier = new Date('2026-12-05T12:00:01Z')
    // The first update to take the time takes the later one; the second, racing it, the earlier.
    const times = [later, earlier]
    let clock: () => Date = () => new Date('2026-12-05T12:00:00Z')
    store = createStore(db, () => clock())
    const user = await db.user.create({ data: { name: 'u', isAdmin: true } })
    const workspace = await createWorkspace(store, 'w', user.id)
    const task = await createTask(store, { workspaceId: workspace.id, title: 't' })
    clock = () => times.shift() ?? later

    const [first, second] = await Promise.all([updateTask(store, task.id, { title: 'one' }), updateTask(store, task.id, { title: 'two' })])

    const row = await db.task.findUniqueOrThrow({ where: { id: task.id } })
    expect(row.lastActivityAt).toEqual(later)
    // What each mutation answers agrees with the row it left behind at that moment: never behind the time it took.
    expect(first.lastActivityAt.getTime()).toBeGreaterThanOrEqual(later.getTime())
    expect(second.lastActivityAt.getTime()).toBeGreaterThanOrEqual(earlier.getTime())
  })
})

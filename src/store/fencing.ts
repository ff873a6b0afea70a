// Fenced writes: a store with an owner (Store.owner, see ownedBy) writes a session's records only
// while that instance still owns the session, the condition being part of the write itself.
import { OwnershipLostError, type Store } from './store.ts'

/** The condition a fenced store (Store.owner) adds to a session's row: still owned by that instance. */
export function stillOwned(store: Store): { ownerInstanceId?: string } {
  return store.owner ? { ownerInstanceId: store.owner } : {}
}

/**
 * A fenced update of one row: Prisma answers P2025 when the row's condition (the owner among it)
 * matches nothing, which for a fenced store means the session is another instance's now (or gone).
 */
export async function fenced<T>(store: Store, subject: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (store.owner && (error as { code?: string }).code === 'P2025') throw new OwnershipLostError(subject)
    throw error
  }
}

/**
 * Inside a write's transaction: the session is still the fenced store's. The row is written (to
 * itself), so on PostgreSQL a concurrent takeover's claim waits for this transaction, and a
 * claim that came first makes it match nothing and roll back.
 */
export async function assertOwned(tx: Pick<Store['db'], 'session'>, store: Store, sessionId: string): Promise<void> {
  if (!store.owner) return
  const { count } = await tx.session.updateMany({ where: { id: sessionId, ownerInstanceId: store.owner }, data: { ownerInstanceId: store.owner } })
  if (count === 0) throw new OwnershipLostError(`session ${sessionId}`)
}

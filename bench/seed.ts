// Seeding shared by the scenarios' handler modules, run inside the server process.
import type { Store } from '../src/store/store.ts'
import { createWorkspace } from '../src/store/workspaces.ts'

/** A new workspace of the server's admin (the bench's clients use the admin token). */
export async function adminWorkspace(store: Store, name: string) {
  const admin = await store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
  return createWorkspace(store, name, admin.id)
}

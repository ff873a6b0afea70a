import type { Db } from './db.ts'
import { generateToken, hashToken } from '../auth/tokens.ts'

export interface Principal {
  userId: string
  isAdmin: boolean
}

export async function principalForToken(db: Db, token: string): Promise<Principal | null> {
  const row = await db.apiToken.findUnique({
    where: { tokenHash: hashToken(token) },
    select: { user: { select: { id: true, isAdmin: true } } },
  })
  return row ? { userId: row.user.id, isAdmin: row.user.isAdmin } : null
}

/** Creates a user with a fresh token; the token is returned once and only its hash is kept. */
export async function createUserWithToken(db: Db, name: string, isAdmin = false) {
  const token = generateToken()
  const user = await db.user.create({
    data: { name, isAdmin, tokens: { create: { tokenHash: hashToken(token), label: 'initial' } } },
  })
  return { user, token }
}

export function findUsers(db: Db, ids: readonly string[]) {
  return db.user.findMany({ where: { id: { in: [...ids] } } })
}

export type AdminBootstrap = { adminUserId: string; generatedToken?: string }

/**
 * Makes sure an admin user exists and can authenticate: with ADMIN_TOKEN, that token's hash is
 * registered; without it, a token is generated only when no admin exists yet (first start) and
 * returned so the caller prints it once. A restart keeps the stored hash and prints nothing.
 */
export async function bootstrapAdmin(db: Db, adminToken: string | undefined): Promise<AdminBootstrap> {
  const existing = await db.user.findFirst({ where: { isAdmin: true }, orderBy: { createdAt: 'asc' } })
  if (adminToken) {
    const admin = existing ?? (await db.user.create({ data: { name: 'admin', isAdmin: true } }))
    const tokenHash = hashToken(adminToken)
    await db.apiToken.upsert({
      where: { tokenHash },
      create: { tokenHash, userId: admin.id, label: 'ADMIN_TOKEN' },
      update: { userId: admin.id },
    })
    return { adminUserId: admin.id }
  }
  if (existing) return { adminUserId: existing.id }
  const { user, token } = await createUserWithToken(db, 'admin', true)
  return { adminUserId: user.id, generatedToken: token }
}

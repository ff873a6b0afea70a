import type { Db } from './db.ts'
import { generateToken, hashToken } from '../auth/tokens.ts'

export interface Principal {
  userId: string
  isAdmin: boolean
  /** The hash of the token that authenticated this caller: revocation ends what this token opened. */
  tokenHash?: string
}

/** The caller a token authenticates: only the current token of an active user does. */
export async function principalForTokenHash(db: Db, tokenHash: string): Promise<Principal | null> {
  const row = await db.apiToken.findUnique({
    where: { tokenHash },
    select: { user: { select: { id: true, isAdmin: true, active: true } } },
  })
  return row?.user.active ? { userId: row.user.id, isAdmin: row.user.isAdmin, tokenHash } : null
}

export function principalForToken(db: Db, token: string): Promise<Principal | null> {
  return principalForTokenHash(db, hashToken(token))
}

export function listUsers(db: Db) {
  return db.user.findMany({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] })
}

/**
 * Replaces every token of the user with one new token, in one transaction (there is no moment
 * with two valid, nor with none). Null when the user is unknown.
 */
export async function rotateUserToken(db: Db, userId: string) {
  const token = generateToken()
  const tokenHash = hashToken(token)
  const user = await db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId } })
    if (!user?.active) return user
    await tx.apiToken.deleteMany({ where: { userId } })
    await tx.apiToken.create({ data: { userId, tokenHash, label: 'rotated' } })
    return user
  })
  if (!user) return null
  return user.active ? { user, token, tokenHash } : { user }
}

/** Marks the user inactive and deletes its tokens. Null when the user is unknown. */
export async function deactivateUser(db: Db, userId: string) {
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId } })
    if (!user) return null
    await tx.apiToken.deleteMany({ where: { userId } })
    return user.active ? tx.user.update({ where: { id: userId }, data: { active: false } }) : user
  })
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

export type AdminBootstrap = {
  adminUserId: string
  generatedToken?: string
  /** How many earlier admin tokens ADMIN_TOKEN replaced (the generated one, an earlier ADMIN_TOKEN). */
  revokedTokens?: number
}

/**
 * The admin created by bootstrap has a fixed id, so instances starting together on an empty
 * database race on one primary key: exactly one insert wins, and only the winner mints a token.
 */
export const BOOTSTRAP_ADMIN_ID = 'admin'

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === 'P2002'

/** Creates the admin unless one exists; `created` is true only for the call that inserted it. */
async function ensureAdmin(db: Db, tokenHash: string | undefined): Promise<{ id: string; created: boolean }> {
  const existing = await db.user.findFirst({ where: { isAdmin: true }, orderBy: { createdAt: 'asc' } })
  if (existing) return { id: existing.id, created: false }
  try {
    await db.user.create({
      data: {
        id: BOOTSTRAP_ADMIN_ID,
        name: 'admin',
        isAdmin: true,
        ...(tokenHash && { tokens: { create: { tokenHash, label: 'initial' } } }),
      },
    })
    return { id: BOOTSTRAP_ADMIN_ID, created: true }
  } catch (error) {
    if (isUniqueViolation(error)) return { id: BOOTSTRAP_ADMIN_ID, created: false }
    throw error
  }
}

/**
 * Makes sure an admin user exists and can authenticate: with ADMIN_TOKEN, that token becomes the
 * admin's only token (every other token of the admin is revoked, so an operator who sets it after
 * a first start that generated one does not leave two valid); without it, a token is generated
 * only when no admin exists yet (first start) and returned so the caller prints it once. A restart
 * without ADMIN_TOKEN keeps whatever admin token is stored (also the last ADMIN_TOKEN) and prints
 * nothing: unsetting the variable must not lock the operator out.
 */
export async function bootstrapAdmin(db: Db, adminToken: string | undefined): Promise<AdminBootstrap> {
  if (adminToken) {
    const admin = await ensureAdmin(db, undefined)
    const tokenHash = hashToken(adminToken)
    let revokedTokens = 0
    try {
      // One transaction: there is no moment with both tokens valid, nor with none.
      const [revoked] = await db.$transaction([
        db.apiToken.deleteMany({ where: { userId: admin.id, tokenHash: { not: tokenHash } } }),
        db.apiToken.upsert({
          where: { tokenHash },
          create: { tokenHash, userId: admin.id, label: 'ADMIN_TOKEN' },
          update: { userId: admin.id },
        }),
      ])
      revokedTokens = revoked.count
    } catch (error) {
      // Another instance registered the same hash between our read and write: it is there, and
      // that instance's transaction revoked the others.
      if (!isUniqueViolation(error)) throw error
    }
    return revokedTokens > 0 ? { adminUserId: admin.id, revokedTokens } : { adminUserId: admin.id }
  }
  const token = generateToken()
  const admin = await ensureAdmin(db, hashToken(token))
  return admin.created ? { adminUserId: admin.id, generatedToken: token } : { adminUserId: admin.id }
}

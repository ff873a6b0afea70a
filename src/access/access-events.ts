/**
 * What ends access, as it travels between instances (the `access` pub/sub topic). Ids and token
 * hashes only: never a token.
 */
export type AccessEvent =
  /** Rotation (the new token kept) or deactivation (none kept): every other token of the user is void. */
  | { type: 'credentials-revoked'; userId: string; keepTokenHash?: string }
  /** The user reads and acts in the workspace no more. */
  | { type: 'membership-removed'; userId: string; workspaceId: string }
  /** Events may have been missed (the pub/sub link was interrupted): check everything again. */
  | { type: 'resync' }

// PostgreSQL's own time limits on every connection of an instance, derived from its lease
// (SESSION_LEASE_MS): the fence that reaches the database (MAPPING "Outages and stalls").
//
// A stopped owner (SIGSTOP, a frozen VM) neither commits nor rolls back: a transaction it left
// open keeps its row locks (a message inserted under its session's row lock, a turn being closed),
// and the survivor's takeover, which writes the same rows, would wait on them until the owner
// continues (measured: not one of four sessions taken over within 2.5 × the lease, test/faults/
// r13-owner-stalled-mid-write.fault.ts). What such a process leaves on the server, as
// pg_stat_activity shows it once the process is stopped (every stop R13 caught: the first):
// - `idle in transaction` (the usual case: between two statements of a transaction, or after its
//   last one before COMMIT): ended by idle_in_transaction_session_timeout, which ends the
//   connection, so the server rolls the transaction back and its locks go;
// - `active`, waiting on a lock held by another of its stalled transactions: ended by lock_timeout
//   (the statement fails, the transaction is then idle in transaction and ended as above);
// - `active`, running: the server finishes the statement without the client, then as above.
// No statement_timeout: it would cut no stalled holder (a statement that runs ends by itself; a
// server blocked sending a result to, or reading the next message from, a stopped client takes no
// cancel, only a termination), and it would cut healthy long statements. One state none of the
// three ends on PostgreSQL 15 (measured: `active`, waiting on ClientRead, past all three): a
// statement executed whose protocol Sync has not arrived. pg sends both in one write, so a stopped
// process practically never leaves it.
//
// Both limits are a quarter of the lease. A stalled owner's lease expires, and its sessions are
// taken over, no earlier than five sixths of the lease after the stall began (it renews every
// sixth of it, src/instances/lease-timing.ts), while what it holds is gone a quarter of the lease
// after its last statement, or half of it for a statement that waited on its own stalled
// transaction.

export interface PostgresLimits {
  /** ms a transaction may sit between statements before the server ends the connection (SQLSTATE 25P03). */
  idle_in_transaction_session_timeout: number
  /** ms a statement may wait for a lock before it fails (SQLSTATE 55P03, nothing of it done). */
  lock_timeout: number
}

export function postgresLimits(leaseMs: number): PostgresLimits {
  const quarter = Math.max(1, Math.floor(leaseMs / 4))
  return { idle_in_transaction_session_timeout: quarter, lock_timeout: quarter }
}

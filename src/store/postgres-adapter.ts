import type { IsolationLevel, SqlDriverAdapter, SqlDriverAdapterFactory, SqlQuery, Transaction } from '@prisma/driver-adapter-utils'

/**
 * Prisma's pg adapter, with a transaction's ROLLBACK that never fails.
 *
 * Prisma rolls a transaction back from a timer once it outlives its timeout, and nothing awaits
 * that rollback: when its statement fails, the rejection is nobody's and the process ends. It
 * fails when the connection is gone, and the server ends a transaction's connection by design
 * when it sits idle past idle_in_transaction_session_timeout (postgres-limits.ts). Measured: the
 * owner of R13 (test/faults/r13-owner-stalled-mid-write.fault.ts), stopped with a transaction open,
 * continued after the lease and exited 1 on "terminating connection due to idle-in-transaction
 * timeout". A ROLLBACK fails only on a connection that has ended or broken (on a live one it cannot:
 * outside a transaction it is a warning); the server rolled the transaction back as the connection
 * ended, so there is nothing left to undo, and the pool drops the connection (it is not queryable).
 */
export class RollbackSafePgFactory implements SqlDriverAdapterFactory {
  readonly provider = 'postgres'
  readonly adapterName: string

  constructor(readonly inner: SqlDriverAdapterFactory) {
    this.adapterName = inner.adapterName
  }

  async connect(): Promise<SqlDriverAdapter> {
    return new RollbackSafePgAdapter(await this.inner.connect())
  }
}

class RollbackSafePgAdapter implements SqlDriverAdapter {
  readonly provider = 'postgres'
  readonly adapterName: string

  constructor(readonly inner: SqlDriverAdapter) {
    this.adapterName = inner.adapterName
  }

  queryRaw(query: SqlQuery) {
    return this.inner.queryRaw(query)
  }

  executeRaw(query: SqlQuery) {
    return this.inner.executeRaw(query)
  }

  executeScript(script: string) {
    return this.inner.executeScript(script)
  }

  getConnectionInfo() {
    return this.inner.getConnectionInfo?.() ?? { supportsRelationJoins: false }
  }

  dispose() {
    return this.inner.dispose()
  }

  async startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    return new RollbackSafeTransaction(await this.inner.startTransaction(isolationLevel))
  }
}

class RollbackSafeTransaction implements Transaction {
  readonly provider = 'postgres'
  readonly adapterName: string
  readonly options: Transaction['options']

  constructor(readonly inner: Transaction) {
    this.adapterName = inner.adapterName
    this.options = inner.options
  }

  queryRaw(query: SqlQuery) {
    return this.inner.queryRaw(query)
  }

  async executeRaw(query: SqlQuery): Promise<number> {
    if (query.sql !== 'ROLLBACK') return this.inner.executeRaw(query)
    return this.inner.executeRaw(query).catch(() => 0)
  }

  commit() {
    return this.inner.commit()
  }

  rollback() {
    return this.inner.rollback()
  }
}

import type { OutboundSocket } from '../../src/outbound/outbound-scheduler.ts'

/**
 * An OutboundSocket that holds each written frame until the test lets it drain, one at a time or
 * all: the socket counts as full (bufferedAmount past any mark) while `highWater` writes are held.
 * With the scheduler's high-water mark at 1 byte, every write asks for its completion.
 */
export function heldSocket(highWater = 1) {
  const written: string[] = []
  const pending: (() => void)[] = []
  let closed: { code: number; reason: string } | undefined
  const socket: OutboundSocket = {
    get bufferedAmount() {
      return pending.length >= highWater ? Number.MAX_SAFE_INTEGER : 0
    },
    send(frame, done) {
      written.push(String(frame))
      pending.push(done ?? (() => undefined))
    },
    close(code, reason) {
      closed = { code, reason }
    },
    ping: () => undefined,
  }
  return {
    socket,
    written,
    get closed() {
      return closed
    },
    /** The oldest write completes: the scheduler writes its next frame. */
    drainOne() {
      pending.shift()?.()
    },
    /** Every write made so far completes; the scheduler writes more in response. */
    drainAll() {
      while (pending.length) pending.shift()!()
    },
  }
}

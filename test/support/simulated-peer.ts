import { byteLengthOf, type OutboundScheduler, type OutboundSocket } from '../../src/outbound/outbound-scheduler.ts'

/**
 * A peer on a simulated clock: the socket takes every write at once (ws's buffer stays empty, as
 * when the kernel absorbs everything) and the reader reads `bytesPerMs`, answering each ping as
 * its parser reaches it, one tick later.
 */
export function simulatedPeer(rate: number, options: { answers?: boolean; slurp?: boolean } = {}) {
  let now = 0
  type Item = { frame: string; bytes: number; writtenAt: number } | { ping: string }
  const wire: Item[] = []
  const read: { frame: string; writtenAt: number; readAt: number }[] = []
  const pings: string[] = []
  let closed: { code: number } | undefined
  let partial = 0
  let tokens = 0
  const socket: OutboundSocket = {
    bufferedAmount: 0,
    send(f, done) {
      wire.push({ frame: String(f), bytes: byteLengthOf(f), writtenAt: now })
      done?.()
    },
    ping(payload) {
      pings.push(payload)
      wire.push({ ping: payload })
    },
    close: (code) => void (closed = { code }),
  }
  return {
    socket,
    read,
    pings,
    bytesPerMs: rate,
    get closed() {
      return closed
    },
    get now() {
      return now
    },
    clock: () => now,
    /** One millisecond: the reader reads its share, then its pongs reach the scheduler. */
    tick(scheduler: OutboundScheduler) {
      now++
      // A slurping reader (bench/p2's token bucket) takes everything waiting (up to 64 KiB, one socket
      // read) whenever it is not in debt, then pauses until its pace has paid for what it took.
      tokens = options.slurp ? Math.min(this.bytesPerMs, tokens + this.bytesPerMs) : this.bytesPerMs
      const allowance = options.slurp ? (tokens > 0 ? 64 * 1024 : 0) : tokens
      let budget = allowance
      const pongs: string[] = []
      while (wire.length > 0) {
        const head = wire[0]!
        if ('ping' in head) {
          pongs.push(head.ping)
          wire.shift()
          continue
        }
        if (head.bytes - partial > budget) {
          partial += budget
          budget = 0
          break
        }
        budget -= head.bytes - partial
        partial = 0
        wire.shift()
        read.push({ frame: head.frame, writtenAt: head.writtenAt, readAt: now })
      }
      if (options.slurp) tokens -= allowance - budget
      if (options.answers !== false) for (const pong of pongs) scheduler.acknowledge(pong)
    },
  }
}

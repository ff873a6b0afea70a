import type { WebSocket } from 'ws'
import type { OutboundSocket, OutFrame } from './outbound-scheduler.ts'
import { SharedFrame } from './shared-frame.ts'

const TEXT_FRAME = Object.freeze({ binary: false })
/** RFC 6455: FIN and the text opcode. */
const FIN_TEXT = 0x81

/** Who hears of every close the writer makes (the connection, to log and count it). */
export interface WriterHooks {
  closing(code: number): void
}

/** What of `ws`'s internals a direct write relies on: its TCP socket and its sender's state. */
interface WsInternals {
  _socket?: { cork(): void; uncork(): void; write(chunk: Buffer, done?: () => void): boolean }
  _sender?: { _state: number; _queue: unknown[] }
  _extensions?: Record<string, unknown>
}

/**
 * The socket as the scheduler writes to it; `closing` hears of every close the scheduler makes.
 * A shared frame goes out as ws would write it (one unmasked text frame) but as a list, header
 * and head then the shared body, in one writev: `ws`'s send takes one buffer, which would cost a
 * copy of the shared bytes per subscriber. Only while ws's own sender holds nothing (no
 * compression, nothing queued behind a deflate or a blob), so frames keep their order; otherwise
 * the frame is joined and sent through ws. A class, so a connection's writer is one small object
 * whose methods live on the prototype.
 */
export class WsWriter implements OutboundSocket {
  constructor(
    private readonly socket: WebSocket,
    private readonly hooks: WriterHooks,
  ) {}

  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  send(frame: OutFrame, done?: () => void): void {
    const socket = this.socket
    if (frame instanceof SharedFrame) {
      const internals = socket as unknown as WsInternals
      const tcp = internals._socket
      if (tcp && socket.readyState === socket.OPEN && directWrites(internals)) {
        tcp.write(frameHeader(frame))
        tcp.write(frame.body, done)
        return
      }
      frame = frame.joined()
    }
    // Text frames always: ws would send a Buffer (a cohort's shared frame) as binary.
    socket.send(frame, TEXT_FRAME, done)
  }

  ping(payload: string): void {
    this.socket.ping(payload)
  }

  /** ws keeps its TCP socket as `_socket` and offers no cork of its own: a frame and the probe after it leave in one writev. */
  batch<T>(writes: (target: T) => void, target: T): void {
    const tcp = (this.socket as unknown as WsInternals)._socket
    tcp?.cork()
    try {
      writes(target)
    } finally {
      tcp?.uncork()
    }
  }

  close(code: number, reason: string): void {
    this.hooks.closing(code)
    this.socket.close(code, reason)
  }
}

/** ws's sender is idle and uncompressed: a frame written beside it keeps its place. */
function directWrites(internals: WsInternals): boolean {
  const sender = internals._sender
  return sender !== undefined && sender._state === 0 && sender._queue.length === 0 && internals._extensions?.['permessage-deflate'] === undefined
}

/** The frame's WebSocket header (server frames are not masked) followed by the member's head. */
function frameHeader(frame: SharedFrame): Buffer {
  const length = frame.byteLength
  const size = length < 126 ? 2 : length < 65536 ? 4 : 10
  const out = Buffer.allocUnsafe(size + frame.head.length)
  out[0] = FIN_TEXT
  if (size === 2) out[1] = length
  else if (size === 4) {
    out[1] = 126
    out.writeUInt16BE(length, 2)
  } else {
    out[1] = 127
    out.writeUInt32BE(Math.floor(length / 2 ** 32), 2)
    out.writeUInt32BE(length >>> 0, 6)
  }
  frame.head.copy(out, size)
  return out
}

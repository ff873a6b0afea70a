/**
 * One subscriber's frame of an event many subscribers get alike (a cohort's result): its own
 * head (the operation id) and the body every member shares, built once per event. Written as a
 * list (ws-writer.ts) so the shared bytes are never copied per subscriber.
 */
export class SharedFrame {
  constructor(
    /** `{"id":…,"type":"next","payload":`, the member's own. */
    readonly head: Buffer,
    /** The payload and the closing brace, the same Buffer for every member. */
    readonly body: Buffer,
  ) {}

  get byteLength(): number {
    return this.head.length + this.body.length
  }

  toString(): string {
    return this.joined().toString()
  }

  /** The whole frame in one Buffer, for a socket that cannot take it as a list. */
  joined(): Buffer {
    return Buffer.concat([this.head, this.body], this.byteLength)
  }
}

/** The head of a `next` frame for operation `id`, as graphql-ws would begin it. */
export function nextFrameHead(id: string): Buffer {
  return Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`)
}

/** The shared body of a `next` frame whose payload is `payload` (serialized JSON). */
export function nextFrameBody(payload: string): Buffer {
  return Buffer.from(`${payload}}`)
}

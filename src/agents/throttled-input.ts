import type { Readable } from 'node:stream'
import type { BoundedHandoff } from './bounded-handoff.ts'
import { ChunkMerger } from './chunk-merge.ts'

/**
 * stdout as a web stream that is read only while the handoff has room: the SDK pulls from it,
 * so a full handoff stops the SDK reading, the pipe fills and the agent's own writes block.
 * Each read reaches the SDK with its runs of plain text chunks joined (chunk-merge.ts).
 */
export function throttledInput<T>(stdout: Readable, handoff: BoundedHandoff<T>): ReadableStream<Uint8Array> {
  const chunks = stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  const merger = new ChunkMerger()
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A pull that enqueues nothing is not called again: a read that ends no line reads on.
        for (;;) {
          if (!(await handoff.waitForSpace())) return controller.close()
          const next = await chunks.next().catch(() => ({ done: true as const, value: undefined }))
          if (next.done) {
            const rest = merger.end()
            if (rest) controller.enqueue(new Uint8Array(rest))
            return controller.close()
          }
          const bytes = merger.push(next.value)
          if (bytes.length > 0) return controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
        }
      },
      cancel() {
        stdout.destroy()
      },
    },
    { highWaterMark: 0 },
  )
}

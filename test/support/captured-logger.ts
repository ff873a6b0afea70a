import { Writable } from 'node:stream'
import { pino } from 'pino'

/** One JSON log line as pino wrote it. */
export type LogLine = { level: number; action?: string; [key: string]: unknown }

/** A pino logger (info and up) whose lines a test reads back, parsed and as written. */
export function capturedLogger<Line extends LogLine = LogLine>() {
  const lines: Line[] = []
  const raw: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(String(chunk))
      lines.push(JSON.parse(String(chunk)) as Line)
      done()
    },
  })
  return { logger: pino({ level: 'info' }, stream), lines, raw }
}

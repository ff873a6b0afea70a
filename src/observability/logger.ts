import { pino, type Logger } from 'pino'

export type { Logger }

/**
 * JSON lines on stdout. Transcript content never reaches a log: callers log ids, counts and
 * codes only, and these paths are redacted as a second line of defence.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'task-status-server' },
    redact: {
      paths: ['content', '*.content', 'prompt', '*.prompt', 'token', '*.token', 'authorization', '*.authorization'],
      censor: '[redacted]',
    },
  })
}

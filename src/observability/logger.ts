import { createRequire } from 'node:module'
import { pino, type DestinationStream, type Logger } from 'pino'
import type PinoPretty from 'pino-pretty'

export type { Logger }

/** `json`: one JSON object a line, for files, pipes and log collectors. `pretty`: for a person at a terminal. */
export type LogFormat = 'json' | 'pretty'

/** LOG_FORMAT: `auto` (the default) picks by where the logs go, the others force a format. */
export type LogFormatSetting = LogFormat | 'auto'

/**
 * Pretty lines when someone watches a terminal during development; JSON lines otherwise: under a
 * supervisor or in a container stdout is a pipe or a file, and in production a collector parses
 * them (a terminal there is someone who may well pipe them into jq).
 */
export function chooseLogFormat(where: { stdoutIsTTY: boolean; nodeEnv: string | undefined; setting: LogFormatSetting }): LogFormat {
  if (where.setting !== 'auto') return where.setting
  return where.stdoutIsTTY && where.nodeEnv !== 'production' ? 'pretty' : 'json'
}

/**
 * pino-pretty as a stream in this process, written synchronously to stdout: no worker thread (a
 * pino transport's) that could drop the last lines when the process exits. Loaded only when
 * chosen, so a production start does not load it. Colours follow pino-pretty's own test (a
 * terminal, NO_COLOR, FORCE_COLOR).
 */
function prettyStdout(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
  return pretty({ destination: 1, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' })
}

/**
 * Transcript content never reaches a log: callers log ids, counts and codes only, and these paths
 * are redacted as a second line of defence (before either format is written).
 */
export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  const options = {
    level,
    base: { service: 'task-status-server' },
    redact: {
      paths: ['content', '*.content', 'prompt', '*.prompt', 'token', '*.token', 'authorization', '*.authorization'],
      censor: '[redacted]',
    },
  }
  return format === 'pretty' ? pino(options, prettyStdout()) : pino(options)
}

import type { PermissionOption, ToolCallDetail } from './types.js'

/**
 * Reading what an agent asks to run (v1.4). Agents send a tool's input as their own JSON: Claude
 * Code `{"command":"npm test","description":…}`, Codex `{"command":["/bin/bash","-lc","npm test"]}`.
 * These helpers give every frontend the same reading, so a permission says what it allows the
 * same way on every page.
 */

/** A word that a shell would split or expand is shown single-quoted, so the joined line reads as the argv it was. */
function shellWord(word: string): string {
  if (word !== '' && /^[\w@%+=:,./-]+$/.test(word)) return word
  return `'${word.replaceAll("'", `'"'"'`)}'`
}

/**
 * The command line a tool call runs, from its `rawInput`: a `command` string as it is, or a
 * `command` array (argv) joined by spaces, quoted where a word needs it. Null when there is no
 * rawInput, it names no command, or it was cut (`truncated` JSON no longer parses): show
 * `rawInput` itself then.
 */
export function toolCallCommand(detail: Pick<ToolCallDetail, 'rawInput'> | null | undefined): string | null {
  if (!detail?.rawInput) return null
  let input: unknown
  try {
    input = JSON.parse(detail.rawInput)
  } catch {
    return null
  }
  const command = input && typeof input === 'object' && !Array.isArray(input) ? (input as { command?: unknown }).command : undefined
  if (typeof command === 'string') return command
  if (Array.isArray(command) && command.length > 0 && command.every((w): w is string => typeof w === 'string')) return command.map(shellWord).join(' ')
  return null
}

/** A reject option (REJECT_ONCE, REJECT_ALWAYS): a page shows it as the secondary choice. */
export function isRejectOption(option: Pick<PermissionOption, 'kind'>): boolean {
  return option.kind === 'REJECT_ONCE' || option.kind === 'REJECT_ALWAYS'
}

import { structuredPatch } from 'diff'

/** One line of a diff as the page shows it: kept as context, removed, added, or a gap between hunks. */
export interface DiffLine {
  mark: ' ' | '-' | '+' | '…'
  text: string
}

/** Context lines kept around each change, as `diff -u` does. */
const CONTEXT = 3
/**
 * Edits past this many changed lines are not matched line by line (jsdiff gives up): the page shows
 * the old text removed and the new added, so a huge edit cannot stall it. The server bounds both
 * texts anyway (64 KiB over a call's diffs).
 */
const MAX_EDIT_LENGTH = 2000

const linesOf = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'))

/**
 * An agent's proposed edit (oldText → newText; oldText null: a new file) as unified-diff lines
 * (jsdiff's structured patch): each change with 3 lines of context, hunks apart marked by a gap.
 */
export function diffLines(oldText: string | null, newText: string): DiffLine[] {
  const patch = structuredPatch('a', 'b', oldText ?? '', newText, undefined, undefined, { context: CONTEXT, maxEditLength: MAX_EDIT_LENGTH })
  if (!patch) return [...linesOf(oldText ?? '').map((text) => ({ mark: '-' as const, text })), ...linesOf(newText).map((text) => ({ mark: '+' as const, text }))]
  return patch.hunks.flatMap((hunk, i) => [
    ...(i > 0 ? [{ mark: '…' as const, text: '' }] : []),
    ...hunk.lines
      // "\ No newline at end of file" describes the line before it: the page shows lines, not files.
      .filter((line) => !line.startsWith('\\'))
      .map((line) => ({ mark: line[0] as DiffLine['mark'], text: line.slice(1) })),
  ])
}

// The page's reading of an agent's proposed edit: unified-diff lines with context, as a person reads `diff -u`.
import { describe, expect, it } from 'vitest'
import { diffLines } from '../../src/web/diff-lines.ts'

const show = (oldText: string | null, newText: string) => diffLines(oldText, newText).map((l) => `${l.mark}${l.text}`)

describe('diffLines', () => {
  it.each([
    { name: 'a new file is all added', old: null, next: '# Notes\nÉtape 1 ✓\n', lines: ['+# Notes', '+Étape 1 ✓'] },
    { name: 'a changed line between kept ones shows them as context', old: 'a\nb\nc\n', next: 'a\nB\nc\n', lines: [' a', '-b', '+B', ' c'] },
    {
      name: 'context is cut to 3 lines each side',
      old: '1\n2\n3\n4\n5\nx\n6\n7\n8\n9\n',
      next: '1\n2\n3\n4\n5\ny\n6\n7\n8\n9\n',
      lines: [' 3', ' 4', ' 5', '-x', '+y', ' 6', ' 7', ' 8'],
    },
    {
      name: 'changes far apart are two hunks with a gap between',
      old: 'a\n1\n2\n3\n4\n5\n6\n7\n8\nb\n',
      next: 'A\n1\n2\n3\n4\n5\n6\n7\n8\nB\n',
      lines: ['-a', '+A', ' 1', ' 2', ' 3', '…', ' 6', ' 7', ' 8', '-b', '+B'],
    },
    { name: 'a missing final newline is no line of its own', old: 'a\nb', next: 'a\nc', lines: [' a', '-b', '+c'] },
    { name: 'nothing changed is nothing to show', old: 'same\n', next: 'same\n', lines: [] },
  ])('$name', ({ old, next, lines }) => {
    expect(show(old, next)).toEqual(lines)
  })

  it('a huge edit is shown removed then added, without matching line by line', () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old ${i}`).join('\n')
    const after = Array.from({ length: 3000 }, (_, i) => `new ${i}`).join('\n')
    const lines = diffLines(before, after)
    expect(lines).toHaveLength(6000)
    expect(lines.slice(0, 3000).every((l) => l.mark === '-')).toBe(true)
    expect(lines.slice(3000).every((l) => l.mark === '+')).toBe(true)
  })
})

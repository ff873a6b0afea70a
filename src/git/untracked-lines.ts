import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { lstat, open, readFile, readlink } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { git } from './git-cli.ts'
import { untrackedLinesByGit } from './legacy-observe.ts'

// Lines of untracked files, counted in this process as `git diff --no-index --numstat /dev/null
// <file>` counts them (the old observation spawned that once per file): lines are split at "\n"
// and a last line without one counts; a file with a NUL in its first 8,000 bytes, or larger than
// core.bigFileThreshold's default, is binary and counts no lines. Git would also apply the file's
// attributes (diff, filter, working-tree-encoding, text): when an attribute file that can change
// the count exists, one `git check-attr` answers for every file (kept while the attribute files
// read the same), and a file whose attributes change what Git counts in a way not repeated here
// is handed to Git itself, as before.

const BINARY_PROBE = 8000 // git's buffer_is_binary looks this far for a NUL
const BIG_FILE = 512 * 1024 * 1024 // core.bigFileThreshold's default: larger files are binary to diff

/** git's count_lines: lines split at "\n", a trailing partial line counts. */
export function countLines(data: Buffer | string): number {
  const buffer = typeof data === 'string' ? Buffer.from(data) : data
  if (buffer.length === 0) return 0
  let lines = 0
  for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) lines++
  return buffer[buffer.length - 1] === 10 ? lines : lines + 1
}

interface Scan {
  lines: number
  nulInProbe: boolean
  nul: boolean
  crlf: boolean
}

/** One pass over a file in chunks (never the whole file in memory): its lines and where its NULs are. */
async function scan(file: string, size: number): Promise<Scan> {
  // Non-blocking: a FIFO swapped in after the lstat must not hold the observation open.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const chunk = Buffer.allocUnsafe(Math.min(Math.max(size, 1), 256 * 1024))
    const result: Scan = { lines: 0, nulInProbe: false, nul: false, crlf: false }
    let offset = 0
    let last = -1 // the previous chunk's last byte: a CR there and a LF here is one CRLF
    for (let read; (read = (await handle.read(chunk, 0, chunk.length, null)).bytesRead) > 0; offset += read) {
      const bytes = chunk.subarray(0, read)
      for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) {
        result.lines++
        if (!result.crlf && (at > 0 ? bytes[at - 1] : last) === 13) result.crlf = true
      }
      const nul = bytes.indexOf(0)
      if (nul !== -1) {
        result.nul = true
        if (offset + nul < BINARY_PROBE) result.nulInProbe = true
      }
      last = bytes[read - 1]!
    }
    if (offset > 0 && last !== 10) result.lines++ // a last line without its newline counts
    return result
  } finally {
    await handle.close()
  }
}

type Attributes = { diff: string; filter: string; encoding: string; text: string; eol: string }
const UNSPECIFIED: Attributes = { diff: 'unspecified', filter: 'unspecified', encoding: 'unspecified', text: 'unspecified', eol: 'unspecified' }

const exists = (file: string) => lstat(file).then(
  () => true,
  () => false,
)

/** The Git directory holding info/attributes: `.git`, or the common directory of a linked work tree's gitfile. */
async function commonGitDir(workTree: string): Promise<string> {
  const dotGit = path.join(workTree, '.git')
  if ((await lstat(dotGit)).isDirectory()) return dotGit
  const gitDir = path.resolve(workTree, (await readFile(dotGit, 'utf8')).replace(/^gitdir: /, '').trim())
  const common = await readFile(path.join(gitDir, 'commondir'), 'utf8').catch(() => '.')
  return path.resolve(gitDir, common.trim())
}

// Attributes that can change what `git diff --numstat` counts for a new file (a macro can set them).
const COUNTING_ATTRIBUTES = /\b(diff|filter|working-tree-encoding|binary)\b|\[attr\]/

interface Sources {
  /** Some attribute file exists: a text/eol attribute may force CRLF conversion. */
  any: boolean
  /** Some attribute file names an attribute that changes counting: ask `git check-attr`. */
  counting: boolean
  /** Their contents. */
  signature: string
}

/**
 * The attribute files that could apply to these paths: .gitattributes in a folder on their way
 * from the top, info/attributes, the default global file and the system file. A core.attributesFile
 * set to another place is not seen here (it would need a Git process on every observation).
 */
async function attributeSources(workTree: string, files: string[]): Promise<Sources> {
  const folders = new Set<string>(['.'])
  for (const file of files) for (let dir = path.dirname(file); dir !== '.' && !folders.has(dir); dir = path.dirname(dir)) folders.add(dir)
  const xdg = process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config')
  const candidates = [
    ...[...folders].map((dir) => path.join(workTree, dir, '.gitattributes')),
    path.join(await commonGitDir(workTree).catch(() => path.join(workTree, '.git')), 'info', 'attributes'),
    path.join(xdg, 'git', 'attributes'),
    ...(process.env.GIT_ATTR_NOSYSTEM ? [] : ['/etc/gitattributes']),
  ]
  const contents = (await Promise.all(candidates.map((file) => readFile(file, 'utf8').then((text) => [file, text], () => undefined)))).filter((c) => c !== undefined)
  const counting = contents.some(([, text]) => COUNTING_ATTRIBUTES.test(text!))
  return { any: contents.length > 0, counting, signature: JSON.stringify(contents) }
}

/**
 * `git check-attr` answers, kept per work tree while its attribute files read the same, so an idle
 * tree whose untracked files stay untracked asks Git once, not on every poll. Bounded: the least
 * recently observed work trees go first.
 */
const KEPT_TREES = 256
const NO_INDEX = path.join(os.tmpdir(), `tss-git-no-index-${randomUUID()}`) // never created: Git reads it as an empty index
const answers = new Map<string, { signature: string; byFile: Map<string, Attributes> }>()

async function attributesOf(workTree: string, files: string[], signature: string): Promise<Map<string, Attributes>> {
  const kept = answers.get(workTree)
  const known = kept?.signature === signature ? kept.byFile : new Map<string, Attributes>()
  const unknown = files.filter((file) => !known.has(file))
  if (unknown.length > 0) {
    const out = await git(workTree, ['check-attr', '-z', '--stdin', 'diff', 'filter', 'working-tree-encoding', 'text', 'eol'], {
      input: unknown.map((f) => `${f}\0`).join(''),
      // `diff --no-index` reads no index, so .gitattributes only in the index do not apply to it.
      env: { ...process.env, GIT_INDEX_FILE: NO_INDEX },
    })
    const fields = out.split('\0')
    const key = { diff: 'diff', filter: 'filter', 'working-tree-encoding': 'encoding', text: 'text', eol: 'eol' } as const
    for (let i = 0; i + 2 < fields.length; i += 3) {
      const [file, attribute, value] = [fields[i]!, fields[i + 1]! as keyof typeof key, fields[i + 2]!]
      known.set(file, { ...(known.get(file) ?? UNSPECIFIED), [key[attribute]]: value })
    }
  }
  const byFile = new Map(files.map((file) => [file, known.get(file) ?? UNSPECIFIED]))
  answers.delete(workTree)
  answers.set(workTree, { signature, byFile })
  if (answers.size > KEPT_TREES) answers.delete(answers.keys().next().value!)
  return byFile
}

/** Lines one untracked entry adds, or 'ask-git' when only Git can say. */
async function linesHere(workTree: string, file: string, attributes: Attributes): Promise<number | 'ask-git'> {
  if (attributes.filter !== 'unspecified' || attributes.encoding !== 'unspecified') return 'ask-git'
  if (attributes.diff !== 'unspecified' && attributes.diff !== 'set' && attributes.diff !== 'unset') return 'ask-git' // a diff driver's own binary setting
  const full = path.join(workTree, file)
  const stats = await lstat(full).catch(() => undefined)
  if (!stats) return 0 // git cannot access it either (a file gone, or a name Git printed quoted)
  if (stats.isSymbolicLink()) return attributes.diff === 'unset' ? 0 : countLines(await readlink(full, { encoding: 'buffer' }))
  if (stats.isDirectory()) return (await exists(path.join(full, 'null'))) ? 'ask-git' : 0 // git diffs /dev/null against <dir>/null
  if (!stats.isFile()) return 'ask-git'
  if (attributes.diff === 'unset' || stats.size > BIG_FILE) return 0
  const found = await scan(full, stats.size)
  // A forced text attribute converts CRLF even in a file with NULs, which may move one into the probe.
  const forcedText = attributes.text === 'set' || (attributes.eol !== 'unspecified' && attributes.text !== 'unset')
  if (forcedText && found.nul && found.crlf) return 'ask-git'
  if (attributes.diff !== 'set' && found.nulInProbe) return 0
  return found.lines
}

/** Sum of the lines the untracked `files` (as `git status` prints them, from the top of the work tree) add. */
export async function untrackedLines(workTree: string, files: string[]): Promise<number> {
  if (files.length === 0) return 0
  const sources = await attributeSources(workTree, files)
  const attributes = sources.counting ? await attributesOf(workTree, files, sources.signature) : new Map<string, Attributes>()
  // Without an answer from Git, a text or eol attribute may be set: the conservative reading.
  const fallback: Attributes = sources.any && !sources.counting ? { ...UNSPECIFIED, text: 'set' } : UNSPECIFIED
  let lines = 0
  for (const file of files) {
    const here = await linesHere(workTree, file, attributes.get(file) ?? fallback)
    lines += here === 'ask-git' ? await untrackedLinesByGit(workTree, file) : here
  }
  return lines
}

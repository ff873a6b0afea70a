// V8 CPU profiles of a bench process (the server under measure, or the raw ws baseline), taken
// over extra rounds after the measured ones so the profiler's cost is in no reported figure, and
// summarized as the functions with the most self time and as that self time grouped in buckets
// (GC, socket writes, JSON, GraphQL, our delivery code, …).
import { readFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'

let session: Session | undefined

export async function startCpuProfile(): Promise<void> {
  session ??= new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
}

export async function stopCpuProfile(): Promise<CpuProfile> {
  const { profile } = await session!.post('Profiler.stop')
  session!.disconnect()
  return profile as CpuProfile
}

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>
  samples: number[]
  timeDeltas: number[]
}

export interface SelfTime {
  /** Function name and file (the last two path segments), or a V8 pseudo-frame such as (garbage collector). */
  name: string
  ms: number
  /** Share of the busy time: every sample but idle and the profiler's own. */
  share: number
}

/** What a profile is summarized as: its heaviest functions, and every busy sample in a bucket. */
export interface ProfileSummary {
  top: SelfTime[]
  /** Heaviest first; every busy sample is in exactly one (the last, "other", takes the rest). */
  buckets: SelfTime[]
}

/** Self time by call frame (µs), idle and the profiler's own frames (node:inspector) left out. */
function selfTimes(profile: CpuProfile): { frames: Array<[CallFrame, number]>; busy: number } {
  const parent = new Map<number, number>()
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const profilerOwn = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)!.callFrame.url === 'node:inspector') return true
    return false
  }
  const time = new Map<number, number>()
  profile.samples.forEach((id, i) => time.set(id, (time.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const frames: Array<[CallFrame, number]> = []
  let busy = 0
  for (const [id, us] of time) {
    const frame = byId.get(id)!.callFrame
    if (frame.functionName === '(idle)' || profilerOwn(id)) continue
    frames.push([frame, us])
    busy += us
  }
  return { frames, busy }
}

const ranked = (totals: Map<string, number>, busy: number): SelfTime[] =>
  [...totals].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, ms: us / 1000, share: us / Math.max(busy, 1) }))

/** Functions by self time, heaviest first; the profiler's own frames (node:inspector) and idle left out. */
export function topSelfTime(profile: CpuProfile, count = 10): SelfTime[] {
  const { frames, busy } = selfTimes(profile)
  const self = new Map<string, number>()
  for (const [frame, us] of frames) {
    const file = frame.url ? ` ${frame.url.split('/').slice(-2).join('/')}` : ''
    const name = `${frame.functionName || '(anonymous)'}${file}`
    self.set(name, (self.get(name) ?? 0) + us)
  }
  return ranked(self, busy).slice(0, count)
}

/** A file of this repository's src/ (not a package's own src/ folder). */
const ours = (f: CallFrame, folders: RegExp) => !f.url.includes('/node_modules/') && folders.test(f.url)

/** Self-time buckets of a fan-out, the first that matches a frame taking it (V8 reports builtins such as writev or JSON.stringify with no url). */
const BUCKETS: Array<{ name: string; match: (f: CallFrame) => boolean }> = [
  { name: 'GC', match: (f) => f.functionName === '(garbage collector)' },
  {
    name: 'socket writes and ws framing (writev, node:net, streams, buffers, ws)',
    match: (f) =>
      (f.url === '' && /^(writev|writeBuffer|writeUtf8String|writeLatin1String|writeAsciiString|writeUcs2String|writeString)$/.test(f.functionName)) ||
      /^node:(net|buffer|internal\/stream_base_commons|internal\/streams\/|internal\/buffer|stream)/.test(f.url) ||
      /\/node_modules\/(ws|bufferutil|utf-8-validate)\//.test(f.url),
  },
  { name: 'JSON (stringify, parse)', match: (f) => f.url === '' && /^(stringify|parse|JSON\.\w+|SerializeJSON\w*)$/.test(f.functionName) },
  {
    name: 'GraphQL (graphql-js, graphql-jit, yoga, envelop, graphql-ws, Pothos; src/schema, src/server)',
    match: (f) =>
      ours(f, /\/src\/(schema|server)\//) ||
      /\/node_modules\/(graphql|graphql-jit|graphql-yoga|graphql-ws|@graphql-yoga|@graphql-tools|@envelop|@pothos|@whatwg-node|@escape\.tech|fast-json-stringify)\//.test(f.url),
  },
  { name: 'our delivery code (src/delivery, src/outbound, src/feed, src/pubsub, src/session-stream)', match: (f) => ours(f, /\/src\/(delivery|outbound|feed|pubsub|session-stream)\//) },
  {
    name: 'store and projection (src/store, src/projector, src/summary, Prisma and its wasm, SQLite)',
    match: (f) =>
      ours(f, /\/src\/(store|projector|summary|generated)\//) ||
      /\/node_modules\/(@prisma|prisma|better-sqlite3|async-mutex)\//.test(f.url) ||
      f.url.startsWith('wasm://') ||
      // better-sqlite3's native statement methods
      (f.url === '' && /^(Statement|all|run|iterate|prepare|exec)$/.test(f.functionName)),
  },
  { name: 'other server code (src/…)', match: (f) => ours(f, /\/src\//) },
  { name: 'bench harness (its IPC and handlers)', match: (f) => f.url.includes('/bench/') || f.url.startsWith('node:internal/child_process') },
  {
    name: 'event loop (microtasks, timers, events)',
    match: (f) => /^(runMicrotasks|processTicksAndRejections)$/.test(f.functionName) || /^node:(internal\/timers|internal\/process\/task_queues|events|internal\/async_hooks)/.test(f.url),
  },
  { name: '(program): V8/native, unattributed', match: (f) => f.functionName === '(program)' },
]

/** Every busy sample's self time in the first bucket that matches its frame, or "other". */
export function selfTimeBuckets(profile: CpuProfile): SelfTime[] {
  const { frames, busy } = selfTimes(profile)
  const totals = new Map<string, number>()
  for (const [frame, us] of frames) {
    const bucket = BUCKETS.find((b) => b.match(frame))?.name ?? 'other (Node internals, other packages)'
    totals.set(bucket, (totals.get(bucket) ?? 0) + us)
  }
  return ranked(totals, busy)
}

/** Write system calls (write, writev) this process has made (Linux /proc/self/io; 0 where it cannot be read). */
export function writeSyscalls(): number {
  try {
    return Number(/^syscw:\s*(\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

export function summarizeProfile(profile: CpuProfile, count = 12): ProfileSummary {
  return { top: topSelfTime(profile, count), buckets: selfTimeBuckets(profile) }
}

// V8 CPU profiles of a bench process (the server under measure, or the raw ws baseline), taken
// over extra rounds after the measured ones so the profiler's cost is in no reported figure, and
// summarized as the functions with the most self time.
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

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>
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

/** Functions by self time, heaviest first; the profiler's own frames (node:inspector) and idle left out. */
export function topSelfTime(profile: CpuProfile, count = 10): SelfTime[] {
  const parent = new Map<number, number>()
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const profilerOwn = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)!.callFrame.url === 'node:inspector') return true
    return false
  }
  const time = new Map<number, number>()
  profile.samples.forEach((id, i) => time.set(id, (time.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const self = new Map<string, number>()
  let busy = 0
  for (const [id, us] of time) {
    const frame = byId.get(id)!.callFrame
    if (frame.functionName === '(idle)' || profilerOwn(id)) continue
    const file = frame.url ? ` ${frame.url.split('/').slice(-2).join('/')}` : ''
    const name = `${frame.functionName || '(anonymous)'}${file}`
    self.set(name, (self.get(name) ?? 0) + us)
    busy += us
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, ms: us / 1000, share: us / Math.max(busy, 1) }))
}

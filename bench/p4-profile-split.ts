// Splits a .cpuprofile's samples by where they come from. Native frames (JSON, Buffer, sqlite's
// Statement) count to their nearest JavaScript caller, so "serialization" includes the
// JSON.stringify it calls and "prisma" the driver's native work it asks for.
// `tsx bench/p4-profile-split.ts FILE REQUESTS` prints one profile's split per request.
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
export interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** The origin of a frame's code; undefined for a native frame (counted to its caller). */
export function phase(url: string, fn: string): string | undefined {
  if (!url) return fn === '(garbage collector)' ? 'gc' : fn === '(idle)' ? 'idle' : fn === '(program)' ? 'program' : undefined
  if (url.includes('result-processor/stringify')) return 'serialization (yoga stringify)'
  if (url.includes('/node_modules/graphql/')) return 'graphql-js (types, values)'
  if (url.includes('@graphql-tools/executor')) return 'execution (@graphql-tools/executor)'
  // graphql-jit's compiled queries have no url of their own: they count to graphql-jit's caller frames.
  if (url.includes('/graphql-jit/')) return 'execution (graphql-jit)'
  if (url.includes('@pothos')) return 'pothos'
  if (/graphql-yoga|@envelop|@whatwg-node|graphql-armor|@graphql-tools|@repeaterjs/.test(url)) return 'yoga/envelop/http'
  if (url.includes('@prisma/') || url.includes('/src/generated/') || url.startsWith('wasm://')) return 'prisma (+ sqlite/pg driver)'
  if (/better-sqlite3|\/pg\/|pg-protocol|pg-types|pg-pool/.test(url)) return 'prisma (+ sqlite/pg driver)'
  if (url.includes('dataloader')) return 'dataloader'
  if (url.includes('/node_modules/')) return `pkg ${url.split('/node_modules/').at(-1)!.split('/')[0]}`
  if (url.includes('/src/')) return `src ${url.split('/src/').at(-1)}`
  if (url.startsWith('node:')) return 'node internals'
  return url
}

/** Sampled time per request (ms) by origin. */
export function split(profile: Profile, requests: number): [string, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const out = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i + 1] ?? 0
    const leaf = byId.get(id)!
    let node: ProfileNode | undefined = leaf
    let origin: string | undefined
    while (node && !(origin = phase(node.callFrame.url, node.callFrame.functionName))) node = byId.get(parent.get(node.id)!)
    origin ??= `native ${leaf.callFrame.functionName}`
    out.set(origin, (out.get(origin) ?? 0) + us)
  })
  return [...out].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, us / requests / 1000])
}

if (process.argv[1]?.endsWith('p4-profile-split.ts') && process.argv[2]) {
  for (const [k, ms] of split(JSON.parse(readFileSync(process.argv[2], 'utf8')) as Profile, Number(process.argv[3] ?? 1)))
    if (ms > 0.05) console.info(`${ms.toFixed(2).padStart(7)} ms  ${k}`)
}

// Anyone can POST to /webhooks/github, and a body is held in memory until its signature is
// verified. Thirty concurrent unsigned 5 MB bodies used to add about 105 MB to the server before
// the first was refused. Now the unverified bytes of all requests together stay within a budget
// (8 MiB by default; 5 MiB per body): what does not fit is answered 503 with Retry-After, what is
// over the per-body limit 413, and the server's memory growth stays bounded. The server runs as
// its own process, so its resident memory is what is measured (/proc/<pid>/status).
import { randomUUID } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { INSTANCE_ADMIN_TOKEN, killAll, startInstance, type Instance } from '../support/instances.ts'
import { migratedDatabase } from '../support/databases.ts'
import { eventually } from '../support/wait.ts'
import { ok } from '../support/client.ts'
import { sign } from '../../src/github/signature.ts'
import { CreateWorkspaceDocument, LinkGitHubRepositoryDocument } from '../generated/graphql.ts'

const SECRET = 'memory-secret-for-tests'
const MB = 1_000_000
/** 90 bodies of 5 MB: 450 MB in flight at once, against a budget of 8 MiB. */
const BURST = 90
/**
 * The budget is 8 MiB of unverified bytes. What else a burst costs is the refused bodies' bytes in
 * passing: read from the socket and dropped, they are garbage that V8 collects once enough
 * external memory has been allocated (on Node 24 the resident growth levels off near 65-70 MB,
 * the same for 30, 60 or 90 bodies). A server holding the bodies grows with them: a quarter of
 * each would be over 110 MB.
 */
const GROWTH_BOUND = 100 * MB

/** Resident memory now and at its peak since the last reset, in bytes (Linux). */
function memory(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024
  return { rss: kB('VmRSS'), peak: kB('VmHWM') }
}
/** Resets the peak (VmHWM) to the current RSS, so the next peak read is the burst's. */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5')

interface Answer {
  status: number
  retryAfter?: string
}

/**
 * One POST whose body is `size` bytes, sent as it is written: declared (Content-Length) or chunked.
 * With `holdAfter`, the first bytes are sent and the rest only once `holdAfter.until` settles.
 * Resolves with the answer, or with status 0 when the server closed the connection first.
 */
function post(
  instance: Instance,
  size: number,
  options: { chunked?: boolean; headers?: Record<string, string>; body?: Buffer; holdAfter?: { bytes: number; until: Promise<unknown> } } = {},
): Promise<Answer> {
  const body = options.body ?? Buffer.alloc(size, 0x20)
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: instance.port,
        path: '/webhooks/github',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'pull_request',
          'x-github-delivery': randomUUID(),
          ...(!options.chunked && { 'content-length': String(body.length) }),
          ...options.headers,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined }))
        res.on('error', () => resolve({ status: res.statusCode! }))
      },
    )
    req.on('error', () => resolve({ status: 0 }))
    // 64 KiB writes, as a client streams a large body.
    const send = (from: number, to: number) => {
      for (let offset = from; offset < to; offset += 65_536) req.write(body.subarray(offset, Math.min(offset + 65_536, to)))
    }
    const held = options.holdAfter ? Math.min(options.holdAfter.bytes, body.length) : body.length
    send(0, held)
    void (options.holdAfter?.until ?? Promise.resolve()).then(
      () => {
        send(held, body.length)
        req.end()
      },
      () => req.destroy(),
    )
  })
}

describe('webhook bodies before their signature is verified: a shared budget bounds the server’s memory', () => {
  const children: ChildProcess[] = []
  let instance: Instance
  let pid: number
  const repository = `acme/memory-${randomUUID().slice(0, 8)}`

  beforeAll(async () => {
    instance = await startInstance('webhook-memory', { DATABASE_URL: await migratedDatabase('sqlite'), GITHUB_WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'warn' }, children)
    pid = instance.server.child.pid!
    const { createWorkspace } = await ok(instance.url, INSTANCE_ADMIN_TOKEN, CreateWorkspaceDocument, { name: 'memory' })
    await ok(instance.url, INSTANCE_ADMIN_TOKEN, LinkGitHubRepositoryDocument, { workspaceId: createWorkspace.id, repository })
  })
  afterAll(() => killAll(children))

  /** A signed pull_request delivery for the linked repository, padded with JSON whitespace to `size` bytes. */
  function signedDelivery(number: number, size = 0) {
    const json = JSON.stringify({
      action: 'opened',
      repository: { full_name: repository },
      pull_request: { number, html_url: `https://github.com/${repository}/pull/${number}`, title: 'T', state: 'open', head: { ref: 'main' }, updated_at: new Date().toISOString() },
    })
    const body = Buffer.from(json.padEnd(Math.max(size, json.length), ' '))
    return post(instance, body.length, { body, headers: { 'x-hub-signature-256': sign(SECRET, body) } })
  }

  async function burst(chunked: boolean) {
    // Warm: a first delivery loads the code paths, so the burst's growth is the bodies' alone.
    expect((await signedDelivery(1)).status).toBe(200)
    const before = memory(pid)
    resetPeak(pid)
    // Every sender has its first megabyte out (90 MB, far over the budget) before any sends the
    // rest, so the bodies are in flight together however the event loops interleave: the server
    // must refuse some of them before any can complete. The first answer releases the rest (or a
    // deadline: a server that refuses nothing waits for whole bodies, and is then measured).
    let firstAnswer!: () => void
    const answered = atLatest(new Promise<void>((resolve) => (firstAnswer = resolve)), 5_000)
    const requests = Array.from({ length: BURST }, () => post(instance, 5 * MB, { chunked, holdAfter: { bytes: MB, until: answered } }))
    for (const request of requests) void request.then(firstAnswer)
    const answers = await Promise.all(requests)
    const after = memory(pid)
    const growth = after.peak - before.rss
    console.info(
      `${BURST} concurrent unsigned 5 MB bodies (${chunked ? 'chunked' : 'Content-Length'}): RSS before ${(before.rss / MB).toFixed(1)} MB, ` +
        `peak during ${(after.peak / MB).toFixed(1)} MB, after ${(after.rss / MB).toFixed(1)} MB, growth ${(growth / MB).toFixed(1)} MB; ` +
        `answers ${JSON.stringify(countBy(answers.map((a) => a.status)))}`,
    )
    return { answers, growth }
  }

  it.each([
    { sent: 'declared with Content-Length', chunked: false },
    { sent: 'chunked (no length given)', chunked: true },
  ])('$sent: 90 concurrent unsigned 5 MB bodies → none accepted, some 503 with Retry-After, peak RSS growth under 100 MB; a signed delivery right after is applied', async ({ chunked }) => {
    const { answers, growth } = await burst(chunked)
    expect(answers.filter((a) => a.status >= 200 && a.status < 300)).toEqual([])
    expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true)
    const refused = answers.filter((a) => a.status === 503)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((a) => a.retryAfter === '1')).toBe(true)
    expect(growth).toBeLessThan(GROWTH_BOUND)
    expect(await signedDelivery(2)).toMatchObject({ status: 200 })
  })

  it('a body over the 5 MiB per-body limit → 413, declared or streamed, and nothing of it is kept', async () => {
    const over = 5 * 1024 * 1024 + 1
    expect((await post(instance, over)).status).toBe(413)
    expect((await post(instance, over, { chunked: true })).status).toBe(413)
    // A signed 5 MB delivery just under the limit is still taken: the refusals left the budget whole.
    expect((await signedDelivery(3, 5 * MB)).status).toBe(200)
  })

  it('a client that disconnects mid-body gives its reservation back: a signed 5 MB delivery is then applied', async () => {
    await new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port: instance.port, path: '/webhooks/github', method: 'POST', headers: { 'content-length': String(5 * MB) } })
      req.on('error', () => resolve())
      req.write(Buffer.alloc(65_536, 0x20), () => {
        req.destroy()
        resolve()
      })
    })
    // The server learns of the disconnect on its own time: the delivery is sent again until it
    // fits. A reservation that leaked (5 MB of 8 MiB) would refuse it every time.
    await eventually(async () => (await signedDelivery(4, 5 * MB)).status === 200, 10_000)
  })
})

/** Settles with `promise`, or resolves after `ms` at the latest. */
function atLatest(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

function countBy(values: number[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1
  return counts
}

import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'

describe('the page at / (sqlite)', () => {
  let server: TestServer
  let unbuilt: TestServer
  let emptyRoot: string
  beforeAll(async () => {
    emptyRoot = mkdtempSync(path.join(os.tmpdir(), 'tss-web-'))
    mkdirSync(path.join(emptyRoot, 'web'))
    writeFileSync(path.join(emptyRoot, 'secret.txt'), 'outside the build')
    ;[server, unbuilt] = await Promise.all([startTestServer('sqlite', { webRoot: inject('webRoot') }), startTestServer('sqlite', { webRoot: path.join(emptyRoot, 'web') })])
  })
  afterAll(async () => {
    await Promise.all([server?.close(), unbuilt?.close()])
    rmSync(emptyRoot, { recursive: true, force: true })
  })

  it('serves the built page at / (revalidated) and its hashed assets (cached for good)', async () => {
    const page = await fetch(`${server.url}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.headers.get('cache-control')).toBe('no-cache')
    const html = await page.text()
    const script = /<script type="module" crossorigin src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1]
    expect(script).toBeDefined()
    const asset = await fetch(`${server.url}${script}`)
    expect(asset.status).toBe(200)
    expect(asset.headers.get('content-type')).toContain('text/javascript')
    expect(asset.headers.get('cache-control')).toContain('immutable')
    expect((await asset.text()).length).toBeGreaterThan(1000)
  })

  it('leaves /graphql to GraphiQL and answers 404 for an unknown asset', async () => {
    const graphiql = await fetch(`${server.url}/graphql`, { headers: { accept: 'text/html' } })
    expect(await graphiql.text()).toContain('GraphiQL')
    expect((await fetch(`${server.url}/assets/nope.js`)).status).toBe(404)
  })

  it('never serves a file outside the build, however the path is spelled', async () => {
    for (const spelled of ['/assets/../../secret.txt', '/assets/%2e%2e/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/assets/%E0%A4%A'])
      expect((await fetch(`${unbuilt.url}${spelled}`)).status).toBe(404)
  })

  it('says how to build the page when it is not built', async () => {
    const page = await fetch(`${unbuilt.url}/`)
    expect(page.status).toBe(503)
    expect(await page.text()).toContain('npm run build:web')
  })
})

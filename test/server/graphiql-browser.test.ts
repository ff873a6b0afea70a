import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { ViewerDocument } from '../generated/graphql.ts'

/** The shown Monaco editor of a GraphiQL region (the editor tools keep the inactive tab's editor hidden). */
const editorIn = (page: Page, region: string) =>
  page.getByRole('region', { name: region }).locator('.monaco-editor').filter({ visible: true })

/** Replaces a Monaco editor's whole text the way a paste does (typing would auto-close brackets). */
async function replaceEditorText(page: Page, region: string, text: string) {
  await editorIn(page, region).click()
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.press('Delete')
  await page.keyboard.insertText(text)
}

describe('GraphiQL in a browser with every other host blocked (sqlite)', () => {
  let server: TestServer
  let browser: Browser
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('renders the editor, runs a query with the token from the headers editor and shows the result', async () => {
    const { token } = await userWithWorkspace(server, 'Grace')
    const userId = (await ok(server.graphqlUrl, token, ViewerDocument)).viewer.user.id

    const context = await browser.newContext()
    const blocked = await blockOtherHosts(context)
    const page = await context.newPage()
    const pageErrors: string[] = []
    page.on('pageerror', (error) => pageErrors.push(error.message))

    // GraphiQL introspects at load; every limit applies to introspection, and its standard query passes them.
    const introspection = page.waitForResponse((r) => r.request().postData()?.includes('query IntrospectionQuery') === true)
    await page.goto(server.graphqlUrl)
    const introspected = (await (await introspection).json()) as { data?: { __schema: { types: unknown[] } }; errors?: unknown }
    expect(introspected.errors).toBeUndefined()
    expect(introspected.data?.__schema.types.length).toBeGreaterThan(50)
    // Before waiting for the editor: a page that reaches for a CDN fails here, naming the URLs.
    expect(blocked.attempted).toEqual([])
    expect(await page.title()).toBe('Task status server')
    const queryLines = editorIn(page, 'Operation Editor').locator('.view-lines')
    await queryLines.waitFor({ state: 'visible' })
    expect(await queryLines.innerText()).toContain('viewer')
    // The headers editor is open from the start, holding the header to fill in.
    const headerLines = editorIn(page, 'Headers').locator('.view-lines')
    expect(await headerLines.innerText()).toContain('Authorization')

    await replaceEditorText(page, 'Headers', JSON.stringify({ Authorization: `Bearer ${token}` }))
    await replaceEditorText(page, 'Operation Editor', '{ viewer { user { id } } }')
    await page.getByRole('button', { name: /^Execute query/ }).click()

    const response = editorIn(page, 'Result Window').locator('.view-lines')
    await expect.poll(() => response.innerText(), { timeout: 15_000 }).toContain(userId)

    expect(pageErrors).toEqual([])
    expect(blocked.attempted).toEqual([])
    await context.close()
  })
})

// GraphiQL as a person uses it, in Chromium with every non-loopback request blocked: the token
// typed into the headers editor authenticates a subscription, whose events appear in the result
// pane as tasks change; without a token the pane shows the server's error instead of spinning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument } from '../generated/graphql.ts'

describe('GraphiQL in Chromium (sqlite)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'graphiql'))
    browser = await launchBrowser()
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  /** Replaces an editor's text the way a person does: click into it, select all, type. */
  async function typeInto(page: Page, editor: string, text: string) {
    await page.locator(editor).first().click()
    await page.keyboard.press('Control+A')
    await page.keyboard.press('Delete')
    // insertText: Monaco would otherwise auto-close the brackets and quotes a person types.
    await page.keyboard.insertText(text)
  }

  async function openGraphiQL(headers: string) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const blocked = await blockOtherHosts(context)
    const page = await context.newPage()
    await page.goto(`${server.url}/graphql`)
    await page.locator('.graphiql-query-editor .monaco-editor').first().waitFor({ timeout: 30_000 })
    await page.getByRole('button', { name: 'Headers' }).click()
    await typeInto(page, '.graphiql-editor-tool .monaco-editor[data-uri$="headers.json"]', headers)
    await typeInto(page, '.graphiql-query-editor .monaco-editor', `subscription { workspaceEvents(workspaceId: "${workspaceId}") { __typename ... on TaskUpserted { task { title } } } }`)
    await page.locator('.graphiql-execute-button').click()
    // Monaco renders spaces as no-break spaces.
    const response = async () => (await page.locator('.graphiql-response').innerText()).replace(/\u00a0/g, ' ')
    return { context, page, blocked, response }
  }

  it('a subscription run with the token from the headers editor shows each event as it comes', { timeout: 90_000 }, async () => {
    const { context, blocked, response } = await openGraphiQL(JSON.stringify({ Authorization: `Bearer ${token}` }))
    // A task written while the subscription runs appears in the pane (each event replaces the
    // last one shown, so one is written every second until its TaskUpserted is caught).
    let probes = 0
    await eventually(async () => {
      if (probes++ % 50 === 0) await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'typed in GraphiQL' } })
      const shown = await response()
      return shown.includes('TaskUpserted') && shown.includes('typed in GraphiQL')
    }, 30_000)
    expect(blocked.attempted).toEqual([])
    await context.close()
  })

  it('without a token the result pane shows UNAUTHENTICATED with its message', { timeout: 90_000 }, async () => {
    const { context, blocked, response } = await openGraphiQL('{}')
    await eventually(async () => (await response()).includes('UNAUTHENTICATED'), 30_000)
    expect(await response()).toContain('A valid bearer token is required.')
    expect(blocked.attempted).toEqual([])
    await context.close()
  })
})

import { mkdirSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { seedDemoWorkspace, type SeededWorkspace } from '../../src/demo/seed.ts'
import { startDemoActivity, type DemoActivity } from '../../src/demo/activity.ts'
import { bundleMockAgent, type BundledMock } from '../../src/demo/fast-mock.ts'

// The README's pictures are retaken only on request (`npm run screenshots`): `npm test` takes
// them into a temporary folder, so a clone stays as it was after its own test command.
const SHOTS = process.env.UPDATE_DOCS_SCREENSHOTS === '1' ? path.resolve(import.meta.dirname, '../../docs') : mkdtempSync(path.join(os.tmpdir(), 'switcher-shots-'))

/** The kinds of badge a switcher shows right now, across its rows. */
function shownKinds(page: Page, switcher: 'desktop' | 'phone'): Promise<string[]> {
  return page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) => {
    const kinds = new Set<string>()
    for (const row of rows as HTMLElement[]) {
      kinds.add(row.dataset.primary ?? '')
      for (const badge of row.querySelectorAll<HTMLElement>('[data-badge]')) kinds.add(badge.dataset.badge ?? '')
    }
    return [...kinds].sort()
  })
}

const LIVE_KINDS = ['permission', 'clarification', 'generating', 'error', 'git']

/** `npm run demo`'s workspace (27 tasks, scripted agents) in both switchers: the README's pictures. */
describe('the demo workspace on desktop and phone (sqlite, bundled mock agents)', () => {
  let server: TestServer
  let browser: Browser
  let bundled: BundledMock | undefined
  let seeded: SeededWorkspace
  let activity: DemoActivity

  beforeAll(async () => {
    // As `npm run demo` runs them: the agents take their scripts from the bundle's script folder.
    bundled = await bundleMockAgent()
    if (!bundled) throw new Error('the mock agent could not be bundled')
    server = await startTestServer('sqlite', { webRoot: inject('webRoot'), env: { AGENT_PROFILES: JSON.stringify({ mock: bundled.profile }) } })
    seeded = await seedDemoWorkspace({ graphqlUrl: server.graphqlUrl, adminToken: server.adminToken })
    activity = startDemoActivity({ graphqlUrl: server.graphqlUrl, token: seeded.token, tasks: seeded.tasks, scriptDir: bundled.scriptDir, intervalMs: 400 })
    browser = await launchBrowser()
    mkdirSync(SHOTS, { recursive: true })
  }, 120_000)

  afterAll(async () => {
    await activity?.stop()
    await browser?.close()
    await seeded?.cleanup({ stopSessions: false })
    await server?.close()
    await bundled?.remove()
  })

  it('shows live permission, question, generating, error and Git badges in the sidebar and the phone sheet', async () => {
    const desktopContext = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const phoneContext = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 })
    for (const context of [desktopContext, phoneContext]) await blockOtherHosts(context)
    const desktop = await desktopContext.newPage()
    const phone = await phoneContext.newPage()
    const errors: string[] = []
    for (const page of [desktop, phone]) {
      page.on('pageerror', (e) => errors.push(e.message))
      await page.goto(`${server.url}/#token=${encodeURIComponent(seeded.token)}`)
    }
    await phone.locator('[data-action="open-sheet"]').click()

    await expect.poll(() => shownKinds(desktop, 'desktop'), { timeout: 60_000 }).toEqual(expect.arrayContaining(LIVE_KINDS))
    await expect.poll(() => shownKinds(phone, 'phone'), { timeout: 60_000 }).toEqual(expect.arrayContaining(LIVE_KINDS))
    // The workspace's name shows whole in the phone's header: its select keeps its natural width.
    const shrunk = await phone.locator('select[aria-label="Workspace"]').evaluate((select: HTMLSelectElement) => {
      const shown = select.getBoundingClientRect().width
      select.style.flexShrink = '0'
      const natural = select.getBoundingClientRect().width
      select.style.flexShrink = ''
      return natural - shown
    })
    expect(shrunk).toBe(0)

    // The activity answers requests as it goes, possibly the one just opened: open a row waiting
    // for a permission until its session shows the pending request.
    const permissionRow = desktop.locator('[data-switcher="desktop"] .task-row[data-primary="permission"]').first()
    const pendingShown = () => desktop.locator('.pending.permission').first().waitFor({ timeout: 5_000 }).then(() => true, () => false)
    await expect.poll(async () => (await permissionRow.click(), await pendingShown()), { timeout: 60_000 }).toBe(true)
    await desktop.screenshot({ path: path.join(SHOTS, 'switcher-desktop.png') })
    await phone.screenshot({ path: path.join(SHOTS, 'switcher-phone.png') })
    expect(errors).toEqual([])
    await desktopContext.close()
    await phoneContext.close()
  }, 120_000)
})

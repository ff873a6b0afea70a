// Opt-in desktop notifications. Headless Chromium shows no OS notification a test could see, so
// window.Notification is replaced (addInitScript) by a recorder with the real permission state:
// what is asserted is what the page asks the browser to show, and what a click on it does.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument, TaskStatusSummariesDocument } from '../generated/graphql.ts'

const DESKTOP = { width: 1280, height: 800 }
const script = (steps: unknown[]) => JSON.stringify({ script: steps })

interface Recorded {
  title: string
  body: string
  tag: string
  closed: boolean
}

/** Replaces window.Notification by a recorder (instances in window.__notices) and counts permission requests and window.focus calls. */
function recordNotifications() {
  const real = window.Notification
  const w = window as unknown as { __notices: unknown[]; __permissionRequests: number; __focusCalls: number }
  w.__notices = []
  w.__permissionRequests = 0
  w.__focusCalls = 0
  const focus = window.focus.bind(window)
  window.focus = () => {
    w.__focusCalls++
    focus()
  }
  class RecordingNotification {
    static get permission() {
      return real.permission
    }
    static requestPermission() {
      w.__permissionRequests++
      return real.requestPermission()
    }
    onclick: (() => void) | null = null
    closed = false
    body: string
    tag: string
    constructor(
      readonly title: string,
      options: { body?: string; tag?: string } = {},
    ) {
      this.body = options.body ?? ''
      this.tag = options.tag ?? ''
      w.__notices.push(this)
    }
    close() {
      this.closed = true
    }
  }
  ;(window as unknown as { Notification: unknown }).Notification = RecordingNotification
}

const notices = (page: Page) =>
  page.evaluate(() => (window as unknown as { __notices: Recorded[] }).__notices.map(({ title, body, tag, closed }) => ({ title, body, tag, closed })))
const counter = (page: Page, name: '__permissionRequests' | '__focusCalls') => page.evaluate((n) => (window as unknown as Record<string, number>)[n]!, name)
const toggle = (page: Page) => page.getByRole('button', { name: 'Notify me' })
const decided = async (page: Page) => Number(await toggle(page).getAttribute('data-decided'))

describe('opt-in desktop notifications (Chromium, sqlite)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string
  const tasks: { id: string; title: string; sessionId: string }[] = []
  let sent = 0

  const say = (task: (typeof tasks)[number], content: string) =>
    ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId: task.id, sessionId: task.sessionId, content, clientMessageId: `n-${++sent}` } })

  async function tab(context: BrowserContext): Promise<{ page: Page; errors: string[] }> {
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${server.url}/#token=${encodeURIComponent(token)}`)
    return { page, errors }
  }

  /** Every row of the page shows the summary revision the server holds. */
  async function caughtUp(page: Page) {
    await server.projector.idle()
    await eventually(async () => {
      const stored = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: tasks.map((t) => t.id) })).taskStatusSummaries
      const shown = new Map(
        await page.$$eval('[data-switcher="desktop"] .task-row', (rows) => rows.map((r) => [(r as HTMLElement).dataset.taskId!, Number((r as HTMLElement).dataset.revision)] as const)),
      )
      return stored.every((s) => s && shown.get(s.taskId) === s.revision)
    }, 30_000)
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'Notify'))
    for (const title of ['Deploy', 'Migrate', 'Review']) {
      const id = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id
      const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: id, agentProfile: 'mock' } })).startSession.id
      await sessionSettled(server, sessionId)
      tasks.push({ id, title, sessionId })
    }
    browser = await launchBrowser()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('asks for permission only when "Notify me" is clicked, and says so when the browser refuses', async () => {
    const context = await browser.newContext({ viewport: DESKTOP })
    await blockOtherHosts(context)
    await context.addInitScript(recordNotifications)
    const { page, errors } = await tab(context)
    await caughtUp(page)
    expect(await counter(page, '__permissionRequests')).toBe(0)
    expect(await toggle(page).getAttribute('aria-pressed')).toBe('false')
    await toggle(page).click()
    await expect.poll(() => counter(page, '__permissionRequests')).toBe(1)
    // Headless Chromium without a grant does not allow notifications: the toggle stays off and says why.
    await expect.poll(() => page.getByRole('status').innerText()).toMatch(/blocked/)
    expect(await toggle(page).getAttribute('aria-pressed')).toBe('false')
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('two tabs show one notification per request, none for a task already waiting when a tab opened; a click focuses the window and opens the task', async () => {
    const context = await browser.newContext({ viewport: DESKTOP })
    await blockOtherHosts(context)
    await context.grantPermissions(['notifications'], { origin: server.url })
    await context.addInitScript(recordNotifications)
    const first = await tab(context)
    await caughtUp(first.page)
    await toggle(first.page).click()
    await expect.poll(() => toggle(first.page).getAttribute('aria-pressed')).toBe('true')
    // The second tab is on from the choice the first stored.
    const second = await tab(context)
    await expect.poll(() => toggle(second.page).getAttribute('aria-pressed')).toBe('true')
    await caughtUp(second.page)
    const tabs = [first, second]

    const [deploy, migrate] = tasks as [(typeof tasks)[number], (typeof tasks)[number]]
    await say(deploy, script([{ say: 'Ready', chunks: 1 }, { permission: { title: 'Deploy to production?' } }]))
    await eventually(async () => (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [deploy.id] })).taskStatusSummaries[0]?.pendingAction === 'PERMISSION')
    for (const { page } of tabs) await caughtUp(page)
    for (const { page } of tabs) await expect.poll(() => decided(page)).toBe(1)
    const shown = (await Promise.all(tabs.map(({ page }) => notices(page)))).flat()
    expect(shown).toEqual([{ title: 'Deploy', body: 'Needs your permission', tag: expect.stringMatching(`^wait:${deploy.id}:PERMISSION:`), closed: false }])

    // A third tab opens while Deploy waits: it notifies nothing for it, but takes part in the next request.
    const third = await tab(context)
    await caughtUp(third.page)
    tabs.push(third)
    await say(migrate, script([{ say: 'Trying', chunks: 1 }, { error: { code: 'rate_limited', message: 'Rate limited, retry later' } }]))
    await eventually(async () => (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [migrate.id] })).taskStatusSummaries[0]?.activeError)
    for (const { page } of tabs) await caughtUp(page)
    await expect.poll(() => Promise.all(tabs.map(({ page }) => decided(page)))).toEqual([2, 2, 1])
    const all = await Promise.all(tabs.map(({ page }) => notices(page)))
    expect(all.flat().map((n) => [n.title, n.body])).toEqual(expect.arrayContaining([['Deploy', 'Needs your permission'], ['Migrate', 'Error: Rate limited, retry later']]))
    expect(all.flat()).toHaveLength(2)

    // Clicking the permission's notification focuses its tab's window and opens the task there.
    const owner = tabs[all.findIndex((list) => list.some((n) => n.title === 'Deploy'))]!.page
    expect(await owner.locator('main.pane').getAttribute('data-task-id')).toBeNull()
    await owner.evaluate(() => (window as unknown as { __notices: { title: string; onclick: () => void }[] }).__notices.find((n) => n.title === 'Deploy')!.onclick())
    await expect.poll(() => owner.locator('main.pane').getAttribute('data-task-id')).toBe(deploy.id)
    await owner.locator('.pending.permission').waitFor()
    expect(await counter(owner, '__focusCalls')).toBe(1)
    expect((await notices(owner)).find((n) => n.title === 'Deploy')?.closed).toBe(true)
    for (const { errors } of tabs) expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})

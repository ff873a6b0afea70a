// The finding of issue 34: "4 of 10 clicks aimed 400 ms earlier opened a different task: rows
// re-sort by activity under the pointer." Rows aimed at (hovered, or holding keyboard focus) keep
// their places while activity re-sorts the tasks; the new order applies when the pointer leaves,
// or at once from the "N changes — re-sort" button; the order choice is remembered.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument, TaskStatusSummariesDocument, UpdateTaskDocument } from '../generated/graphql.ts'
import { ClientTasksPageDocument, type TaskOrder } from '../../packages/client/src/generated/graphql.ts'

const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

describe('rows never move under the pointer (Chromium, sqlite)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string
  const tasks: { id: string; sessionId?: string }[] = []
  let edits = 0

  const serverOrder = async (orderBy: TaskOrder = 'LAST_ACTIVITY') =>
    (await ok(server.graphqlUrl, token, ClientTasksPageDocument, { workspaceId, first: 500, orderBy })).tasks.edges.map((e) => e.node.id)
  const shownIds = (page: Page, switcher: 'desktop' | 'phone' = 'desktop') =>
    page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) => rows.map((r) => (r as HTMLElement).dataset.taskId!))
  const openedTask = (page: Page) => page.locator('main.pane').getAttribute('data-task-id')

  /**
   * Activity that makes each task the newest: a prompt to the ones with an agent (the demo's
   * activity), a description edit to the others. Resolves once every row on the page shows the
   * summary revision the server holds: the re-sort has reached the page.
   */
  async function makeNewest(page: Page, ids: string[], switcher: 'desktop' | 'phone' = 'desktop') {
    for (const id of ids) {
      const task = tasks.find((t) => t.id === id)!
      if (task.sessionId) {
        await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId: id, sessionId: task.sessionId, content: 'more', clientMessageId: `more-${++edits}` } })
        await sessionSettled(server, task.sessionId) // its reply is activity too: let it end before comparing orders
      } else await ok(server.graphqlUrl, token, UpdateTaskDocument, { id, input: { description: `edit ${++edits}` } })
    }
    await server.projector.idle()
    await eventually(async () => {
      const stored = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: tasks.map((t) => t.id) })).taskStatusSummaries
      const shown = new Map(
        await page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) => rows.map((r) => [(r as HTMLElement).dataset.taskId!, Number((r as HTMLElement).dataset.revision)] as const)),
      )
      return stored.every((s) => s && shown.get(s.taskId) === s.revision)
    }, 30_000)
  }

  async function openPage(viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport, ...(viewport === PHONE && { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }) })
    await blockOtherHosts(context)
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${server.url}/#token=${encodeURIComponent(token)}`)
    return { context, page, errors }
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'Order'))
    const create = async (i: number) => (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: `Task ${i + 1}` } })).createTask.id
    // The two oldest tasks (the rows at the bottom) get a mock agent, so prompts (the demo's activity) can make them newest.
    for (let i = 0; i < 2; i++) {
      const id = await create(i)
      const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: id, agentProfile: 'mock' } })).startSession.id
      await sessionSettled(server, sessionId)
      tasks.push({ id, sessionId })
    }
    for (let i = 2; i < 14; i++) tasks.push({ id: await create(i) })
    browser = await launchBrowser()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('10 of 10 clicks aimed before a re-sort open the task aimed at; moving the pointer out applies the new order', async () => {
    const { context, page, errors } = await openPage()
    await expect.poll(() => shownIds(page), { timeout: 20_000 }).toEqual(await serverOrder())
    const rows = page.locator('[data-switcher="desktop"] .task-row')
    await rows.nth(0).hover()
    const aimed = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => ({ id: (await rows.nth(i).getAttribute('data-task-id'))!, box: (await rows.nth(i).boundingBox())! })),
    )
    const before = await shownIds(page)

    // The bottom half of the 10 rows, and the 4 rows below them, become the newest tasks.
    const reSorted = [...aimed.slice(5).map((a) => a.id), ...before.slice(10)]
    await makeNewest(page, reSorted)
    const fresh = await serverOrder()
    expect(fresh.slice(0, reSorted.length).sort()).toEqual([...reSorted].sort())

    // Clicks at the recorded positions, in an order of their own, with more activity halfway.
    const clickOrder = [9, 0, 5, 3, 7, 1, 8, 2, 6, 4]
    for (const [n, i] of clickOrder.entries()) {
      if (n === 5) await makeNewest(page, [aimed[2]!.id, aimed[3]!.id])
      const { box, id } = aimed[i]!
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2)
      await expect.poll(() => openedTask(page), { message: `click ${n + 1} at row ${i}` }).toBe(id)
    }
    expect(await shownIds(page)).toEqual(before)
    expect(await page.locator('[data-action="resort"]').innerText()).toMatch(/^\d+ changes? — re-sort$/)

    // The pointer leaves (focus stays on the clicked row, but a click's focus holds nothing): the new order applies.
    await page.mouse.move(DESKTOP.width - 10, DESKTOP.height / 2)
    await expect.poll(() => shownIds(page)).toEqual(await serverOrder())
    expect(await page.locator('[data-action="resort"]').count()).toBe(0)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('keyboard focus in the list holds the order too; "N changes — re-sort" applies it at once; the order choice is remembered', async () => {
    const { context, page, errors } = await openPage()
    await expect.poll(() => shownIds(page), { timeout: 20_000 }).toEqual(await serverOrder())
    await page.mouse.move(DESKTOP.width - 10, DESKTOP.height / 2)
    const row = (id: string) => page.locator(`[data-switcher="desktop"] .task-row[data-task-id="${id}"]`)
    // Tab to the order control, then into the list: one Tab stop, the first row.
    for (let i = 0; i < 10 && (await page.evaluate(() => document.activeElement?.getAttribute('data-control'))) !== 'order'; i++) await page.keyboard.press('Tab')
    await page.keyboard.press('Tab')
    const before = await shownIds(page)
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.taskId)).toBe(before[0])

    await makeNewest(page, before.slice(-3))
    expect(await shownIds(page)).toEqual(before)
    // The held rows are the ones the arrow keys walk.
    await page.keyboard.press('ArrowDown')
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.taskId)).toBe(before[1])
    const resort = page.locator('[data-action="resort"]')
    expect(await resort.innerText()).toBe('3 changes — re-sort')
    await page.keyboard.press('Shift+Tab') // the list is one Tab stop: back to the re-sort button
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-action'))).toBe('resort')
    await page.keyboard.press('Enter')
    await expect.poll(() => shownIds(page)).toEqual(await serverOrder())
    // Focus went on to the list (the button left with its changes), so the new order is held again.
    expect(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.taskId)).toBe(before[1])
    const resorted = await shownIds(page)
    await makeNewest(page, resorted.slice(-1))
    expect(await shownIds(page)).toEqual(resorted)
    expect(await resort.innerText()).toBe('1 change — re-sort')
    await page.keyboard.press('Enter')
    await expect.poll(() => openedTask(page)).toBe(before[1])
    expect(await row(before[1]!).getAttribute('aria-current')).toBe('true')

    // The order choice: a labelled select, applied at once, remembered across a reload.
    const choice = page.getByLabel('Order')
    expect(await choice.evaluate((s) => [...(s as HTMLSelectElement).options].map((o) => o.text))).toEqual(['Recent activity', 'Needs attention', 'Newest'])
    for (const [label, order] of [['Newest', 'CREATED'], ['Needs attention', 'NEEDS_ATTENTION']] as const) {
      await choice.selectOption({ label })
      await expect.poll(() => shownIds(page)).toEqual(await serverOrder(order))
    }
    await page.reload()
    await expect.poll(() => shownIds(page), { timeout: 20_000 }).toEqual(await serverOrder('NEEDS_ATTENTION'))
    expect(await page.getByLabel('Order').inputValue()).toBe('NEEDS_ATTENTION')
    await page.getByLabel('Order').selectOption('LAST_ACTIVITY')
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('the phone sheet holds its rows while open: a tap aimed before a re-sort opens the task aimed at; reopened, the new order shows', async () => {
    const { context, page, errors } = await openPage(PHONE)
    await page.locator('[data-action="open-sheet"]').tap()
    await expect.poll(() => shownIds(page, 'phone'), { timeout: 20_000 }).toEqual(await serverOrder())
    const rows = page.locator('[data-switcher="phone"] .task-row')
    const aimed = { id: (await rows.nth(6).getAttribute('data-task-id'))!, box: (await rows.nth(6).boundingBox())! }
    const before = await shownIds(page, 'phone')
    await makeNewest(page, before.slice(6), 'phone')
    expect(await shownIds(page, 'phone')).toEqual(before)
    await page.touchscreen.tap(aimed.box.x + aimed.box.width / 2, aimed.box.y + aimed.box.height / 2)
    await expect.poll(() => openedTask(page)).toBe(aimed.id)
    expect(await page.locator('[data-switcher="phone"]').count()).toBe(0)
    await page.locator('[data-action="open-sheet"]').tap()
    await expect.poll(() => shownIds(page, 'phone')).toEqual(await serverOrder())
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})

// The switcher with the keyboard only (desktop sidebar, phone sheet), and an axe-core check of the
// page with rows, attention badges, a selected session and a pending permission on screen.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, AttentionSummaryDocument, CreateTaskDocument, StartSessionDocument, TaskStatusSummariesDocument } from '../generated/graphql.ts'

const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const script = (steps: unknown[]) => JSON.stringify({ script: steps })

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[]; failureSummary?: string }[]
}

/** axe-core's serious and critical violations of the page as it is, each with where it is. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axeSource })
  const violations = await page.evaluate(async () => (await (window as unknown as { axe: { run: () => Promise<{ violations: unknown[] }> } }).axe.run()).violations)
  return (violations as AxeViolation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${v.help} at ${n.target.join(' ')}: ${n.failureSummary ?? ''}`))
}

const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null
    return { taskId: el?.dataset.taskId ?? null, control: el?.dataset.control ?? el?.dataset.action ?? null, inSheet: el?.closest('[data-switcher="phone"]') !== null }
  })

/** Presses Tab until `done` holds for the focused element (at most 15 presses). */
async function tabUntil(page: Page, done: (f: Awaited<ReturnType<typeof focused>>) => boolean) {
  for (let i = 0; i < 15; i++) {
    if (done(await focused(page))) return
    await page.keyboard.press('Tab')
  }
  throw new Error(`Tab never reached it; focus is on ${JSON.stringify(await focused(page))}`)
}

describe('the switcher by keyboard, and its accessibility (Chromium, sqlite)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string
  const tasks: { id: string; sessionId?: string }[] = []

  async function openPage(viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport, ...(viewport === PHONE && { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }) })
    await blockOtherHosts(context)
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${server.url}/#token=${encodeURIComponent(token)}`)
    return { context, page, errors }
  }
  const shownIds = (page: Page, switcher: 'desktop' | 'phone') =>
    page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) => rows.map((r) => (r as HTMLElement).dataset.taskId!))
  const openedTask = (page: Page) => page.locator('main.pane').getAttribute('data-task-id')

  async function caughtUp(page: Page, switcher: 'desktop' | 'phone') {
    await server.projector.idle()
    await eventually(async () => {
      const stored = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: tasks.map((t) => t.id) })).taskStatusSummaries
      const shown = new Map(
        await page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) => rows.map((r) => [(r as HTMLElement).dataset.taskId!, Number((r as HTMLElement).dataset.revision)] as const)),
      )
      return stored.every((s) => s && shown.get(s.taskId) === s.revision)
    }, 30_000)
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'Access'))
    for (let i = 0; i < 6; i++) tasks.push({ id: (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: `Task ${i + 1}` } })).createTask.id })
    const start = async (task: (typeof tasks)[number], prompt: string) => {
      task.sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: task.id, agentProfile: 'mock', prompt } })).startSession.id
    }
    // Waiting on a permission; a prompt queued behind a long turn; an error; a turn the server cut off.
    await start(tasks[0]!, script([{ say: 'Checking', chunks: 1 }, { permission: { title: 'Run the tests?' } }]))
    await start(tasks[3]!, script([{ say: 'Thinking for a long while', chunks: 1 }, { sleep: 600_000 }]))
    await eventually(async () => (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [tasks[3]!.id] })).taskStatusSummaries[0]?.foregroundActivity === 'GENERATING')
    await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId: tasks[3]!.id, sessionId: tasks[3]!.sessionId!, content: 'and then this', clientMessageId: 'queued-1' } })
    await start(tasks[1]!, script([{ say: 'Trying', chunks: 1 }, { error: { code: 'rate_limited', message: 'Rate limited, retry later' } }]))
    await start(tasks[2]!, 'hello')
    await sessionSettled(server, tasks[2]!.sessionId!)
    // A restart's cut-off is what the server records on the session; written here as it would be.
    await server.store.db.session.update({ where: { id: tasks[2]!.sessionId! }, data: { interruption: 'SERVER_RESTART', interruptedAt: new Date() } })
    await server.projector.project(tasks[2]!.id)
    await eventually(async () => {
      const [waiting, , cut, queued] = (await ok(server.graphqlUrl, token, AttentionSummaryDocument, { taskIds: tasks.slice(0, 4).map((t) => t.id) })).taskStatusSummaries
      const failed = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [tasks[1]!.id] })).taskStatusSummaries[0]
      return waiting?.pendingAction === 'PERMISSION' && waiting.waitingSince && queued?.queuedPromptCount === 1 && failed?.activeError && cut?.interruption
    }, 30_000)
    browser = await launchBrowser()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('desktop: Tab reaches the order control and the list (one Tab stop), the arrow keys move between rows, Enter opens a task', async () => {
    const { context, page, errors } = await openPage()
    await expect.poll(() => shownIds(page, 'desktop'), { timeout: 20_000 }).toHaveLength(6)
    const ids = await shownIds(page, 'desktop')
    await tabUntil(page, (f) => f.control === 'order')
    await page.keyboard.press('Tab')
    expect((await focused(page)).taskId).toBe(ids[0])
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    expect((await focused(page)).taskId).toBe(ids[2])
    await page.keyboard.press('Enter')
    await expect.poll(() => openedTask(page)).toBe(ids[2])
    await page.keyboard.press('End')
    expect((await focused(page)).taskId).toBe(ids[5])
    await page.keyboard.press('ArrowDown') // stays on the last row
    expect((await focused(page)).taskId).toBe(ids[5])
    await page.keyboard.press('Home')
    expect((await focused(page)).taskId).toBe(ids[0])
    await page.keyboard.press('ArrowUp')
    expect((await focused(page)).taskId).toBe(ids[0])
    // One Tab leaves the list for the session pane; Shift+Tab comes back to the row last focused.
    await page.keyboard.press('Tab')
    expect((await focused(page)).taskId).toBeNull()
    expect(await page.evaluate(() => document.activeElement?.closest('main.pane') !== null)).toBe(true)
    await page.keyboard.press('Shift+Tab')
    expect((await focused(page)).taskId).toBe(ids[0])
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('phone: Enter opens the "Tasks" sheet with focus in it, Enter on a row opens the task and closes it, Escape closes it; focus returns to the button', async () => {
    const { context, page, errors } = await openPage(PHONE)
    await page.locator('[data-action="open-sheet"]').waitFor()
    await tabUntil(page, (f) => f.control === 'open-sheet')
    await page.keyboard.press('Enter')
    await expect.poll(async () => (await focused(page)).inSheet).toBe(true)
    await caughtUp(page, 'phone')
    const ids = await shownIds(page, 'phone')
    expect((await focused(page)).taskId).toBe(ids[0])
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('Enter')
    await expect.poll(() => openedTask(page)).toBe(ids[1])
    expect(await page.locator('[data-switcher="phone"]').count()).toBe(0)
    expect((await focused(page)).control).toBe('open-sheet')

    // Again: focus lands on the open task's row; Tab stays inside the sheet; Escape closes it.
    await page.keyboard.press('Enter')
    await expect.poll(async () => (await focused(page)).taskId).toBe(ids[1])
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab')
      expect((await focused(page)).inSheet).toBe(true)
    }
    await page.keyboard.press('Escape')
    await expect.poll(() => page.locator('[data-switcher="phone"]').count()).toBe(0)
    expect((await focused(page)).control).toBe('open-sheet')
    expect(await openedTask(page)).toBe(ids[1])
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it.each([
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const)('axe-core finds no serious or critical violation (%s: rows, badges, a selected session, a pending permission, the sheet open)', async (name, viewport) => {
    const { context, page, errors } = await openPage(viewport)
    const waiting = tasks[0]!
    if (name === 'phone') await page.locator('[data-action="open-sheet"]').click()
    await caughtUp(page, name)
    await page.locator(`[data-switcher="${name}"] .task-row[data-task-id="${waiting.id}"]`).click()
    await page.locator('.pending.permission').waitFor()
    if (name === 'phone') await page.locator('[data-action="open-sheet"]').click()
    // Every kind of attention badge is on screen.
    for (const badge of ['primary', 'waiting', 'queued', 'interruption', 'error'])
      expect(await page.locator(`[data-switcher="${name}"] [data-badge="${badge}"]`).count(), badge).toBeGreaterThan(0)
    expect(await seriousViolations(page)).toEqual([])
    // Nothing (the header's buttons included) makes the page wider than the screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})

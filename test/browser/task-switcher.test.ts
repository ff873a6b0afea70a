import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { SocketProxy } from '../support/socket-proxy.ts'
import { DESKTOP, PHONE, signInWithForm } from './page-helpers.ts'
import { AddMessageDocument, CreateTaskDocument, CreateUserDocument, StartSessionDocument, TaskStatusSummariesDocument, UpdateTaskDocument } from '../generated/graphql.ts'


interface RowView {
  id: string
  primary: string
  revision: number
  badges: string[]
}

/** What a switcher shows for every row: the primary icon and each badge with its text. */
function rowsOf(page: Page, switcher: 'desktop' | 'phone'): Promise<RowView[]> {
  return page.$$eval(`[data-switcher="${switcher}"] .task-row`, (rows) =>
    rows.map((row) => {
      const el = row as HTMLElement
      return {
        id: el.dataset.taskId ?? '',
        primary: el.dataset.primary ?? '',
        revision: Number(el.dataset.revision),
        // "waiting 5 min" is relative to each page's own minute tick: two pages may read it either
        // side of a minute, so it is compared by the time it counts from, deliberately not by its text.
        badges: [...el.querySelectorAll<HTMLElement>('[data-badge]')].map((b) => `${b.dataset.badge}:${b.dataset.badge === 'waiting' ? `since ${b.dataset.since}` : (b.textContent?.trim() ?? '')}`),
      }
    }),
  )
}

const row = (page: Page, taskId: string) => page.locator(`[data-switcher] .task-row[data-task-id="${taskId}"]`)
const script = (steps: unknown[]) => JSON.stringify({ script: steps })

/** The task a workspace feed frame is about, whichever event it carries. */
function feedEventTaskId(frame: { payload?: Record<string, unknown> }): string | undefined {
  const event = (frame.payload?.data as { workspaceEvents?: { taskId?: string; task?: { id: string }; summary?: { taskId: string } } } | undefined)?.workspaceEvents
  return event?.taskId ?? event?.task?.id ?? event?.summary?.taskId
}

describe('the task-switcher page in Chromium (sqlite, mock agents)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string
  const tasks: { id: string; title: string; sessionId?: string }[] = []
  let messageSeq = 0

  const say = (task: { id: string; sessionId?: string }, content: string) =>
    ok(server.graphqlUrl, token, AddMessageDocument, {
      input: { taskId: task.id, sessionId: task.sessionId!, content, clientMessageId: `test-${++messageSeq}` },
    })

  async function openPage(viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; proxy: SocketProxy; errors: string[] }> {
    const context = await browser.newContext({ viewport, ...(viewport === PHONE && { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }) })
    await blockOtherHosts(context)
    const proxy = await SocketProxy.attach(context)
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${server.url}/#token=${encodeURIComponent(token)}`)
    return { context, page, proxy, errors }
  }

  /** Waits until every row shows the revision the server holds for it. */
  async function caughtUp(page: Page, switcher: 'desktop' | 'phone') {
    const ids = tasks.map((t) => t.id)
    await eventually(async () => {
      const stored = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: ids })).taskStatusSummaries
      const shown = new Map((await rowsOf(page, switcher)).map((r) => [r.id, r.revision]))
      return stored.every((s) => s && shown.get(s.taskId) === s.revision)
    }, 30_000)
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'Switcher'))
    for (let i = 0; i < 27; i++) {
      const title = `Task ${String(i + 1).padStart(2, '0')}`
      const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask
      tasks.push({ id: task.id, title })
    }
    // Six tasks get an agent: enough to switch between; the other 21 rows only ever show summaries.
    await Promise.all(
      tasks.slice(0, 6).map(async (task) => {
        task.sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: task.id, agentProfile: 'mock' } })).startSession.id
        await sessionSettled(server, task.sessionId)
      }),
    )
    browser = await launchBrowser()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('signs in with a token pasted once and kept in the browser; a token with no workspace says how to get one', async () => {
    const { context, page } = await signInWithForm(browser, server.url, token)
    await expect.poll(() => page.locator('[data-switcher="desktop"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    await page.reload()
    await expect.poll(() => page.locator('[data-switcher="desktop"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    expect(await page.getByLabel('Token').count()).toBe(0)

    // A link with #token= signs in too, and the token leaves the address bar at once.
    const lonely = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'Lonely' })).createUser.token
    await page.goto(`${server.url}/#token=${encodeURIComponent(lonely)}`)
    await page.locator('[data-empty="no-workspace"]').waitFor()
    expect(new URL(page.url()).hash).toBe('')
    expect(await page.evaluate(() => Object.values(localStorage))).toEqual([lonely])
    await page.getByRole('button', { name: 'Use another token' }).click()
    await page.getByLabel('Token').waitFor()
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    await context.close()
  }, 120_000)

  it('shows 27 rows without subscribing to any session; 5 switches cost subscribe and complete frames in proportion to the switches', async () => {
    const { context, page, proxy, errors } = await openPage()
    await expect.poll(() => page.locator('[data-switcher="desktop"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    await expect.poll(() => proxy.subscribes('workspaceEvents').length).toBe(1)
    expect(proxy.subscribes('sessionEvents')).toEqual([])

    const opened = tasks.slice(0, 6)
    for (const task of opened) {
      await row(page, task.id).click()
      await page.locator(`.transcript[data-session-id="${task.sessionId}"]`).waitFor()
      await expect.poll(() => proxy.subscribes('sessionEvents').filter((f) => f.payload?.variables?.sessionId === task.sessionId).length).toBe(1)
    }
    // The first click opens one session; each of the 5 switches closes one and opens one.
    await expect.poll(() => proxy.completes('sessionEvents').length).toBe(5)
    expect(proxy.subscribes('sessionEvents').map((f) => f.payload?.variables?.sessionId)).toEqual(opened.map((t) => t.sessionId))
    // Re-rendering with the same session (re-selecting it, its own summary revisions while it works)
    // changes no membership: no subscribe, no complete, no second snapshot.
    const before = proxy.frames.length
    const open = opened[5]!
    await row(page, open.id).click()
    const revision = Number(await row(page, open.id).getAttribute('data-revision'))
    await say(open, script([{ say: 'Working on it', chunks: 3 }, { subagent: { title: 'explore', ms: 100 } }, { say: 'Done', chunks: 2 }]))
    await sessionSettled(server, open.sessionId!)
    await expect.poll(async () => Number(await row(page, open.id).getAttribute('data-revision')), { timeout: 20_000 }).toBeGreaterThan(revision + 1)
    await expect.poll(() => page.locator(`.transcript .message.agent`).count()).toBeGreaterThan(0)
    expect(proxy.subscribes('sessionEvents', before)).toEqual([])
    expect(proxy.completes('sessionEvents', before)).toEqual([])
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('a background permission turns its row into a permission badge with no session subscribed; answering it from the page clears it', async () => {
    const { context, page, proxy, errors } = await openPage()
    const task = tasks[1]!
    await expect.poll(() => page.locator('[data-switcher="desktop"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    await say(task, script([{ say: 'Checking', chunks: 2 }, { permission: { title: 'Run the tests?' } }]))
    await expect.poll(() => row(page, task.id).getAttribute('data-primary'), { timeout: 20_000 }).toBe('permission')
    expect(proxy.subscribes('sessionEvents')).toEqual([])

    await row(page, task.id).click()
    const pending = page.locator('.pending.permission')
    await pending.waitFor()
    expect(await pending.innerText()).toContain('Run the tests?')
    await pending.getByRole('button', { name: 'Allow' }).click()
    await expect.poll(() => row(page, task.id).getAttribute('data-primary'), { timeout: 20_000 }).not.toBe('permission')
    await expect.poll(() => page.locator('.pending.permission').count()).toBe(0)
    await sessionSettled(server, task.sessionId!)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('a phone viewport shows the same badges and precedence as the desktop sidebar', async () => {
    // Something on most badges: a pending permission, a pending question, an error, Git changes.
    await say(tasks[2]!, script([{ permission: { title: 'Deploy?' }, wait: false }]))
    await say(tasks[3]!, script([{ clarify: { question: 'Which branch?' }, wait: false }]))
    await say(tasks[4]!, script([{ say: 'Trying', chunks: 1 }, { error: { code: 'rate_limited', message: 'Rate limited, retry later' } }]))
    const desktop = await openPage(DESKTOP)
    const phone = await openPage(PHONE)
    await phone.page.locator('[data-action="open-sheet"]').click()
    await expect.poll(() => phone.page.locator('[data-switcher="phone"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    await expect.poll(() => row(desktop.page, tasks[2]!.id).getAttribute('data-primary'), { timeout: 20_000 }).toBe('permission')
    await expect.poll(() => row(desktop.page, tasks[3]!.id).getAttribute('data-primary'), { timeout: 20_000 }).toBe('clarification')
    await expect.poll(() => row(desktop.page, tasks[4]!.id).locator('[data-badge="error"]').count(), { timeout: 20_000 }).toBe(1)
    await caughtUp(desktop.page, 'desktop')
    await caughtUp(phone.page, 'phone')
    // The open sheet holds the order it opened with (rows never move under a finger): apply the latest.
    const resort = phone.page.locator('[data-switcher="phone"] [data-action="resort"]')
    if (await resort.count()) await resort.click()

    const onDesktop = await rowsOf(desktop.page, 'desktop')
    const onPhone = await rowsOf(phone.page, 'phone')
    expect(onPhone).toEqual(onDesktop)
    expect(onDesktop.map((r) => r.primary)).toEqual(expect.arrayContaining(['permission', 'clarification']))
    expect(desktop.errors).toEqual([])
    expect(phone.errors).toEqual([])
    await desktop.context.close()
    await phone.context.close()
  }, 120_000)

  it('a send whose answer is lost with the link ends with exactly one stored message and one dispatch', async () => {
    const task = tasks[5]!
    await sessionSettled(server, task.sessionId!)
    const turnsBefore = await server.store.db.turn.count({ where: { sessionId: task.sessionId!, lifecycleOnly: false } })
    const { context, page, proxy, errors } = await openPage()
    await row(page, task.id).click()
    await page.locator(`.transcript[data-session-id="${task.sessionId}"]`).waitFor()
    await expect.poll(() => page.locator('[data-connection]').getAttribute('data-connection')).toBe('connected')

    proxy.loseAnswerOf((f) => f.type === 'subscribe' && f.payload?.query?.includes('addMessage') === true)
    await page.getByLabel('Message').fill('hello exactly once')
    await page.getByRole('button', { name: 'Send' }).click()

    const sent = await eventually(() => proxy.subscribes('addMessage')[0])
    const clientMessageId = (sent.payload?.variables?.input as { clientMessageId: string }).clientMessageId
    // The link died with the answer in flight; the page reconnects and reconciles the same id.
    await expect.poll(() => proxy.connections, { timeout: 20_000 }).toBeGreaterThan(1)
    await expect.poll(() => page.locator(`.message[data-message-id="${clientMessageId}"]`).count(), { timeout: 30_000 }).toBe(1)
    await sessionSettled(server, task.sessionId!)

    expect(await server.store.db.message.count({ where: { sessionId: task.sessionId!, author: 'USER', content: 'hello exactly once' } })).toBe(1)
    expect(await server.store.db.turn.count({ where: { sessionId: task.sessionId!, lifecycleOnly: false } })).toBe(turnsBefore + 1)
    for (const retry of proxy.subscribes('addMessage').slice(1))
      expect((retry.payload?.variables?.input as { clientMessageId: string }).clientMessageId).toBe(clientMessageId)
    expect(await page.locator('[data-send-outcome="unknown"]').count()).toBe(0)
    expect(await page.getByLabel('Message').inputValue()).toBe('')
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('a reconnect after 5 s away replays only the tasks that changed, from the last cursor', async () => {
    const { context, page, proxy, errors } = await openPage()
    await expect.poll(() => page.locator('[data-switcher="desktop"] .task-row').count(), { timeout: 20_000 }).toBe(27)
    await caughtUp(page, 'desktop')
    await expect.poll(() => page.locator('[data-connection]').getAttribute('data-connection')).toBe('connected')
    const boots = proxy.subscribes('boot(').length

    const away = Date.now()
    proxy.dropAll({ refuse: true })
    await expect.poll(() => page.locator('[data-connection]').getAttribute('data-connection')).not.toBe('connected')
    const changed = [tasks[7]!, tasks[8]!, tasks[9]!]
    for (const task of changed) await ok(server.graphqlUrl, token, UpdateTaskDocument, { id: task.id, input: { title: `${task.title} (renamed)` } })
    const busy = tasks[0]!
    await say(busy, 'a background reply')
    await sessionSettled(server, busy.sessionId!)
    // Away for 5 s of wall time: the feed position, not the clock, decides what is replayed.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_000 - (Date.now() - away))))
    const resumedFrom = proxy.frames.length
    proxy.restore()

    for (const task of changed) await expect.poll(() => row(page, task.id).innerText(), { timeout: 30_000 }).toContain('(renamed)')
    await caughtUp(page, 'desktop')

    const resume = proxy.subscribes('workspaceEvents', resumedFrom)
    expect(resume).toHaveLength(1)
    expect(resume[0]!.payload?.variables?.after).toEqual(expect.any(String))
    expect(proxy.subscribes('boot(').length).toBe(boots)
    const replayed = proxy.frames.slice(resumedFrom).filter((f) => f.direction === 'received' && f.type === 'next' && f.id === resume[0]!.id && f.connection === resume[0]!.connection)
    const replayedTasks = new Set(replayed.map(feedEventTaskId))
    expect(replayedTasks).toEqual(new Set([...changed, busy].map((t) => t.id)))
    // At most the row and the summary of each changed task: nothing for the 23 others.
    expect(replayed.length).toBeLessThanOrEqual(2 * replayedTasks.size)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})

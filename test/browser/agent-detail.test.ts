// v1.4 on the page: a permission shows the agent's own options and what they would allow (the
// diff, the command), a tool call's detail waits behind a <details>, and the session pane shows
// the agent's plan and mode. Driven against a real server whose mock agent plays the scripts.
import { mkdirSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { startTestServer, type TestServer } from '../support/server.ts'
import { launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { axeViolations, DESKTOP, openPage, PHONE } from './page-helpers.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument } from '../generated/graphql.ts'

// Where the pictures go: AGENT_DETAIL_SHOTS names a folder to keep them; otherwise a temporary one.
const SHOTS = process.env.AGENT_DETAIL_SHOTS ? path.resolve(process.env.AGENT_DETAIL_SHOTS) : mkdtempSync(path.join(os.tmpdir(), 'agent-detail-shots-'))

const script = (steps: unknown[]) => JSON.stringify({ script: steps })

/** Codex-like options, in the agent's order; the reject one last. */
const EDIT_OPTIONS = [
  { optionId: 'approved-for-session', name: 'Always allow edits', kind: 'allow_always' },
  { optionId: 'approved', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'abort', name: 'Reject', kind: 'reject_once' },
]

const editPermission = (file: string, oldText: string, newText: string) => ({
  permission: {
    title: `Edit ${path.basename(file)}`,
    options: EDIT_OPTIONS,
    toolCall: { kind: 'edit', locations: [{ path: file, line: 3 }], content: [{ type: 'diff', path: file, oldText, newText }] },
    echo: true,
  },
})

/** How wide the page's content is: the viewport's width unless something scrolls sideways. */
const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth)

describe('agent detail on the page: permission options, diffs, commands, tool calls, plan and mode (sqlite, mock agent)', () => {
  let server: TestServer
  let browser: Browser
  let token: string
  let workspaceId: string
  let seq = 0

  /** A task with a settled mock session. */
  async function taskWithSession(title: string) {
    const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: task.id, agentProfile: 'mock' } })).startSession.id
    await sessionSettled(server, sessionId)
    return { taskId: task.id, sessionId }
  }

  const say = (t: { taskId: string; sessionId: string }, content: string) =>
    ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId: t.taskId, sessionId: t.sessionId, content, clientMessageId: `detail-${++seq}` } })

  /** Opens the task's session on the page (on a phone through the Tasks sheet). */
  async function openTask(page: Page, taskId: string, sessionId: string, phone = false) {
    if (phone) await page.locator('[data-action="open-sheet"]').click()
    const row = page.locator(`[data-switcher="${phone ? 'phone' : 'desktop'}"] .task-row[data-task-id="${taskId}"]`)
    await row.waitFor({ timeout: 20_000 })
    await row.click()
    await page.locator(`.transcript[data-session-id="${sessionId}"]`).waitFor({ timeout: 20_000 })
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'Detail'))
    browser = await launchBrowser()
    mkdirSync(SHOTS, { recursive: true })
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it("a pending permission offers the agent's options in its order with the diff open; the chosen option's id reaches the agent", async () => {
    const task = await taskWithSession('Edit the app')
    const { context, page, errors } = await openPage(browser, server.url, DESKTOP, token)
    await openTask(page, task.taskId, task.sessionId)
    await say(task, script([{ say: 'Changing the constant', chunks: 1 }, editPermission('/w/src/app.ts', 'import x from "x"\nconst a = 1\nexport { a }\n', 'import x from "x"\nconst a = 2\nexport { a }\n')]))

    const pending = page.locator('.pending.permission')
    await pending.waitFor({ timeout: 20_000 })
    expect(await pending.locator('.pending-title').innerText()).toBe('Permission: Edit app.ts')
    const buttons = pending.locator('.permission-options button')
    expect(await buttons.allInnerTexts()).toEqual(['Always allow edits', 'Allow once', 'Reject'])
    expect(await buttons.evaluateAll((els) => els.map((b) => [b.dataset.optionId, b.dataset.optionKind, b.classList.contains('secondary')]))).toEqual([
      ['approved-for-session', 'ALLOW_ALWAYS', false],
      ['approved', 'ALLOW_ONCE', false],
      ['abort', 'REJECT_ONCE', true],
    ])
    // What is being approved, open without a click: the file and its removed and added lines.
    const diff = pending.locator('.tool-diff')
    expect(await diff.locator('figcaption').innerText()).toBe('/w/src/app.ts:3') // the file, at the line the agent named
    expect(await diff.locator('.diff-line.del').allInnerTexts()).toEqual(['- const a = 1'])
    expect(await diff.locator('.diff-line.add').allInnerTexts()).toEqual(['+ const a = 2'])
    expect(await diff.locator('.diff-line.ctx').allInnerTexts()).toEqual(['  import x from "x"', '  export { a }'])
    expect(await diff.locator('.diff-lines').evaluate((el) => getComputedStyle(el).fontFamily)).toMatch(/mono/)
    expect(await pending.locator('.tool-places').count()).toBe(0) // no other place than the diff's file
    expect(await axeViolations(page, { within: '.pending.permission' })).toEqual([])
    await page.screenshot({ path: path.join(SHOTS, 'permission-desktop.png') })

    // The agent's label is the button's accessible name.
    await page.getByRole('button', { name: 'Always allow edits' }).click()
    await expect.poll(() => page.locator('.transcript').innerText(), { timeout: 20_000 }).toContain('permission outcome: approved-for-session')
    await expect.poll(() => pending.count()).toBe(0)
    await sessionSettled(server, task.sessionId)
    // The answered request stays in the transcript, its detail closed.
    const request = page.locator('.transcript .message[data-kind="PERMISSION_REQUEST"]')
    expect(await request.getAttribute('data-status')).toBe('APPROVED')
    expect(await request.locator('details.tool-details').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it("a tool call's detail is closed until asked for (mouse or keyboard), follows the call's updates, and says when it was cut; the plan and mode show", async () => {
    const task = await taskWithSession('Run the tests')
    const { context, page, errors } = await openPage(browser, server.url, DESKTOP, token)
    await openTask(page, task.taskId, task.sessionId)
    const many = Array.from({ length: 40 }, (_, i) => ({ path: `/w/src/file-${i}.ts` }))
    await say(
      task,
      script([
        { mode: 'plan' },
        {
          plan: [
            { content: 'Find the failing test', priority: 'high', status: 'completed' },
            { content: 'Fix the constant', priority: 'high', status: 'in_progress' },
            { content: 'Run the suite', priority: 'low', status: 'pending' },
          ],
        },
        // The final tool_call_update replaces the input: the page must follow it (a MessageUpdated, the message read again).
        { tool: { title: 'Run npm test', kind: 'execute', ms: 200, detail: { rawInput: { command: 'npm test', description: 'Run tests' } }, updateDetail: { rawInput: { command: ['/bin/bash', '-lc', 'npm test'] } } } },
        { tool: { title: 'Search the sources', kind: 'search', detail: { locations: many } } },
        { say: 'All green', chunks: 1 },
      ]),
    )
    await sessionSettled(server, task.sessionId)

    await expect.poll(() => page.locator('.session-mode').innerText(), { timeout: 20_000 }).toBe('Mode: plan')
    await expect.poll(() => page.locator('.session-plan li').count(), { timeout: 20_000 }).toBe(3)
    expect(await page.locator('.session-plan summary').innerText()).toBe('Plan · 1 of 3 done')
    expect(await page.locator('.session-plan li').evaluateAll((els) => els.map((li) => [li.querySelector('.plan-content')?.textContent, (li as HTMLElement).dataset.status]))).toEqual([
      ['Find the failing test', 'COMPLETED'],
      ['Fix the constant', 'IN_PROGRESS'],
      ['Run the suite', 'PENDING'],
    ])

    const run = page.locator('.transcript .message[data-kind="TOOL_CALL"]', { hasText: 'Run npm test' })
    await expect.poll(() => run.getAttribute('data-status'), { timeout: 20_000 }).toBe('COMPLETED')
    const details = run.locator('details.tool-details')
    expect(await details.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false)
    expect(await run.locator('.tool-command').isVisible()).toBe(false)
    await expect.poll(() => details.locator('summary').innerText(), { timeout: 20_000 }).toBe("execute · /bin/bash -lc 'npm test'")
    await details.locator('summary').click()
    expect(await run.locator('.tool-command').innerText()).toBe("$ /bin/bash -lc 'npm test'")
    expect(await run.locator('.tool-kind').innerText()).toBe('KIND execute')

    // Keyboard: the summary is a Tab stop, Enter opens it.
    const search = page.locator('.transcript .message[data-kind="TOOL_CALL"]', { hasText: 'Search the sources' })
    const summary = search.locator('details.tool-details > summary')
    await summary.focus()
    await page.keyboard.press('Enter')
    expect(await search.locator('details.tool-details').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true)
    expect(await search.locator('.tool-places li').count()).toBe(32) // the server keeps 32 locations
    expect(await search.locator('.tool-truncated').innerText()).toContain('Truncated')
    expect(await run.locator('.tool-truncated').count()).toBe(0)
    await search.locator('.tool-truncated').scrollIntoViewIfNeeded()
    await page.screenshot({ path: path.join(SHOTS, 'tool-calls-desktop.png') })
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)

  it('on a phone (390 px) a long permission, its diff and an opened tool call wrap or scroll inside their blocks: the page never scrolls sideways', async () => {
    const task = await taskWithSession('Phone check')
    const longPath = `/w/packages/a-rather-long-package-name/src/deeply/nested/folder/${'segment-'.repeat(6)}file.ts`
    const longLine = `export const message = "${'a long line that no phone can show at once '.repeat(4)}"\n`
    await say(
      task,
      script([
        { plan: [{ content: 'Rewrite the greeting in every locale file of the application', priority: 'medium', status: 'in_progress' }] },
        { tool: { title: 'Run the linter', kind: 'execute', detail: { rawInput: { command: `npx eslint ${'--rule some-really-long-rule-name:error '.repeat(4)}` } } } },
        editPermission(longPath, `const a = 1\n${longLine}`, `const a = 2\n${longLine}${'// added\n'.repeat(30)}`),
      ]),
    )
    const { context, page, errors } = await openPage(browser, server.url, PHONE, token)
    await openTask(page, task.taskId, task.sessionId, true)
    const pending = page.locator('.pending.permission')
    await pending.waitFor({ timeout: 20_000 })
    expect(await pending.locator('.permission-options button').allInnerTexts()).toEqual(['Always allow edits', 'Allow once', 'Reject'])
    expect(await pageWidth(page)).toBe(PHONE.width)
    // The diff is bounded: it scrolls inside itself, down only.
    const box = await pending.locator('.diff-lines').evaluate((el) => ({ scrolls: el.scrollHeight > el.clientHeight, sideways: el.scrollWidth - el.clientWidth }))
    expect(box).toEqual({ scrolls: true, sideways: 0 })
    // Lines are matched: the long line both texts keep shows once, as context, between the changes.
    expect(await pending.locator('.diff-line').evaluateAll((els) => els.slice(0, 4).map((e) => e.className.replace('diff-line ', '')))).toEqual(['del', 'add', 'ctx', 'add'])
    await page.screenshot({ path: path.join(SHOTS, 'permission-phone.png') })

    const lint = page.locator('.transcript .message[data-kind="TOOL_CALL"]', { hasText: 'Run the linter' })
    await lint.locator('details.tool-details > summary').click()
    await lint.locator('.tool-command').waitFor()
    expect(await pageWidth(page)).toBe(PHONE.width)
    // No block inside the pane reaches past the screen's edge.
    const widest = await page.locator('.pane *').evaluateAll((els) => Math.max(...els.map((e) => e.getBoundingClientRect().right)))
    expect(widest).toBeLessThanOrEqual(PHONE.width)
    await lint.scrollIntoViewIfNeeded()
    await page.screenshot({ path: path.join(SHOTS, 'tool-call-phone.png') })

    await page.getByRole('button', { name: 'Reject' }).click()
    await expect.poll(() => page.locator('.transcript').innerText(), { timeout: 20_000 }).toContain('permission outcome: abort')
    await sessionSettled(server, task.sessionId)
    expect(errors).toEqual([])
    await context.close()
  }, 120_000)
})

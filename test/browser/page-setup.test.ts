import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { MOCK_PROFILE } from '../../src/agents/profiles.ts'
import { ClientTaskSessionsDocument } from '../../packages/client/src/generated/graphql.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { CreateUserDocument, TaskDocument, TasksDocument, ViewerDocument } from '../generated/graphql.ts'
import { axeViolations, dialog, expectFitsPhone, expectHeaderFits, focusedName, openPage, tabTo, VIEWPORTS } from './page-helpers.ts'

describe('setting up through the page: a workspace, a task with a repository, sessions of a chosen profile (Chromium, sqlite)', () => {
  let server: TestServer
  let browser: Browser
  let checkout: string

  beforeAll(async () => {
    // Two profiles to choose from: the built-in mock, and the mock agent under another name.
    server = await startTestServer('sqlite', { webRoot: inject('webRoot'), env: { AGENT_PROFILES: JSON.stringify({ 'mock-second': MOCK_PROFILE }) } })
    checkout = mkdtempSync(path.join(os.tmpdir(), 'tss-page-checkout-'))
    browser = await launchBrowser()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
    rmSync(checkout, { recursive: true, force: true })
  })

  const tasksOf = async (token: string, workspaceId: string) => (await ok(server.graphqlUrl, token, TasksDocument, { workspaceId })).tasks.edges.map((e) => e.node)
  const alertOf = (page: Page, form: string) => page.locator(`[data-form="${form}"] [role="alert"]`)

  for (const [label, viewport] of VIEWPORTS) {
    const keyboard = label === 'desktop'
    it(`${label}: creates a workspace from "No workspace yet", a task with a repository${keyboard ? ' (by keyboard)' : ''}, and sessions of a chosen profile`, async () => {
      const token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: `Setup ${label}` })).createUser.token
      const { context, page, errors } = await openPage(browser, server.url, viewport, token)

      // The empty state creates the first workspace. A blank name is refused there, and nothing is made.
      await page.locator('[data-empty="no-workspace"]').waitFor()
      await page.getByRole('button', { name: 'Create workspace' }).click()
      await expect.poll(() => alertOf(page, 'create-workspace').getAttribute('data-error-code')).toBe('BAD_USER_INPUT')
      expect((await ok(server.graphqlUrl, token, ViewerDocument)).viewer.workspaces).toEqual([])
      await page.getByLabel('Workspace name').fill(`Acme ${label}`)
      await page.getByRole('button', { name: 'Create workspace' }).click()
      await expect.poll(() => page.getByLabel('Workspace', { exact: true }).locator('option:checked').textContent()).toBe(`Acme ${label}`)
      const workspaces = (await ok(server.graphqlUrl, token, ViewerDocument)).viewer.workspaces
      expect(workspaces.map((w) => w.name)).toEqual([`Acme ${label}`])
      const workspaceId = workspaces[0]!.id
      if (!keyboard) await expectHeaderFits(page, viewport.width)

      // New task: a repository given by URL with a local path outside REPOSITORY_ROOTS is refused (the
      // dialog stays, with the server's words, and no task is made); inside them it is created.
      if (keyboard) {
        await tabTo(page, 'New task')
        await page.keyboard.press('Enter')
        await dialog(page, 'new-task').waitFor()
        expect(await focusedName(page)).toBe('Title')
        await page.keyboard.type('Fix the build')
        await tabTo(page, 'Add repository')
        await page.keyboard.press('Enter')
        await tabTo(page, 'Repository 1 (owner/name or URL)', true)
        await page.keyboard.type('https://github.com/acme/web.git')
        await page.keyboard.press('Tab')
        expect(await focusedName(page)).toBe('Local path (optional)')
        await page.keyboard.type('/nonexistent/checkout')
        await page.keyboard.press('Enter')
      } else {
        await page.getByRole('button', { name: 'New task' }).click()
        await dialog(page, 'new-task').waitFor()
        await expectFitsPhone(page, 'new-task')
        await page.getByLabel('Title').fill('Fix the build')
        await page.getByLabel('Description (optional)').fill('It is red.')
        await page.getByRole('button', { name: 'Add repository' }).click()
        await page.getByRole('button', { name: 'Add repository' }).click()
        await page.getByRole('button', { name: 'Remove repository 2' }).click()
        await page.getByLabel('Repository 1 (owner/name or URL)').fill('https://github.com/acme/web.git')
        await page.getByLabel('Local path (optional)').fill('/nonexistent/checkout')
        await expectFitsPhone(page, 'new-task')
        await page.getByRole('button', { name: 'Create task' }).click()
      }
      await expect.poll(() => alertOf(page, 'new-task').textContent()).toContain('REPOSITORY_ROOTS')
      expect(await alertOf(page, 'new-task').getAttribute('data-error-code')).toBe('BAD_USER_INPUT')
      expect(await dialog(page, 'new-task').count()).toBe(1)
      expect(await tasksOf(token, workspaceId)).toEqual([])
      expect(await axeViolations(page, 'dialog[data-dialog="new-task"]')).toEqual([])
      if (keyboard) {
        expect(await focusedName(page)).toBe('Local path (optional)')
        await page.keyboard.press('Control+A')
        await page.keyboard.type(checkout)
        await page.keyboard.press('Enter')
      } else {
        await page.getByLabel('Local path (optional)').fill(checkout)
        await page.getByRole('button', { name: 'Create task' }).click()
      }
      await dialog(page, 'new-task').waitFor({ state: 'detached' })
      if (keyboard) expect(await focusedName(page)).toBe('New task')

      // The feed brings the new task into the list, and it is the one shown.
      const [listed] = await tasksOf(token, workspaceId)
      const created = (await ok(server.graphqlUrl, token, TaskDocument, { id: listed!.id })).task
      expect(created).toMatchObject({ title: 'Fix the build', description: keyboard ? null : 'It is red.' })
      expect(created!.repositories.map(({ name, localPath }) => ({ name, localPath }))).toEqual([{ name: 'acme/web', localPath: realpathSync(checkout) }])
      await page.locator(`main.pane[data-task-id="${created!.id}"] h1`, { hasText: 'Fix the build' }).waitFor()
      if (label === 'phone') await page.getByRole('button', { name: '☰ Tasks' }).click()
      await expect.poll(() => page.locator(`[data-switcher="${label}"] .task-row[data-task-id="${created!.id}"]`).getAttribute('aria-current')).toBe('true')
      if (label === 'phone') await page.locator(`[data-switcher="phone"] .task-row[data-task-id="${created!.id}"]`).click()

      // The first session: a profile chosen from agentProfiles, and a first prompt.
      const profiles = page.getByLabel('Agent profile')
      await expect.poll(() => profiles.locator('option').allTextContents()).toEqual(['mock', 'mock-second'])
      await profiles.selectOption('mock-second')
      await page.getByLabel('First prompt (optional)').fill('hello from the page')
      await page.getByRole('button', { name: 'Start session' }).click()
      await page.locator('.transcript .message.agent', { hasText: 'echo: hello from the page' }).waitFor({ timeout: 20_000 })
      const first = (await ok(server.graphqlUrl, token, ClientTaskSessionsDocument, { id: created!.id })).task!.sessions
      expect(first.map((s) => ({ agentProfile: s.agentProfile, isPrimary: s.isPrimary }))).toEqual([{ agentProfile: 'mock-second', isPrimary: true }])
      expect(await page.locator('.transcript').getAttribute('data-session-id')).toBe(first[0]!.id)

      // "New session": a second one of the task (of the default profile), shown at once; a picker lists both.
      await page.getByRole('button', { name: 'New session' }).click()
      await dialog(page, 'new-session').waitFor()
      if (!keyboard) await expectFitsPhone(page, 'new-session')
      await dialog(page, 'new-session').getByLabel('First prompt (optional)').fill('and again')
      await dialog(page, 'new-session').getByRole('button', { name: 'Start session' }).click()
      await dialog(page, 'new-session').waitFor({ state: 'detached' })
      await page.locator('.transcript .message.agent', { hasText: 'echo: and again' }).waitFor({ timeout: 20_000 })
      const both = (await ok(server.graphqlUrl, token, ClientTaskSessionsDocument, { id: created!.id })).task!.sessions
      const second = both.find((s) => !s.isPrimary)
      expect(second).toMatchObject({ agentProfile: 'mock' })
      expect(await page.locator('.transcript').getAttribute('data-session-id')).toBe(second!.id)
      await expect.poll(() => page.getByLabel('Session', { exact: true }).locator('option').count()).toBe(2)
      await page.getByLabel('Session', { exact: true }).selectOption(first[0]!.id)
      await expect.poll(() => page.locator('.transcript').getAttribute('data-session-id')).toBe(first[0]!.id)

      // A member who is not the admin: the Workspace panel has the members, and no users.
      await page.getByRole('button', { name: 'Workspace settings' }).click()
      await dialog(page, 'workspace').locator('[data-section="members"] li').first().waitFor()
      expect(await dialog(page, 'workspace').locator('[data-section="members"] li').allTextContents()).toEqual([`Setup ${label} (you)`])
      expect(await dialog(page, 'workspace').locator('[data-section="users"]').count()).toBe(0)
      expect(await dialog(page, 'workspace').getByLabel('User id to add').count()).toBe(1)
      if (!keyboard) await expectFitsPhone(page, 'workspace')
      await page.keyboard.press('Escape')
      await dialog(page, 'workspace').waitFor({ state: 'detached' })
      expect(await focusedName(page)).toBe('Workspace settings')

      expect(errors).toEqual([])
      await context.close()
    }, 120_000)
  }
})

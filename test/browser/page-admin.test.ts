import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { ClientUsersDocument, ClientWorkspaceMembersDocument } from '../../packages/client/src/generated/graphql.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { launchBrowser } from '../support/browser.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { CreateWorkspaceDocument, ViewerDocument } from '../generated/graphql.ts'
import { axeViolations, dialog, expectFitsPhone, expectHeaderFits, focusedName, openPage, signInWithForm, tabTo, VIEWPORTS } from './page-helpers.ts'

describe('the admin’s Workspace panel: users (a token shown once, rotated, deactivated) and members (Chromium, sqlite)', () => {
  let server: TestServer
  let browser: Browser

  beforeAll(async () => {
    server = await startTestServer('sqlite', { webRoot: inject('webRoot') })
    browser = await launchBrowser()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  const usersNamed = async (name: string) => (await ok(server.graphqlUrl, server.adminToken, ClientUsersDocument)).users.filter((u) => u.name === name)
  const memberIds = async (workspaceId: string) =>
    (await ok(server.graphqlUrl, server.adminToken, ClientWorkspaceMembersDocument, { workspaceId })).boot.workspace.members.map((m) => m.id)
  const authenticates = async (token: string) => errorCodes(await http(server.graphqlUrl, token, ViewerDocument)).length === 0

  /** Everything a token could be kept in: the document, the address, localStorage and sessionStorage. */
  async function expectTokenNowhere(page: Page, token: string) {
    const kept = await page.evaluate(() => [document.documentElement.outerHTML, location.href, JSON.stringify({ ...localStorage }), JSON.stringify({ ...sessionStorage })])
    expect(kept.filter((text) => text.includes(token))).toEqual([])
  }

  for (const [label, viewport] of VIEWPORTS) {
    const keyboard = label === 'desktop'
    it(`${label}: creates a user${keyboard ? ' by keyboard' : ''} (its token shown once, working elsewhere), adds and removes it as a member, rotates its token, deactivates it`, async () => {
      const workspace = (await ok(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: `HQ ${label}` })).createWorkspace
      const name = `Dana ${label}`
      const { context, page, errors } = await openPage(browser, server.url, viewport, server.adminToken)
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
      const panel = dialog(page, 'workspace')
      const tokenField = panel.getByRole('textbox', { name: `Token for ${name}` })
      await page.getByLabel('Workspace', { exact: true }).selectOption({ label: `HQ ${label}` })
      if (!keyboard) await expectHeaderFits(page, viewport.width)

      // A blank name is refused next to the form, and no user is made.
      const openPanel = async () => {
        if (keyboard) {
          await tabTo(page, 'Workspace settings')
          await page.keyboard.press('Enter')
        } else await page.getByRole('button', { name: 'Workspace settings' }).click()
        await panel.locator('[data-section="users"]').waitFor()
      }
      await openPanel()
      const usersBefore = (await ok(server.graphqlUrl, server.adminToken, ClientUsersDocument)).users.length
      await panel.getByRole('button', { name: 'Create user' }).click()
      await expect.poll(() => panel.locator('[data-form="create-user"] + [role="alert"]').getAttribute('data-error-code')).toBe('BAD_USER_INPUT')
      expect((await ok(server.graphqlUrl, server.adminToken, ClientUsersDocument)).users).toHaveLength(usersBefore)

      // Create: the token is shown once, with a copy button and the warning.
      if (keyboard) {
        await tabTo(page, 'New user’s name')
        await page.keyboard.type(name)
        await page.keyboard.press('Enter')
        await tokenField.waitFor()
        expect(await focusedName(page)).toBe('Copy')
        await page.keyboard.press('Enter')
      } else {
        await panel.getByLabel('New user’s name').fill(name)
        await panel.getByRole('button', { name: 'Create user' }).click()
        await tokenField.waitFor()
        await expectFitsPhone(page, 'workspace')
        await panel.getByRole('button', { name: 'Copy' }).click()
      }
      const token = await tokenField.inputValue()
      expect(await panel.locator('[data-token-box]').textContent()).toContain('it will not be shown again')
      await expect.poll(() => panel.locator('[data-token-box] [role="status"]').textContent()).toBe('Copied.')
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token)
      const [created] = await usersNamed(name)
      expect(created).toMatchObject({ name, active: true })
      expect(await axeViolations(page, { within: 'dialog[data-dialog="workspace"]' })).toEqual([])

      // The token works: it signs in elsewhere (no workspace yet there).
      const elsewhere = await signInWithForm(browser, server.url, token)
      await elsewhere.page.locator('[data-empty="no-workspace"]').waitFor()

      // Dismissed, it is gone: from the page, the address, storage; and after a reload.
      if (keyboard) {
        await page.keyboard.press('Tab')
        expect(await focusedName(page)).toBe('Done')
        await page.keyboard.press('Enter')
        expect(await focusedName(page)).toBe('New user’s name')
        await page.keyboard.press('Escape')
        await panel.waitFor({ state: 'detached' })
        expect(await focusedName(page)).toBe('Workspace settings')
      } else {
        await panel.getByRole('button', { name: 'Done' }).click()
        await panel.getByRole('button', { name: 'Close' }).click()
      }
      await expectTokenNowhere(page, token)
      await page.reload()
      await page.getByLabel('Workspace', { exact: true }).selectOption({ label: `HQ ${label}` })
      if (keyboard) await page.locator('.top-bar').click({ position: { x: 1, y: 1 } }) // Tab starts from the header again
      await openPanel()
      await panel.locator(`[data-user-id="${created!.id}"]`).waitFor()
      expect(await panel.locator('[data-token-box]').count()).toBe(0)
      await expectTokenNowhere(page, token)

      // Members: add the new user (its page then lists the workspace), then remove it.
      await panel.getByLabel('User to add').selectOption({ label: name })
      await panel.getByRole('button', { name: 'Add member' }).click()
      await panel.locator(`[data-section="members"] [data-member-id="${created!.id}"]`).waitFor()
      expect(await memberIds(workspace.id)).toContain(created!.id)
      await elsewhere.page.reload()
      await expect.poll(() => elsewhere.page.getByLabel('Workspace', { exact: true }).locator('option').allTextContents()).toEqual([`HQ ${label}`])
      await panel.getByRole('button', { name: `Remove ${name}` }).click()
      await panel.locator(`[data-section="members"] [data-member-id="${created!.id}"]`).waitFor({ state: 'detached' })
      expect(await memberIds(workspace.id)).not.toContain(created!.id)
      await elsewhere.page.reload()
      await elsewhere.page.locator('[data-empty="no-workspace"]').waitFor()
      await elsewhere.context.close()

      // Rotate: a new token, shown once; the old one stops working at once.
      await panel.getByRole('button', { name: `Rotate token of ${name}` }).click()
      await tokenField.waitFor()
      const rotated = await tokenField.inputValue()
      expect(rotated).not.toBe(token)
      expect(await authenticates(token)).toBe(false)
      expect(await authenticates(rotated)).toBe(true)
      await panel.getByRole('button', { name: 'Done' }).click()
      await expectTokenNowhere(page, rotated)

      // Deactivate, after a confirmation: every token of the user stops working.
      await panel.getByRole('button', { name: `Deactivate ${name}` }).click()
      await panel.getByRole('button', { name: `Yes, deactivate ${name}` }).click()
      await panel.locator(`[data-user-id="${created!.id}"][data-active="false"]`).waitFor()
      expect(await usersNamed(name)).toEqual([{ id: created!.id, name, active: false }])
      expect(await authenticates(rotated)).toBe(false)
      if (!keyboard) await expectFitsPhone(page, 'workspace')

      expect(errors).toEqual([])
      await context.close()
    }, 120_000)
  }
})

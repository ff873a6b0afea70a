import { createRequire } from 'node:module'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { expect } from 'vitest'
import { blockOtherHosts } from '../support/browser.ts'

export const DESKTOP = { width: 1280, height: 800 }
export const PHONE = { width: 390, height: 844 }
export const VIEWPORTS = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js')

/** A fresh context (phone: touch, mobile) with only loopback reachable, signed in by #token= when one is given. */
export async function openPage(browser: Browser, url: string, viewport: typeof DESKTOP, token?: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport, ...(viewport === PHONE && { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }) })
  await blockOtherHosts(context)
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(e.message))
  await page.goto(token ? `${url}/#token=${encodeURIComponent(token)}` : `${url}/`)
  return { context, page, errors }
}

/** Signs in as a person does, in a fresh desktop context: the token pasted into the sign-in form. */
export async function signInWithForm(browser: Browser, url: string, token: string): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await openPage(browser, url, DESKTOP)
  await page.getByLabel('Token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  return { context, page }
}

/** The open dialog of that name (Dialog.tsx marks each with data-dialog). */
export const dialog = (page: Page, name: string) => page.locator(`dialog[data-dialog="${name}"][open]`)

/** What the focused element is called: its aria-label, its label's text, or its own text. */
export function focusedName(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null
    if (!el) return ''
    const labels = (el as HTMLInputElement).labels
    return (el.getAttribute('aria-label') ?? (labels?.[0]?.textContent || el.textContent) ?? '').trim()
  })
}

/** Presses Tab (Shift+Tab when `backwards`) until the element named `name` has focus (at most 60 presses). */
export async function tabTo(page: Page, name: string | RegExp, backwards = false) {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press(backwards ? 'Shift+Tab' : 'Tab')
    const focused = await focusedName(page)
    if (typeof name === 'string' ? focused === name : name.test(focused)) return
  }
  throw new Error(`Tab never reached ${String(name)}`)
}

/** On a phone: the dialog is the whole width, and nothing in the page or the dialog scrolls sideways. */
export async function expectFitsPhone(page: Page, name: string) {
  const box = await dialog(page, name).boundingBox()
  expect(box).toMatchObject({ x: 0, width: 390 })
  const overflow = await dialog(page, name).evaluate((d) => ({ page: document.documentElement.scrollWidth, dialog: d.scrollWidth - d.clientWidth }))
  expect(overflow).toEqual({ page: 390, dialog: 0 })
}

/** Every control of the header lies inside the viewport. */
export async function expectHeaderFits(page: Page, width: number) {
  const rights = await page.locator('.top-bar > *').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right))
  expect(Math.max(...rights)).toBeLessThanOrEqual(width)
}

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[]; failureSummary?: string }[]
}

/**
 * axe-core's violations, each with where it is: the WCAG A/AA rules inside `within` (a dialog), or
 * with `seriousOnly` every rule over the whole page, keeping the serious and critical ones.
 */
export async function axeViolations(page: Page, options: { within?: string; seriousOnly?: boolean }): Promise<string[]> {
  await page.addScriptTag({ path: axePath })
  const violations = await page.evaluate(async ({ within, seriousOnly }) => {
    const axe = (window as unknown as { axe: { run: (context: Element | Document, options: object) => Promise<{ violations: unknown[] }> } }).axe
    const context = within ? document.querySelector(within)! : document
    return (await axe.run(context, seriousOnly ? {} : { runOnly: ['wcag2a', 'wcag2aa'] })).violations
  }, options)
  return (violations as AxeViolation[])
    .filter((v) => !options.seriousOnly || v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${v.help} at ${n.target.join(' ')}${n.failureSummary ? `: ${n.failureSummary}` : ''}`))
}

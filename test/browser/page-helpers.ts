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

/** axe-core's WCAG A/AA violations inside `selector`. */
export async function axeViolations(page: Page, selector: string): Promise<string[]> {
  await page.addScriptTag({ path: axePath })
  return page.evaluate(async (scope) => {
    const axe = (window as unknown as { axe: { run: (context: Element, options: object) => Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> } }).axe
    const result = await axe.run(document.querySelector(scope)!, { runOnly: ['wcag2a', 'wcag2aa'] })
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
  }, selector)
}

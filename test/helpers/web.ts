/**
 * Helpers for the web file manager's browser tests (test/front/web-*.test.ts): log in
 * through the page, wait for a listing, read a download.
 */
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'

/** Logs in on the page at `url`: a tmp space for `userID`, a configured connection by its label, or a gateway user. */
export async function webLogin(
  page: Page,
  url: string,
  how: { userID: string } | { label: string; password?: string; username?: string } | { gatewayUser: string; password: string },
): Promise<void> {
  await page.goto(`${url}/`)
  await page.waitForSelector('#login-form')
  if ('gatewayUser' in how) {
    await page.selectOption('#login-mode', 'gateway')
    await page.fill('#login-gw-user', how.gatewayUser)
    await page.fill('#login-gw-password', how.password)
  } else if ('userID' in how) {
    await page.selectOption('#login-mode', 'tmp')
    await page.fill('#login-user', how.userID)
  } else {
    await page.selectOption('#login-mode', 'connection')
    await page.fill('#login-label', how.label)
    if (how.username) await page.fill('#login-username', how.username)
    if (how.password) await page.fill('#login-password', how.password)
  }
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#listing, #login-error:not([hidden]), #alert:not([hidden])')
  if (!(await page.$('#listing'))) throw new Error(`the login failed: ${await page.textContent('#login-error:not([hidden]), #alert:not([hidden])')}`)
}

/** Waits until the listing shows an entry with this name (a name button's data-name). */
export async function row(page: Page, name: string, state: 'attached' | 'detached' = 'attached'): Promise<void> {
  await page.waitForSelector(`#listing button[data-name="${name}"]`, { state, timeout: 20_000 })
}

/** The names in the listing, in the order shown. */
export async function names(page: Page): Promise<string[]> {
  return page.$$eval('#listing tbody button[data-name]', (bs) => bs.map((b) => b.getAttribute('data-name')!))
}

/** Ticks the selection box of these entries (and only these). */
export async function select(page: Page, ...which: string[]): Promise<void> {
  for (const box of await page.$$('#listing tbody input[type=checkbox]:checked')) await box.uncheck()
  for (const n of which) await page.check(`#listing tr:has(button[data-name="${n}"]) input[type=checkbox]`)
}

/** Runs `action` and returns the bytes of the download it starts, with its suggested name. */
export async function downloaded(page: Page, action: () => Promise<unknown>): Promise<{ name: string; bytes: Buffer }> {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), action()])
  const path = await d.path()
  return { name: d.suggestedFilename(), bytes: readFileSync(path) }
}

/** Fills the open dialog's name field and submits it. */
export async function answerName(page: Page, name: string): Promise<void> {
  await page.fill('dialog[open] #name-input', name)
  await page.click('dialog[open] button[type=submit]')
  await page.waitForSelector('dialog[open]', { state: 'detached' })
}

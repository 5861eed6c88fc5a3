/**
 * @module test/front/web-a11y.test
 * The web file manager for everyone: axe-core (injected into the page by the test
 * only, never served) finds no serious or critical violation on the login page, the
 * browser with a selection, an open dialog, a preview, a share's password page and
 * share listing, at phone width and in the dark scheme; and the whole round of a
 * keyboard user: log in, reach a folder, open it, select a file, rename it, delete it
 * after confirming, with Tab, Enter, Space and Escape only.
 *
 * FILEGATE_WEB_SCREENSHOTS=docs/screenshots npx tap test/front/web-a11y.test.ts
 * refreshes the screenshots of docs/web.md.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { createShare } from '../helpers/share.js'
import { row, select, webLogin } from '../helpers/web.js'

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const SHOTS = process.env.FILEGATE_WEB_SCREENSHOTS

interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/** Runs axe in the page (evaluated through the DevTools protocol, so the page's CSP does not apply to it). */
async function axe(t: Test, page: Page, where: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE)
  const violations = (await page.evaluate(async () => {
    const w = window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: Violation[] }> } }
    return (await w.axe.run(document, { resultTypes: ['violations'] })).violations
  })) as Violation[]
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  t.same(
    bad.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${where}: no serious or critical accessibility violation`,
  )
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: join(SHOTS, name) })
}

async function seed(url: string, token: string) {
  const call = api(url, token)
  const photo = await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 240, g: 150, b: 40 } } })
    .composite([{ input: Buffer.from('<svg width="160" height="120"><circle cx="80" cy="70" r="34" fill="#c0362c"/><rect y="90" width="160" height="30" fill="#1f5f8b"/></svg>') }])
    .jpeg()
    .toBuffer()
  await call('POST', '/api/files/cat', { path: '/sunset.jpg' }, { body: new Uint8Array(photo) })
  for (const [path, body] of [
    ['/Projects/plan.md', '# Plan'],
    ['/Projects/budget.csv', 'a,b\n1,2'],
    ['/Photos/.keep', ''],
    ['/report.pdf', '%PDF-1.4'],
    ['/notes.txt', 'some notes'],
    ['/archive.zip', 'PK'],
  ] as const) await call('POST', '/api/files/cat', { path }, { body })
}

for (const scheme of ['light', 'dark'] as const) {
  t.test(`axe finds no serious violation (${scheme})`, { skip: noBrowser }, async (t) => {
    const { url } = await startTestServer(t, { plugins: ['plg_image_thumbnail'] })
    const { page, failed } = await launchBrowser(t)
    await page.emulateMedia({ colorScheme: scheme })
    await page.goto(`${url}/`)
    await page.waitForSelector('#login-form')
    await axe(t, page, 'the login page')
    await webLogin(page, url, { userID: 'axe' })
    const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
    await seed(url, token)
    await page.reload()
    await row(page, 'notes.txt')
    await page.waitForSelector('#listing img.thumb')
    await select(page, 'notes.txt')
    await axe(t, page, 'the browser with a selection and a thumbnail')
    await shot(page, `browser-${scheme}.png`)
    await page.click('#share')
    await page.waitForSelector('dialog[open]')
    await axe(t, page, 'the share dialog')
    await page.keyboard.press('Escape')
    await page.click('#listing button[data-name="notes.txt"]')
    await page.waitForSelector('dialog[open] .preview-body pre')
    await axe(t, page, 'a preview')
    await page.keyboard.press('Escape')

    const share = await createShare(url, token, { path: '/Projects/', can_read: true, can_upload: true, password: 'pass word' })
    await page.goto(`${url}/s/${share.id}`)
    await page.waitForSelector('#share-password-form')
    await axe(t, page, "a share's password page")
    await page.fill('#share-password-input', 'pass word')
    await page.press('#share-password-input', 'Enter')
    await row(page, 'plan.md')
    await axe(t, page, 'a share page')
    await shot(page, `share-${scheme}.png`)

    await page.setViewportSize({ width: 380, height: 760 })
    await page.goto(`${url}/`)
    await row(page, 'notes.txt')
    await axe(t, page, 'the browser at phone width')
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    t.ok(overflow <= 0, `nothing wider than a phone (${overflow}px too wide)`)
    t.equal(await page.isVisible('#listing th.when'), false, 'the time column gives way at phone width')
    await shot(page, `phone-${scheme}.png`)
    // The check can fail: an image without a text alternative is reported.
    await page.evaluate(() => document.querySelector('main')!.append(Object.assign(document.createElement('img'), { src: '/web/none.png' })))
    const seen = (await page.evaluate(async () => {
      const w = window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: Violation[] }> } }
      return (await w.axe.run(document, { resultTypes: ['violations'] })).violations.map((v) => v.id)
    })) as string[]
    t.ok(seen.includes('image-alt'), 'axe reports a planted violation')
    t.same(failed.filter((f) => !f.includes('/web/none.png')), [], 'no page errors')
  })
}

/** Presses Tab until the focus is on an element matching `selector`; fails after `max` presses. */
async function tabTo(page: Page, selector: string, max = 60, key = 'Tab'): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(key)
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return
  }
  throw new Error(`${selector} cannot be reached with ${key}`)
}

t.test('keyboard only: log in, open a folder, select, rename, delete', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url, 'keys')
  await seed(url, token)
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/`)
  await page.waitForSelector('#login-form')
  await tabTo(page, '.skip')
  t.pass('the first Tab reaches "Skip to the files"')
  await tabTo(page, '#login-mode')
  await tabTo(page, '#login-user')
  await page.keyboard.type('keys')
  await page.keyboard.press('Enter')
  await row(page, 'Projects')

  await tabTo(page, '#listing button[data-name="Projects"]')
  await page.keyboard.press('Enter')
  await row(page, 'plan.md')
  t.equal(await page.evaluate(() => document.activeElement?.id), 'listing-title', 'the focus goes to the folder heading, which is announced')

  // Space ticks a file's box; the actions for it appear.
  await tabTo(page, '#listing input[aria-label="Select plan.md"]')
  await page.keyboard.press('Space')
  await page.waitForSelector('#rename')
  await tabTo(page, '#rename', 60, 'Shift+Tab')
  await page.keyboard.press('Enter')
  await page.waitForSelector('dialog[open] #name-input')
  t.equal(await page.evaluate(() => document.activeElement?.id), 'name-input', 'the dialog puts the focus on its field')
  await page.keyboard.press('ControlOrMeta+a')
  await page.keyboard.type('plan-v2.md')
  await page.keyboard.press('Enter')
  await row(page, 'plan-v2.md')

  // Delete: Escape cancels, Enter on the confirmation deletes.
  await tabTo(page, '#listing input[aria-label="Select plan-v2.md"]')
  await page.keyboard.press('Space')
  await tabTo(page, '#delete', 60, 'Shift+Tab')
  await page.keyboard.press('Enter')
  await page.waitForSelector('dialog[open]')
  await page.keyboard.press('Escape')
  await page.waitForSelector('dialog[open]', { state: 'detached' })
  t.equal((await api(url, token)('GET', '/api/files/cat', { path: '/Projects/plan-v2.md' })).status, 200, 'Escape cancelled')
  await tabTo(page, '#delete', 60, 'Shift+Tab')
  await page.keyboard.press('Enter')
  await tabTo(page, 'dialog[open] button[type=submit]')
  await page.keyboard.press('Enter')
  await row(page, 'plan-v2.md', 'detached')
  t.equal((await api(url, token)('GET', '/api/files/cat', { path: '/Projects/plan-v2.md' })).status, 404, 'deleted with the keyboard')

  // Back up with the breadcrumbs; sort by a header.
  await tabTo(page, 'nav.crumbs button', 60, 'Shift+Tab')
  await page.keyboard.press('Enter')
  await row(page, 'notes.txt')
  await tabTo(page, 'th button[data-sort=size]')
  await page.keyboard.press('Enter')
  t.equal(await page.getAttribute('th:has(button[data-sort=size])', 'aria-sort'), 'ascending', 'sorted from the keyboard')
  t.same(failed, [], 'no page errors')
})

/**
 * Headless Chromium (Debian's package) driven by playwright-core, for the tests of
 * filegate's own pages (the admin console, the OAuth login page): a fresh profile per
 * launch, closed and removed at the test's end; `failed` collects page errors, failed
 * requests (unless told not to) and Content-Security-Policy refusals, which a test asserts empty.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Page, chromium } from 'playwright-core'
import type { Test } from 'tap'

export const CHROMIUM = '/usr/bin/chromium'
/** For `t.test(name, { skip: noBrowser }, ...)`: the reason when Chromium is missing. */
export const noBrowser: string | false = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install -y chromium)`

export interface BrowserOptions {
  readonly width?: number
  /** Count failed requests as failures (default true; false where a test ends a navigation on purpose). */
  readonly failedRequests?: boolean
}

export async function launchBrowser(t: Test, opts: BrowserOptions = {}): Promise<{ page: Page; failed: string[] }> {
  // A fresh profile (--user-data-dir) per run: playwright passes it for a persistent context.
  const profile = mkdtempSync(join(tmpdir(), 'filegate-chromium-'))
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: opts.width ?? 1200, height: 900 },
  })
  t.teardown(async () => {
    await browser.close()
    rmSync(profile, { recursive: true, force: true })
  })
  const page = browser.pages()[0] ?? (await browser.newPage())
  const failed: string[] = []
  page.on('pageerror', (e) => failed.push(String(e)))
  // Chromium's PDF viewer is an extension page in the preview's frame that loads its own
  // chrome:// resources and then fetches the page's blob: URL: when a test closes the
  // preview before the viewer has finished, those loads are aborted (ERR_ABORTED) — the
  // browser's own pages are not the page's requests, and a blob: load the page let go of
  // lost nothing. Any other failure of a blob: URL still counts.
  const letGo = (r: { url(): string; failure(): { errorText: string } | null }) =>
    /^chrome(-extension)?:\/\//.test(r.url()) || (r.url().startsWith('blob:') && r.failure()?.errorText === 'net::ERR_ABORTED')
  if (opts.failedRequests !== false) page.on('requestfailed', (r) => void (!letGo(r) && failed.push(`${r.url()} ${r.failure()?.errorText}`)))
  page.on('console', (m) => void (/Content Security Policy|Refused to/.test(m.text()) && failed.push(m.text())))
  page.on('dialog', (d) => void d.accept())
  return { page, failed }
}

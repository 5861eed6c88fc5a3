/**
 * @module bench/web
 * The web file manager (front/web/, docs/web.md): what a browser downloads to show it
 * (every file of the page, raw and gzip-compressed as a proxy would send it), and the
 * time to the first listing: from the start of the navigation to `/` (token already in
 * the tab) until the page has listed a folder of BENCH_WEB_ENTRIES entries (200), in a
 * fresh headless Chromium page each run (no cache), BENCH_WEB_RUNS runs (15), median and
 * p90. There is no reference: the figure is an absolute one, for the page's own record.
 * Not part of `npm run bench` (it needs Chromium): `node --import tsx bench/web.ts`.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { chromium } from 'playwright-core'
import { runBenchmark } from './lib/bench.js'
import { fmt, median, progress, publish, table } from './lib/report.js'
import { startFilegate, tempDir, tmpSession } from './lib/servers.js'

const WEB = fileURLToPath(new URL('../front/web/', import.meta.url))
const ENTRIES = Number(process.env.BENCH_WEB_ENTRIES ?? 200)
const RUNS = Number(process.env.BENCH_WEB_RUNS ?? 15)

runBenchmark('web', async () => {
  const files = readdirSync(WEB).sort()
  const raw = files.map((f) => readFileSync(join(WEB, f)))
  const rawBytes = raw.reduce((n, b) => n + b.length, 0)
  const gzBytes = raw.reduce((n, b) => n + gzipSync(b, { level: 6 }).length, 0)

  const server = await startFilegate(tempDir('web'), 1)
  const token = await tmpSession(server.url, 'bench')
  for (let i = 0; i < ENTRIES; i++) {
    const res = await fetch(`${server.url}/api/files/cat?path=/folder/file-${String(i).padStart(4, '0')}.txt`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: `file ${i}` })
    if (!res.ok) throw new Error(`seeding failed: ${res.status}`)
  }
  const profile = tempDir('web-chromium')
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  const times: number[] = []
  try {
    await browser.addInitScript((t) => sessionStorage.setItem('filegate-web-token', t), token)
    for (let i = 0; i < RUNS; i++) {
      const page = await browser.newPage()
      // Each run from nothing: no cached file of the page.
      const cdp = await browser.newCDPSession(page)
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
      await page.addInitScript(() =>
        document.addEventListener('filegate:listed', (e) => {
          ;(window as unknown as { listedAt: number; listed: number }).listedAt = performance.now()
          ;(window as unknown as { listed: number }).listed = (e as CustomEvent<{ count: number }>).detail.count
        }),
      )
      await page.goto(`${server.url}/#/folder/`)
      await page.waitForFunction(() => 'listedAt' in window, undefined, { timeout: 30_000 })
      const [at, count] = await page.evaluate(() => [(window as unknown as { listedAt: number }).listedAt, (window as unknown as { listed: number }).listed])
      if (count !== ENTRIES) throw new Error(`the page listed ${count} entries, not ${ENTRIES}`)
      times.push(at!)
      await page.close()
    }
  } finally {
    await browser.close()
    await server.stop()
  }
  const sorted = [...times].sort((a, b) => a - b)
  const p90 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)]!
  progress(`web: ${files.length} files, ${rawBytes} bytes raw, ${gzBytes} gzip; first listing ${fmt(median(times))} ms`)
  publish({
    name: 'web',
    settings: { entries: ENTRIES, runs: RUNS, files },
    figures: { bundle_bytes: rawBytes, bundle_gzip_bytes: gzBytes, first_listing_ms_median: median(times), first_listing_ms_p90: p90 },
    ratios: {},
    runs: times,
    skipped: {},
    table: table(
      ['what', 'figure'],
      [
        ['files of the page', String(files.length)],
        ['bundle, raw', `${(rawBytes / 1024).toFixed(1)} KiB`],
        ['bundle, gzip -6', `${(gzBytes / 1024).toFixed(1)} KiB`],
        [`first listing of ${ENTRIES} entries, median`, `${fmt(median(times))} ms`],
        ['first listing, p90', `${fmt(p90)} ms`],
      ],
    ),
  })
})

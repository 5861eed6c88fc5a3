/**
 * @module test/front/web-tus.test
 * Large uploads from the web file manager go through tus (front/web/tus.js) with a
 * progress bar, and survive a cut: a 50 MiB file whose upload is cut mid-way by a
 * reload of the page resumes, once the file is picked again, from the offset the
 * server kept (the upload's URL was in localStorage) and not from zero; a connection
 * cut under a PATCH is retried from the server's offset without the user doing anything.
 * Either way the stored file is the file, byte for byte. The browser's network is slowed
 * (DevTools' network conditions) only so that "mid-way" is a moment the test can catch.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { row, webLogin } from '../helpers/web.js'

const MiB = 1024 * 1024
const sha = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex')

function bigFile(t: Test, name: string, size: number): { path: string; hash: string } {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-web-tus-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const bytes = randomBytes(size)
  writeFileSync(join(dir, name), bytes)
  return { path: join(dir, name), hash: sha(bytes) }
}

/** Slows the page's network so that an upload takes a few seconds (bytes per second). */
async function throttle(page: Page, bytesPerSecond: number): Promise<void> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: bytesPerSecond })
}

/** The PATCHes the page sends, with their Upload-Offset. */
function patches(page: Page): number[] {
  const offsets: number[] = []
  page.on('request', (r) => {
    if (r.method() === 'PATCH' && r.url().includes('/api/files/tus/')) offsets.push(Number(r.headers()['upload-offset']))
  })
  return offsets
}

t.test('a 50 MiB upload cut by a reload resumes from the stored offset', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t, { max_upload_bytes: 200 * MiB })
  const file = bigFile(t, 'big.bin', 50 * MiB)
  const { page, failed } = await launchBrowser(t, { failedRequests: false })
  await webLogin(page, url, { userID: 'tusser' })
  const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
  await throttle(page, 12 * MiB)
  await page.setInputFiles('#pick-files', file.path)
  // Wait until part of it has been sent, then cut it: a reload ends every request of the page.
  await page.waitForFunction(() => {
    const p = document.querySelector('#files .upload progress') as HTMLProgressElement | null
    return p !== null && p.value > 0.3 * p.max
  }, undefined, { timeout: 60_000, polling: 50 })
  t.ok((await page.textContent('#files .upload .state'))!.match(/\d+% of 50 MiB/), 'the progress is shown in words too')
  await page.reload()
  await page.waitForSelector('#listing')

  const stored = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('filegate-tus:')).map((k) => JSON.parse(localStorage.getItem(k)!)))
  t.equal(stored.length, 1, 'the upload URL is kept in localStorage')
  const uploadUrl = stored[0].url as string
  t.match(uploadUrl, /^\/api\/files\/tus\/[A-Za-z0-9_-]+/)
  const head = await fetch(`${url}${uploadUrl}`, { method: 'HEAD', headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' } })
  const kept = Number(head.headers.get('upload-offset'))
  t.ok(kept > 0 && kept < 50 * MiB, `the server kept part of it (${kept} bytes)`)
  t.match(await page.textContent('.resumes'), /Unfinished upload: \/big\.bin/, 'the page offers to resume it')
  t.equal((await api(url, token)('HEAD', '/api/files/cat', { path: '/big.bin' })).status, 404, 'nothing is at the target yet')

  // Pick the same file again: the upload goes on from the server's offset.
  const sent = patches(page)
  await throttle(page, 40 * MiB)
  await page.setInputFiles('#pick-files', file.path)
  await row(page, 'big.bin')
  t.equal(sent[0], kept, `the first PATCH after the reload starts at the kept offset (${kept}), not at 0`)
  const body = Buffer.from(await (await api(url, token)('GET', '/api/files/cat', { path: '/big.bin' })).arrayBuffer())
  t.equal(body.length, 50 * MiB, 'the whole file is stored')
  t.equal(sha(body), file.hash, 'byte for byte')
  t.equal(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('filegate-tus:')).length), 0, 'the finished upload is forgotten')
  t.same(failed, [], 'no page errors')
})

t.test('a connection cut under a PATCH is retried from the server offset (a local connection)', { skip: noBrowser }, async (t) => {
  const disk = mkdtempSync(join(tmpdir(), 'filegate-web-tus-disk-'))
  t.teardown(() => rmSync(disk, { recursive: true, force: true }))
  const { url } = await startTestServer(t, { max_upload_bytes: 200 * MiB, connections: [{ label: 'disk', type: 'local', path: disk, password: 'disk password' }] })
  const file = bigFile(t, 'cut.bin', 20 * MiB)
  const { page, failed } = await launchBrowser(t, { failedRequests: false })
  await webLogin(page, url, { label: 'disk', password: 'disk password' })
  const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
  const sent = patches(page)
  // The second PATCH's connection is reset before it reaches the server.
  let seen = 0
  await page.route('**/api/files/tus/**', (route) => {
    if (route.request().method() === 'PATCH' && ++seen === 2) return route.abort('connectionreset')
    return route.continue()
  })
  await page.setInputFiles('#pick-files', file.path)
  await row(page, 'cut.bin')
  t.ok(sent.length >= 4, `the PATCHes: ${sent.join(', ')}`)
  t.equal(sent[1], sent[2], 'the cut PATCH is sent again from the offset the server reported')
  t.ok(sent[1]! > 0, 'which is after the first chunk, not 0')
  const body = Buffer.from(await (await api(url, token)('GET', '/api/files/cat', { path: '/cut.bin' })).arrayBuffer())
  t.equal(sha(body), file.hash, 'the stored file is the file')
  t.equal(sha(readFileSync(join(disk, 'cut.bin'))), file.hash, 'in the connection\'s folder')
  t.same(failed, [], 'no page errors')
})

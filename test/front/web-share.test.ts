/**
 * @module test/front/web-share.test
 * Share links in a browser: made in the web file manager (rights, password, expiry; the
 * link shown to copy), then opened at /s/<id> in a fresh browser like a recipient's: a
 * read share lists and downloads (a file, a zip of all) and offers nothing that writes;
 * a password share asks first and says when the password is wrong; an upload-only share is
 * a drop box that cannot replace a file; an upload share lists and uploads; a write share
 * also renames and deletes; a file share shows its one file; an expired link and a
 * removed one each get a page that says so.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { createShare, viaShare } from '../helpers/share.js'
import { zipEntryNames } from '../helpers/transfers.js'
import { answerName, downloaded, row, select, webLogin } from '../helpers/web.js'

async function seeded(t: Test) {
  const running = await startTestServer(t)
  const token = await tmpSession(running.url, 'owner')
  const call = api(running.url, token)
  for (const [path, body] of [
    ['/docs/a.txt', 'alpha'],
    ['/docs/sub/b.txt', 'beta'],
    ['/inbox/keep.txt', 'kept'],
  ] as const) await call('POST', '/api/files/cat', { path }, { body })
  return { ...running, token, call }
}

t.test('a share made in the page, with rights, password and expiry, and its link', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t)
  const { page, failed } = await launchBrowser(t)
  await webLogin(page, url, { userID: 'sharer' })
  await page.click('#new-folder')
  await answerName(page, 'docs')
  await row(page, 'docs')
  await select(page, 'docs')
  await page.click('#share')
  await page.check('#right-read-upload')
  await page.fill('#share-password', 'open sesame')
  const nextYear = new Date(Date.now() + 365 * 86400_000)
  const local = new Date(nextYear.getTime() - nextYear.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
  await page.fill('#share-expire', local)
  await page.click('dialog[open] button[type=submit]')
  await page.waitForSelector('#share-link')
  const link = await page.inputValue('#share-link')
  t.match(link, new RegExp(`^${url}/s/[A-Za-z0-9_-]{20,}$`), 'the link opens the share page')
  await page.click('#copy-link')
  await page.waitForSelector('dialog[open] .hint:text-matches("Copied|Ctrl")')
  const token = (await page.evaluate(() => sessionStorage.getItem('filegate-web-token')))!
  const shares = ((await (await api(url, token)('GET', '/api/share')).json()) as { results: Record<string, unknown>[] }).results
  t.equal(shares.length, 1)
  t.match(shares[0], { id: link.split('/s/')[1], path: '/docs', can_read: true, can_upload: true, can_write: false, has_password: true }, 'the share has the chosen rights and a password')
  t.ok(Math.abs((shares[0]!.expire as number) - nextYear.getTime()) < 120_000, 'and the chosen expiry')
  await page.click('dialog[open] button:text("Done")')
  t.same(failed, [], 'no page errors')
})

t.test('a read share in a browser: list, download, zip; nothing that writes', { skip: noBrowser }, async (t) => {
  const { url, token } = await seeded(t)
  const share = await createShare(url, token, { path: '/docs/', can_read: true })
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/s/${share.id}`)
  await row(page, 'a.txt')
  await row(page, 'sub')
  for (const id of ['#upload-files', '#new-folder', '#new-file', '#share']) t.equal(await page.$(id), null, `no ${id}`)
  await select(page, 'a.txt')
  for (const id of ['#rename', '#move', '#delete']) t.equal(await page.$(id), null, `no ${id} for a selection`)
  const file = await downloaded(page, () => page.click('#download'))
  t.equal(file.bytes.toString(), 'alpha', 'the file downloads')
  await select(page)
  const zip = await downloaded(page, () => page.click('#zip'))
  t.ok((await zipEntryNames(zip.bytes)).some((n) => n.endsWith('sub/b.txt')), `the zip of all holds everything: ${(await zipEntryNames(zip.bytes)).join(' ')}`)
  await page.click('#listing button[data-name="sub"]')
  await row(page, 'b.txt')
  t.same(failed, [], 'no page errors, no refused request')
})

t.test('a password share asks for it, and says when it is wrong', { skip: noBrowser }, async (t) => {
  const { url, token } = await seeded(t)
  const share = await createShare(url, token, { path: '/docs/', can_read: true, password: 'hunter2 hunter2' })
  const { page, failed } = await launchBrowser(t, { failedRequests: false })
  await page.goto(`${url}/s/${share.id}`)
  await page.waitForSelector('#share-password-form')
  t.equal(await page.$('#listing'), null, 'nothing is listed before the password')
  await page.fill('#share-password-input', 'wrong')
  await page.click('#share-password-form button[type=submit]')
  await page.waitForSelector('#share-password-form .error:not([hidden])')
  t.equal(await page.textContent('#share-password-form .error'), 'Wrong password.')
  await page.fill('#share-password-input', 'hunter2 hunter2')
  await page.click('#share-password-form button[type=submit]')
  await row(page, 'a.txt')
  await select(page, 'a.txt')
  const file = await downloaded(page, () => page.click('#download'))
  t.equal(file.bytes.toString(), 'alpha', 'a download with the password')
  await page.reload()
  await row(page, 'a.txt')
  t.pass('a reload of the tab keeps the password')
  t.same(failed, [], 'no page errors')
})

t.test('an upload-only share is a drop box that cannot replace a file', { skip: noBrowser }, async (t) => {
  const { url, token, call } = await seeded(t)
  const share = await createShare(url, token, { path: '/inbox/', can_read: false, can_upload: true })
  const src = mkdtempSync(join(tmpdir(), 'filegate-web-share-'))
  t.teardown(() => rmSync(src, { recursive: true, force: true }))
  writeFileSync(join(src, 'report.txt'), 'my report')
  writeFileSync(join(src, 'keep.txt'), 'overwritten?')
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/s/${share.id}`)
  await page.waitForSelector('#dropbox')
  t.equal(await page.$('#listing'), null, 'nothing is listed')
  await page.setInputFiles('#dropbox-files', join(src, 'report.txt'))
  await page.waitForSelector('#uploaded li:text("report.txt — uploaded")')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/inbox/report.txt' })).text(), 'my report', 'delivered to the owner')
  await page.setInputFiles('#dropbox-files', join(src, 'keep.txt'))
  await page.waitForSelector('#alert:not([hidden])')
  t.match(await page.textContent('#alert'), /Not uploaded: keep\.txt/, 'refused, in words')
  t.notMatch(await page.textContent('#alert'), /[{}]/, 'no JSON envelope')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/inbox/keep.txt' })).text(), 'kept', 'the existing file is untouched')
  t.same(failed, [], 'no page errors')
})

t.test('an upload share lists and uploads; a write share also renames and deletes', { skip: noBrowser }, async (t) => {
  const { url, token, call } = await seeded(t)
  const up = await createShare(url, token, { path: '/docs/', can_read: true, can_upload: true })
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/s/${up.id}`)
  await row(page, 'a.txt')
  await page.click('#new-folder')
  await answerName(page, 'made-by-guest')
  await row(page, 'made-by-guest')
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer()
    d.items.add(new File(['guest bytes'], 'guest.txt'))
    return d
  })
  await page.dispatchEvent('#files', 'drop', { dataTransfer: dt })
  await row(page, 'guest.txt')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/docs/guest.txt' })).text(), 'guest bytes', 'uploaded into the shared folder')
  await select(page, 'a.txt')
  t.equal(await page.$('#delete'), null, 'an upload share cannot delete')

  const rw = await createShare(url, token, { path: '/docs/', can_read: true, can_upload: true, can_write: true })
  await page.goto(`${url}/s/${rw.id}`)
  await row(page, 'a.txt')
  await select(page, 'a.txt')
  await page.click('#rename')
  await answerName(page, 'renamed.txt')
  await row(page, 'renamed.txt')
  await select(page, 'guest.txt')
  await page.click('#delete')
  await page.click('dialog[open] button[type=submit]')
  await row(page, 'guest.txt', 'detached')
  const names = ((await (await call('GET', '/api/files/ls', { path: '/docs/' })).json()) as { results: { name: string }[] }).results.map((e) => e.name).sort()
  t.same(names, ['made-by-guest', 'renamed.txt', 'sub'], 'renamed and deleted through the write share')
  t.same(failed, [], 'no page errors')
})

t.test('a file share shows its file; expired and removed links say so', { skip: noBrowser }, async (t) => {
  const { url, token } = await seeded(t)
  const one = await createShare(url, token, { path: '/docs/a.txt', can_read: true })
  const soon = await createShare(url, token, { path: '/docs/', can_read: true, expire: Date.now() + 1500 })
  const gone = await createShare(url, token, { path: '/docs/', can_read: true })
  await api(url, token)('DELETE', `/api/share/${gone.id}`)
  const { page, failed } = await launchBrowser(t, { failedRequests: false })
  await page.goto(`${url}/s/${one.id}`)
  await row(page, 'a.txt')
  await select(page, 'a.txt')
  t.equal((await downloaded(page, () => page.click('#download'))).bytes.toString(), 'alpha', 'the shared file downloads')

  await new Promise((r) => setTimeout(r, 1600))
  t.equal((await viaShare(url, soon.id)('GET', '/api/files/ls', { path: '/' })).status, 410, 'the API says expired')
  await page.goto(`${url}/s/${soon.id}`)
  await page.waitForSelector('#share-message')
  t.match(await page.textContent('#share-message h2'), /expired/, 'an expired link: a clear page')
  await page.goto(`${url}/s/${gone.id}`)
  await page.waitForSelector('#share-message')
  t.match(await page.textContent('#share-message'), /does not exist: it was removed/, 'a removed link: a clear page')
  await page.goto(`${url}/s/not-a-real-share-id`)
  await page.waitForSelector('#share-message')
  t.match(await page.textContent('#share-message h2'), /does not work/)
  t.same(failed, [], 'no page errors')
})

/**
 * @module test/front/admin-console-bits.test
 * The permission bits in the admin console, in a real headless Chromium (Debian's
 * `chromium`, driven by playwright-core): a user made with bits chosen in the form (and
 * the read-only shorthand checking can_read alone), its bits shown in its row, edited
 * with the checkboxes of its panel and saved; an S3 key made with fewer bits, edited,
 * given its user's bits again. Each change is read back from the admin API, as stored.
 * An error (the user removed meanwhile) is shown next to the form that failed.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'

const NONE = { can_read: false, can_create_file: false, can_create_directory: false, can_rename: false, can_move: false, can_upload: false, can_delete: false, can_share: false }
const ALL = { can_read: true, can_create_file: true, can_create_directory: true, can_rename: true, can_move: true, can_upload: true, can_delete: true, can_share: false }

/** The checkboxes under `scope`, as checked. */
const checked = (page: Page, scope: string) =>
  page.$$eval(`${scope} input[type=checkbox]`, (boxes) => Object.fromEntries(boxes.map((b) => [(b as HTMLInputElement).name, (b as HTMLInputElement).checked])))

t.test("a user's and an S3 key's bits, chosen and edited in the console, are what the API stores", { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const stored = async () => ((await (await a('GET', '/admin/api/users')).json()) as { results: { name: string; permissions: unknown }[] }).results.find((u) => u.name === 'hana')?.permissions
  const keys = async () => ((await (await a('GET', '/admin/api/users/hana/s3-keys')).json()) as { results: { access_key_id: string; permissions: unknown }[] }).results
  const { page, failed } = await launchBrowser(t)
  const flashed = (text: string) => page.waitForSelector(`#flash:not([hidden]):has-text(${JSON.stringify(text)})`)
  await page.goto(`${url}/admin`)
  await page.fill('#password', ADMIN_PASSWORD)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#app-view:not([hidden])')

  // The form: read-write by default; "read-only" checks can_read alone, and back.
  t.same(await checked(page, '#user-bits'), ALL, 'a new user: every bit but share, checked')
  t.equal(await page.isDisabled('#user-bits input[name=can_share]'), true, 'share cannot be granted')
  await page.check('#user-ro')
  t.same(await checked(page, '#user-bits'), { ...NONE, can_read: true }, 'read-only: can_read alone')
  await page.uncheck('#user-ro')
  t.same(await checked(page, '#user-bits'), ALL, 'and back')

  // A user made with bits chosen in the form.
  await page.fill('#user-name', 'hana')
  await page.fill('#user-password', 'hana password')
  await page.uncheck('#user-bits input[name=can_delete]')
  await page.uncheck('#user-bits input[name=can_rename]')
  t.equal(await page.isChecked('#user-ro'), false)
  await page.click('#user-form button[type=submit]')
  await page.waitForSelector('#users td:text("hana")')
  t.same(await stored(), { ...ALL, can_delete: false, can_rename: false }, 'made with the bits chosen')
  const row = '#users tr:has(td:text-is("hana"))'
  const shown = await page.textContent(`${row} .bits`)
  t.match(shown, /read/, `its row shows its bits (${shown})`)
  t.notMatch(shown, /delete|rename/, 'not those it lacks')

  // Edited in its panel, saved, read back from the API.
  await page.click(`${row} button:text("Keys & password")`)
  await page.waitForSelector('tr.detail .user-bits')
  t.same(await checked(page, 'tr.detail .user-bits'), { ...ALL, can_delete: false, can_rename: false }, 'the panel shows its bits')
  await page.uncheck('tr.detail .user-bits input[name=can_upload]')
  await page.check('tr.detail .user-bits input[name=can_delete]')
  await page.click('tr.detail .user-bits button:text("Save permissions")')
  await flashed('Permissions of "hana" saved.')
  const edited = { ...ALL, can_rename: false, can_upload: false }
  t.same(await stored(), edited, 'the bits saved are what the API stores')
  await page.waitForSelector(`${row} .bits:has-text("delete")`)
  t.notMatch(await page.textContent(`${row} .bits`), /upload/, 'the row shows the new bits')
  t.same(await checked(page, 'tr.detail .user-bits'), edited, 'and so does the panel, drawn again')

  // An S3 key made with fewer bits than its user's.
  await page.uncheck('tr.detail .new-s3-key-bits input[name=can_delete]')
  await page.click('tr.detail .s3-keys button:text("Create S3 key")')
  await page.waitForSelector('tr.detail .new-s3-key')
  const id = await page.inputValue('tr.detail .new-s3-key [name=access_key_id]')
  t.same((await keys()).map((k) => [k.access_key_id, k.permissions]), [[id, { ...edited, can_delete: false }]], 'the key is made with the bits chosen')
  const keyRow = `tr.detail .s3-keys tr:has(td:text-is("${id}"))`
  t.notMatch(await page.textContent(`${keyRow} .bits`), /delete/, 'its row shows what it may do')

  // Edited: read-only.
  await page.click(`${keyRow} button:text("Edit")`)
  await page.waitForSelector('tr.s3-key-detail .s3-key-bits')
  for (const [name] of Object.entries(ALL)) if (name !== 'can_read' && name !== 'can_share') await page.uncheck(`tr.s3-key-detail input[name=${name}]`)
  await page.click('tr.s3-key-detail button:text("Save key permissions")')
  await flashed(`Permissions of S3 key ${id} saved.`)
  t.same((await keys())[0]!.permissions, { ...NONE, can_read: true }, 'the key is read-only, as stored')
  await page.waitForSelector(`${keyRow} .bits:text("read-only")`)
  // Its user's bits again.
  await page.click('tr.s3-key-detail button:text("Use the user\'s permissions")')
  await flashed(`S3 key ${id} has its user's permissions.`)
  t.equal((await keys())[0]!.permissions, null, "the key has its user's bits again")
  await page.waitForSelector(`${keyRow}:has-text("(the user's)")`)

  const shot = join(t.testdirName, 'admin-console-bits.png')
  await page.screenshot({ path: shot, fullPage: true })
  if (process.env.FILEGATE_SCREENSHOT) writeFileSync(process.env.FILEGATE_SCREENSHOT.replace(/(\.png)?$/, '-bits.png'), readFileSync(shot))

  // The user removed meanwhile (another admin): saving says so, next to the form.
  t.equal((await a('DELETE', '/admin/api/users/hana')).status, 200)
  await page.check('tr.detail .user-bits input[name=can_upload]')
  await page.click('tr.detail .user-bits button:text("Save permissions")')
  await page.waitForSelector('tr.detail .user-bits .error:not([hidden])')
  t.match(await page.textContent('tr.detail .user-bits .error'), /no such gateway user/, 'the error is shown by the form')
  t.same(failed, [], 'no page errors or failed requests')
})

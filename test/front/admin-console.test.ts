/**
 * @module test/front/admin-console.test
 * The admin console in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core): log in, create an API key and read it from the page (shown
 * once), use it with a share made through the API, revoke it in the page, and see
 * the next request refused; add and remove a gateway user; revoke a share; log
 * out, after which the server refuses the page's token. A screenshot proves the
 * page renders. A gateway user's keys and password managed in the page, and the
 * user logging in with them at the gateway login. An S3 key made in the page (its secret
 * shown once), used by the AWS SDK, revoked in the page.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3'

import t from 'tap'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import type { LoginRequest, PublicKey } from '../../core/gateway.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { gate } from '../helpers/gateway.js'
import { sshKeygen } from '../helpers/ssh-keys.js'
import { sftpBatch } from '../gateways/sftp/clients.js'
import { ADMIN_PASSWORD, createShare, viaShare } from '../helpers/share.js'
import { s3Echo } from '../helpers/s3-echo.js'

t.test('log in, create a key, use it, revoke it in the page', { skip: noBrowser }, async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const token = await tmpSession(url)
  await api(url, token)('POST', '/api/files/cat', { path: '/docs/a.txt' }, { body: 'hello' })
  const share = await createShare(url, token, { path: '/docs', can_read: true })

  const { page, failed } = await launchBrowser(t)

  await page.goto(`${url}/admin`)
  await page.fill('#password', 'not the password')
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#login-error:not([hidden])')
  t.match(await page.textContent('#login-error'), /wrong admin password/, 'a wrong password is shown as such')

  await page.fill('#password', ADMIN_PASSWORD)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#app-view:not([hidden])')
  await page.waitForSelector('#status dd')
  t.match(await page.textContent('#status'), /Sessions issued/, 'status shown')
  await page.waitForSelector(`#shares td:text("${share.id}")`)

  await page.fill('#key-name', 'browser test')
  await page.fill('#key-origins', 'https://app.example.com')
  await page.click('#key-form button[type=submit]')
  await page.waitForSelector('#new-key:not([hidden])')
  const key = await page.inputValue('#new-key-value')
  t.match(key, /^fgk_[A-Za-z0-9_-]{43}$/, 'the new key is shown once')
  await page.waitForSelector('#keys td:text("browser test")')

  const v = viaShare(url, share.id, key)
  t.equal(await (await v('GET', '/api/files/cat', { path: '/a.txt' })).text(), 'hello', 'the key works with the share')

  const shot = join(t.testdirName, 'admin-console.png')
  await page.screenshot({ path: shot, fullPage: true })
  const png = readFileSync(shot)
  // To look at it: FILEGATE_SCREENSHOT=/tmp/console.png npx tap test/front/admin-console.test.ts
  if (process.env.FILEGATE_SCREENSHOT) writeFileSync(process.env.FILEGATE_SCREENSHOT, png)
  t.ok(png.byteLength > 1000, 'a non-empty screenshot')
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG')

  await page.click('#dismiss-key')
  t.equal(await page.isHidden('#new-key'), true, 'the key can be dismissed')
  await page.click('#keys tr:has-text("browser test") button:text("Revoke")')
  await page.waitForSelector('#keys td.empty')
  const refused = await v('GET', '/api/files/cat', { path: '/a.txt' })
  t.equal(refused.status, 401, 'the revoked key is refused')

  // Gateway users: add one, see it listed, remove it.
  await page.fill('#user-name', 'sftp-carol')
  await page.fill('#user-password', 'carol password')
  await page.fill('#user-root', '/home/carol')
  await page.check('#user-ro')
  await page.click('#user-form button[type=submit]')
  await page.waitForSelector('#users td:text("sftp-carol")')
  t.match(await page.textContent('#users'), /read-only/, 'the new user is listed, read-only')
  await page.click('#users tr:has-text("sftp-carol") button:text("Remove")')
  await page.waitForSelector('#users td.empty')

  // Shares: revoke the test's share in the page; the link stops working.
  await page.click(`#shares tr:has-text("${share.id}") button:text("Revoke")`)
  await page.waitForSelector('#shares td.empty')
  t.equal((await viaShare(url, share.id)('GET', '/api/files/ls', { path: '/' })).status, 404, 'the revoked share is gone')

  // Log out: the page returns to the login form and the server refuses its token from then on.
  const adminToken = await page.evaluate(() => sessionStorage.getItem('filegate-admin-token'))
  t.ok(adminToken, 'the page held an admin token')
  t.equal((await api(url, adminToken!)('GET', '/admin/api/status')).status, 200, 'which works before logging out')
  await page.click('#logout')
  await page.waitForSelector('#login-view:not([hidden])')
  t.equal(await page.isHidden('#app-view'), true, 'logged out: the console is hidden')
  t.equal(await page.evaluate(() => sessionStorage.getItem('filegate-admin-token')), null, 'the page forgot the token')
  t.equal((await api(url, adminToken!)('GET', '/admin/api/status')).status, 401, 'the server refuses the token after log-out')
  t.same(failed, [], 'no page errors or failed requests')
})

t.test("a gateway user's keys and password, managed in the page, are what its gateway logins accept", { skip: noBrowser }, async (t) => {
  const { url, ctx, login: gatewayLogin } = await gate(t)
  const login = (req: Partial<LoginRequest>) => gatewayLogin({ user: 'sftp-dana', ...req })
  const asKey = (pub: string): PublicKey => ({ algo: pub.split(' ')[0]!, data: Buffer.from(pub.split(' ')[1]!, 'base64') })
  const first = sshKeygen('ed25519', { comment: 'dana@laptop' })
  const second = sshKeygen('ecdsa', { comment: 'dana@phone' })
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/admin`)
  await page.fill('#password', ADMIN_PASSWORD)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#app-view:not([hidden])')

  // A key-only user, made in the form.
  await page.fill('#user-name', 'sftp-dana')
  await page.fill('#user-key', first.pub)
  await page.click('#user-form button[type=submit]')
  await page.waitForSelector('#users td:text("sftp-dana")')
  t.match(await page.textContent('#users tr:has-text("sftp-dana")'), /1 key/, 'listed as logging in with one key')
  t.equal(await ctx.login.keyAuthorized('sftp-dana', asKey(first.pub)), true, 'the gateway accepts that key')

  // A bad key is refused with the server's reason; then a second key is added, and the first removed.
  await page.click('#users tr:has-text("sftp-dana") button:text("Keys & password")')
  await page.waitForSelector('tr.detail .key-form')
  await page.fill('tr.detail .key-form input', 'ssh-rsa AAAAnot-a-key')
  await page.click('tr.detail .key-form button')
  // The flash may still show the message before ("user added"): wait for this one.
  await page.waitForSelector('#flash:not([hidden]):has-text("not an SSH public key")', { timeout: 10_000 }).catch(() => {})
  t.match(await page.textContent('#flash'), /not an SSH public key/, 'a bad key: the reason is shown')
  await page.fill('tr.detail .key-form input', second.pub)
  await page.click('tr.detail .key-form button')
  await page.waitForSelector(`tr.detail td:text("${second.fingerprint}")`)
  t.match(await page.textContent('tr.detail'), /dana@phone/, 'the new key, with its fingerprint and comment')
  await page.click(`tr.detail tr:has-text("${first.fingerprint}") button:text("Remove")`)
  await page.waitForSelector(`tr.detail td:text("${first.fingerprint}")`, { state: 'detached' })
  t.equal(await ctx.login.keyAuthorized('sftp-dana', asKey(first.pub)), false, 'the removed key is refused')
  t.equal((await login({ publicKey: asKey(second.pub) })).ok, true, 'the added key logs in')

  // A password set in the page logs in.
  await page.fill('tr.detail .password-form input', 'dana password')
  await page.click('tr.detail .password-form button')
  await page.waitForSelector('#users tr:has-text("sftp-dana") .tag:text("password")')
  t.equal((await login({ password: 'dana password' })).ok, true, 'the new password logs in')

  const shot = join(t.testdirName, 'admin-console-keys.png')
  await page.screenshot({ path: shot, fullPage: true })
  if (process.env.FILEGATE_SCREENSHOT) writeFileSync(process.env.FILEGATE_SCREENSHOT.replace(/(\.png)?$/, '-keys.png'), readFileSync(shot))
  t.same(failed, [], 'no page errors or failed requests')
})

t.test('a user created in the console page logs in with OpenSSH sftp on the SFTP gateway', { skip: noBrowser }, async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'filegate-console-sftp-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  writeFileSync(join(root, 'hello.txt'), 'hello from the gateway')
  const { app, url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD, sftp: { port: 0 }, connections: [{ label: 'disk', type: 'local', path: root }] })
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${url}/admin`)
  await page.fill('#password', ADMIN_PASSWORD)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#app-view:not([hidden])')
  await page.fill('#user-name', 'erin')
  await page.fill('#user-password', 'erin password 1')
  await page.selectOption('#user-connection', 'disk')
  await page.fill('#user-root', '/')
  await page.click('#user-form button[type=submit]')
  await page.waitForSelector('#users td:text("erin")')

  const port = app.gateways.find((g) => g.name === 'sftp')!.port!
  const local = mkdtempSync(join(tmpdir(), 'filegate-console-get-'))
  t.teardown(() => rmSync(local, { recursive: true, force: true }))
  const r = await sftpBatch(t, { port, user: 'erin', password: 'erin password 1' }, `ls -l\nget hello.txt ${join(local, 'got.txt')}\n`)
  t.equal(r.code, 0, `sftp -P ${port} erin@127.0.0.1 logs in and runs its batch: ${r.stderr}`)
  t.match(r.stdout, /hello\.txt/, 'ls shows the top of the user\'s root')
  t.equal(readFileSync(join(local, 'got.txt'), 'utf8'), 'hello from the gateway', 'and the file is fetched')
  const wrong = await sftpBatch(t, { port, user: 'erin', password: 'not her password' }, 'ls\n')
  t.not(wrong.code, 0, 'a wrong password is refused')
  t.same(failed, [], 'no page errors or failed requests')
})

t.test("a gateway user's S3 key made in the page signs requests of the AWS SDK; revoked in the page, it is refused", { skip: noBrowser }, async (t) => {
  const echo = await s3Echo(t)
  const { page, failed } = await launchBrowser(t)
  await page.goto(`${echo.gate.url}/admin`)
  await page.fill('#password', ADMIN_PASSWORD)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#app-view:not([hidden])')
  await page.fill('#user-name', 'erin')
  await page.fill('#user-password', 'erin password')
  await page.check('#user-ro')
  await page.click('#user-form button[type=submit]')
  await page.waitForSelector('#users td:text("erin")')

  await page.click('#users tr:has-text("erin") button:text("Keys & password")')
  await page.waitForSelector('tr.detail .s3-keys td:text("No S3 keys.")')
  await page.click('tr.detail .s3-keys button:text("Create S3 key")')
  await page.waitForSelector('tr.detail .new-s3-key')
  const id = await page.inputValue('tr.detail .new-s3-key [name=access_key_id]')
  const secret = await page.inputValue('tr.detail .new-s3-key [name=secret_access_key]')
  t.match(id, /^FG[A-Z0-9]{18}$/)
  t.match(secret, /^[A-Za-z0-9]{40}$/, 'the secret is shown')
  await page.waitForSelector(`tr.detail .s3-keys td:text("${id}")`)
  const shot = join(t.testdirName, 'admin-console-s3-keys.png')
  await page.screenshot({ path: shot, fullPage: true })
  if (process.env.FILEGATE_SCREENSHOT) writeFileSync(process.env.FILEGATE_SCREENSHOT.replace(/(\.png)?$/, '-s3-keys.png'), readFileSync(shot))

  const s3 = new S3Client({ endpoint: echo.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: id, secretAccessKey: secret }, maxAttempts: 1 })
  t.teardown(() => s3.destroy())
  const got = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))
  t.match(JSON.parse(await got.Body!.transformToString()), { user: 'erin', readOnly: true }, "the key acts as its user, read-only as the user is")

  await page.click('tr.detail .new-s3-key button:text("Done")')
  await page.waitForSelector('tr.detail .new-s3-key', { state: 'detached' })
  await page.click('#refresh')
  await page.waitForSelector(`tr.detail .s3-keys td:text("${id}")`)
  t.notOk((await page.content()).includes(secret), 'once dismissed, the secret is nowhere in the page')

  await page.click(`tr.detail .s3-keys tr:has-text("${id}") button:text("Revoke")`)
  await page.waitForSelector(`tr.detail .s3-keys td:text("${id}")`, { state: 'detached' })
  const refused = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' })).then(
    () => 'no error',
    (err: Error) => err.name,
  )
  t.equal(refused, 'InvalidAccessKeyId', 'the revoked key is refused at the next request')
  t.same(failed, [], 'no page errors or failed requests')
})

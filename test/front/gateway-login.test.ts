/**
 * @module test/front/gateway-login.test
 * Gateway logins (docs/gateways.md, "Gateway users and logins") as a gateway gets
 * them: a real filegate started with a gateway that keeps its GatewayContext, users
 * made through the admin API, keys made by ssh-keygen, and the file system views the
 * logins open over the worker pool. Passwords, keys, the shared answer and delay of
 * every failure, the throttle across doors, read-only users, roots that cannot be
 * left, missing roots, tmp users, and pass-through logins against a real OpenSSH sshd.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Door, LoginResult, PublicKey } from '../../core/gateway.js'
import { resolveProtocolPath } from '../../core/paths.js'
import type { View } from '../../core/view.js'
import { validateConfig } from '../../core/config.js'
import { GATEWAY_LOGIN_FAILURES } from '../../front/gateway-login.js'
import { api, tmpSession } from '../helpers/filegate.js'
import { gate } from '../helpers/gateway.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { sshKeygen } from '../helpers/ssh-keys.js'
import { startS3rver } from '../servers/s3rver.js'
import { startSshd } from '../servers/sshd.js'
import { FULL_ACCESS, READ_ONLY } from '../../core/permissions.js'

const ctxOf = { requestId: 'test', signal: new AbortController().signal }

function opened(t: Test, r: LoginResult, what: string): View {
  if (!r.ok) throw new Error(`${what}: ${r.reason} (${r.message})`)
  t.teardown(() => r.fs.close())
  return r.fs
}

const names = async (fs: View, dir: string) => (await fs.list(ctxOf, dir)).entries.map((e) => e.name).sort()

function publicKey(pubLine: string): PublicKey {
  const [algo, b64] = pubLine.split(' ') as [string, string]
  return { algo, data: Buffer.from(b64, 'base64') }
}

t.test('a password login: right → a view of the storage; wrong or unknown user → the same refusal, delayed, logged without the password', async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  const fs = opened(t, await g.login({ user: 'bob', password: 'bob password' }), 'right password')
  t.same(fs.permissions, { ...FULL_ACCESS, can_share: false })
  await fs.mkdir(ctxOf, '/docs')
  const spaces = readdirSync(join(g.dataDir, 'gateway-tmp'))
  t.match(spaces, [/^bob\.\d+$/], "a tmp user's space is <data_dir>/gateway-tmp/<name>.<created>")
  t.ok(existsSync(join(g.dataDir, 'gateway-tmp', spaces[0]!, 'docs')), 'the view writes there')

  const answers: LoginResult[] = []
  for (const req of [
    { user: 'bob', password: 'Xyzzy-guess-1' },
    { user: 'nobody', password: 'bob password' },
    { user: 'bob' },
    { user: 'bob', password: 'x'.repeat(5000) },
    { user: 'nobody@nowhere', password: 'bob password' },
  ]) {
    const t0 = Date.now()
    const r = await g.login(req)
    t.ok(Date.now() - t0 >= 250, `${JSON.stringify(req).slice(0, 60)}: the refusal waits`)
    answers.push(r)
  }
  t.same(new Set(answers.map((a) => JSON.stringify(a))).size, 1, 'every failure gets the very same answer')
  t.match(answers[0], { ok: false, reason: 'refused' })
  const refusals = g.logs.filter((l) => l.msg === 'gateway login refused')
  t.equal(refusals.length, 5, 'each failure is logged')
  t.match(refusals[0], { level: 'info', fields: { user: 'bob', address: '192.0.2.1', door: 'sftp' } }, 'with the user name and the address')
  t.notMatch(JSON.stringify(g.logs), /Xyzzy-guess-1|bob password/, 'never a password')

  // The HTTP API's tmp space of the same name is another folder: it takes no password.
  const http = api(g.url, await tmpSession(g.url, 'bob'))
  t.same(((await (await http('GET', '/api/files/ls', { path: '/' })).json()) as { results: unknown[] }).results, [], "an HTTP tmp session 'bob' does not see the gateway user's files")
})

t.test(`after ${GATEWAY_LOGIN_FAILURES} failures from one address, at any door, its logins are throttled; other addresses and the HTTP API are not`, async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  const doors: Door[] = ['sftp', 's3', 'mcp']
  // In parallel: every attempt is counted when it starts.
  const failures = await Promise.all(
    Array.from({ length: GATEWAY_LOGIN_FAILURES }, (_, i) => g.login({ door: doors[i % 3]!, user: i % 2 ? 'bob' : 'nobody', password: 'guess' })),
  )
  t.ok(failures.every((r) => !r.ok && r.reason === 'refused'), 'the failures themselves are refusals')
  const t0 = Date.now()
  const locked = await g.login({ door: 's3', user: 'bob', password: 'bob password' })
  t.match(locked, { ok: false, reason: 'throttled', message: /too many failed gateway logins/ }, 'the right password from that address, at another door: throttled')
  t.ok(Date.now() - t0 >= 250, 'and it waits too')
  opened(t, await g.login({ user: 'bob', password: 'bob password', address: '198.51.100.7' }), 'another address logs in')
  const res = await fetch(`${g.url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: ADMIN_PASSWORD }) })
  t.equal(res.status, 200, 'the admin login is counted apart')
})

t.test('many sessions opened at once from one address all log in: logins in flight are not failures', async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'tmp' })
  // rclone opens a dozen connections together; a backup host may open far more.
  const results = await Promise.all(Array.from({ length: 3 * GATEWAY_LOGIN_FAILURES }, () => g.login({ user: 'bob', password: 'bob password' })))
  t.equal(results.filter((r) => r.ok).length, results.length, `all ${results.length} logins succeed`)
  for (const r of results) if (r.ok) r.fs.close()
  // Guesses in parallel still cannot outrun the count.
  const guesses = await Promise.all(Array.from({ length: 3 * GATEWAY_LOGIN_FAILURES }, () => g.login({ user: 'bob', password: 'guess' })))
  t.equal(guesses.filter((r) => !r.ok && r.reason === 'refused').length, GATEWAY_LOGIN_FAILURES, `only ${GATEWAY_LOGIN_FAILURES} parallel guesses are checked; the rest are throttled`)
})

t.test('a success gives no guesses back: an account of its own does not reset the count of an address', async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'mallory', password: 'mallory password', connection: 'tmp' })
  await Promise.all(Array.from({ length: GATEWAY_LOGIN_FAILURES - 1 }, () => g.login({ user: 'victim', password: 'guess' })))
  opened(t, await g.login({ user: 'mallory', password: 'mallory password' }), 'its own account')
  t.match(await g.login({ user: 'victim', password: 'guess' }), { reason: 'refused' }, 'the last failure allowed')
  t.match(await g.login({ user: 'victim', password: 'guess' }), { reason: 'throttled' }, 'then throttled')
})

t.test('repeated logins: a password checked a moment ago, or being checked, is not checked again, unless the user changed since; a wrong one is never taken from there', async (t) => {
  const g = await gate(t)
  const admin = api(g.url, await adminToken(g.url))
  await g.addUser({ name: 'erin', password: 'first password', connection: 'tmp' })
  await g.addUser({ name: 'frank', password: 'frank password', connection: 'tmp' })
  const logins = () => g.logs.filter((l) => l.msg === 'gateway login').map((l) => `${String(l.fields.user)}:${String(l.fields.password)}`)

  opened(t, await g.login({ user: 'erin', password: 'first password' }), 'first login')
  opened(t, await g.login({ user: 'erin', password: 'first password' }), 'again')
  t.same(logins(), ['erin:checked', 'erin:recent'], 'the second login takes the recent check')

  for (const password of ['first passwore', 'first password ', 'FIRST PASSWORD', 'frank password', '']) {
    t.match(await g.login({ user: 'erin', password }), { ok: false, reason: 'refused' }, `${JSON.stringify(password)}: refused`)
  }
  t.match(await g.login({ user: 'frank', password: 'first password' }), { ok: false, reason: 'refused' }, "erin's password is not frank's")
  t.equal(logins().length, 2, 'no wrong password got in')

  const patched = await admin('PATCH', '/admin/api/users/erin', {}, { body: JSON.stringify({ password: 'second password' }) })
  t.equal(patched.status, 200, 'the admin changes the password')
  t.match(await g.login({ user: 'erin', password: 'first password' }), { ok: false, reason: 'refused' }, 'the old password is refused at once')
  opened(t, await g.login({ user: 'erin', password: 'second password' }), 'the new one')
  opened(t, await g.login({ user: 'erin', password: 'second password' }), 'the new one again')
  t.same(logins().slice(2), ['erin:checked', 'erin:recent'], 'the new password is checked, then remembered')

  t.equal((await admin('DELETE', '/admin/api/users/erin')).status, 200, 'the admin removes the user')
  t.match(await g.login({ user: 'erin', password: 'second password' }), { ok: false, reason: 'refused' }, 'a removed user is refused')
  await g.addUser({ name: 'erin', password: 'second password', connection: 'tmp' })
  opened(t, await g.login({ user: 'erin', password: 'second password' }), 'a new user of that name')
  t.same(logins().slice(4), ['erin:checked'], "the new user's password is checked anew")

  // Sessions opened together (from another address: this one has used most of its failures): one check, the others wait for it.
  const together = await Promise.all(Array.from({ length: 4 }, () => g.login({ user: 'frank', password: 'frank password', address: '192.0.2.2' })))
  together.forEach((r, i) => opened(t, r, `session ${i} opened together`))
  const hows = logins().slice(5)
  t.equal(hows.filter((h) => h === 'frank:checked').length, 1, 'one scrypt check for four logins at once')
  t.ok(hows.every((h) => ['frank:checked', 'frank:joined', 'frank:recent'].includes(h)), `the others wait for it (or come after it): ${hows.join(', ')}`)
  const wrong = await Promise.all(Array.from({ length: 2 }, () => g.login({ user: 'frank', password: 'frank passwort', address: '192.0.2.3' })))
  t.same(wrong.map((r) => r.ok), [false, false], 'a wrong password sent twice at once: both refused')
  t.equal(logins().length, 9, 'and neither got in')
})

t.test('public keys: keyAuthorized asks without counting; a verified key logs in; another key is refused', async (t) => {
  const g = await gate(t)
  const mine = sshKeygen('ed25519')
  const other = sshKeygen('ed25519')
  const rsa = sshKeygen('rsa', { bits: 2048 })
  await g.addUser({ name: 'carol', connection: 'tmp', authorized_keys: [mine.pub, rsa.pub] })
  await g.addUser({ name: 'dave', password: 'dave password', connection: 'tmp' })
  for (let i = 0; i < GATEWAY_LOGIN_FAILURES + 2; i++) t.equal(await g.ctx.login.keyAuthorized('carol', publicKey(other.pub)), false)
  t.equal(await g.ctx.login.keyAuthorized('carol', publicKey(mine.pub)), true, 'an authorized key (after many questions: none counted)')
  t.equal(await g.ctx.login.keyAuthorized('carol', { ...publicKey(rsa.pub), algo: 'rsa-sha2-512' }), true, 'an RSA key, whichever signature algorithm')
  t.equal(await g.ctx.login.keyAuthorized('dave', publicKey(mine.pub)), false, "another user's")
  t.equal(await g.ctx.login.keyAuthorized('nobody', publicKey(mine.pub)), false, 'an unknown user')
  opened(t, await g.login({ user: 'carol', publicKey: publicKey(mine.pub) }), 'a key login')
  t.match(await g.login({ user: 'carol', publicKey: publicKey(other.pub) }), { ok: false, reason: 'refused' }, 'a key that is not hers')
  t.match(await g.login({ user: 'carol', password: '' }), { ok: false, reason: 'refused' }, 'a key-only user has no password')
  t.match(await g.login({ user: 'dave', publicKey: publicKey(mine.pub) }), { ok: false, reason: 'refused' }, 'a user without keys')
})

t.test("a user's root: the view starts there, and nothing above it can be reached; read-only users cannot write", async (t) => {
  const g = await gate(t, (disk) => ({ connections: [{ label: 'disk', type: 'local', path: disk, password: 'a connection password' }] }), {
    'secret.txt': 'not for bob',
    home: { bob: { 'mine.txt': "bob's" }, eve: { 'hers.txt': "eve's" } },
  })
  const disk = g.disk
  await g.addUser({ name: 'bob', password: 'bob password', connection: 'disk', root: '/home/bob' })
  await g.addUser({ name: 'reader', password: 'reader password', connection: 'disk', root: '/home', read_only: true })
  const bob = opened(t, await g.login({ user: 'bob', password: 'bob password' }), 'bob')
  t.same(await names(bob, '/'), ['mine.txt'], 'the root of the view is /home/bob')
  for (const raw of ['../../secret.txt', '/../secret.txt', '../eve/hers.txt', '/home/bob/mine.txt']) {
    const p = resolveProtocolPath('/', raw)
    await t.rejects(bob.stat(ctxOf, p), { code: 'ENOENT' }, `${raw} → ${p}: not there`)
  }
  t.equal(resolveProtocolPath('/', '../../mine.txt'), '/mine.txt', '.. at the root stays at the root')
  const h = await bob.open(ctxOf, resolveProtocolPath('/', '../../mine.txt'), { read: true, write: false, append: false, create: false, truncate: false, exclusive: false })
  t.equal(Buffer.from(await h.read(0, 100)).toString(), "bob's")
  await h.close()

  const reader = opened(t, await g.login({ user: 'reader', password: 'reader password' }), 'reader')
  t.same(reader.permissions, READ_ONLY, 'a read-only view')
  t.same(await names(reader, '/'), ['bob', 'eve'])
  await t.rejects(reader.mkdir(ctxOf, '/new'), { code: 'EACCES' }, 'mkdir refused')
  t.notOk(existsSync(join(disk, 'home', 'new')), 'and nothing made')
  await bob.mkdir(ctxOf, '/new')
  t.ok(existsSync(join(disk, 'home', 'bob', 'new')), 'a read-write user writes, inside its root')
})

t.test('a user whose root is missing is refused as unavailable, and the admin is told which user and folder', async (t) => {
  const g = await gate(t, (disk) => ({ connections: [{ label: 'disk', type: 'local', path: disk, public: true }] }), { home: {} })
  const disk = g.disk
  await g.addUser({ name: 'fred', password: 'fred password', connection: 'disk', root: '/home/fred' })
  t.match(await g.login({ user: 'fred', password: 'fred password' }), { ok: false, reason: 'unavailable' })
  t.match(
    g.logs.find((l) => l.level === 'warn'),
    { msg: /folder of this login does not exist/, fields: { user: 'fred', folder: join(disk, 'home', 'fred') } },
  )
  t.notOk(existsSync(join(disk, 'home', 'fred')), 'nothing is created')
  mkdirSync(join(disk, 'home', 'fred'))
  opened(t, await g.login({ user: 'fred', password: 'fred password' }), 'once the folder exists')
})

t.test("removing a tmp user removes its space: a new user of that name starts empty", async (t) => {
  const g = await gate(t)
  await g.addUser({ name: 'gina', password: 'gina password', connection: 'tmp' })
  await opened(t, await g.login({ user: 'gina', password: 'gina password' }), 'gina').mkdir(ctxOf, '/old')
  const admin = api(g.url, await adminToken(g.url))
  t.equal((await admin('DELETE', '/admin/api/users/gina')).status, 200)
  t.same(readdirSync(join(g.dataDir, 'gateway-tmp')), [], 'the space is gone')
  t.match(await g.login({ user: 'gina', password: 'gina password' }), { ok: false, reason: 'refused' }, 'the user is gone')
  await g.addUser({ name: 'gina', password: 'gina password', connection: 'tmp' })
  t.same(await names(opened(t, await g.login({ user: 'gina', password: 'gina password' }), 'new gina'), '/'), [])
})

t.test('pass-through: <user>@<label> logs in with the user\'s own account on a real sshd', async (t) => {
  const sshd = await startSshd(t)
  writeFileSync(join(sshd.root, 'on-the-nas.txt'), 'hello')
  const server = { type: 'sftp', hostname: '127.0.0.1', port: sshd.port, hostkey: sshd.hostkeyFingerprint }
  const g = await gate(t, () => ({
    connections: [
      { label: 'nas', ...server },
      { label: 'closed', ...server, gateway_passthrough: false },
      { label: 'fixed', ...server, username: sshd.username, password: sshd.password },
    ],
  }))
  const fs = opened(t, await g.login({ user: `${sshd.username}@nas`, password: sshd.password }), 'the right password')
  t.ok((await names(fs, '/')).includes('on-the-nas.txt'), "the view is the user's own folder on the server")
  t.same(fs.permissions, { ...FULL_ACCESS, can_share: false })

  const wrong = await g.login({ user: `${sshd.username}@nas`, password: 'not the password' })
  t.match(wrong, { ok: false, reason: 'refused' }, 'a wrong password is refused')
  const unknown = await g.login({ user: 'bob', password: 'whatever' })
  t.same(wrong, unknown, 'with the same answer as any other failure')
  for (const user of [`${sshd.username}@closed`, `${sshd.username}@fixed`, `${sshd.username}@nowhere`]) {
    t.same(await g.login({ user, password: sshd.password }), unknown, `${user}: no pass-through there`)
  }
  t.same(await g.login({ user: `${sshd.username}@nas`, publicKey: publicKey(sshKeygen('ed25519').pub) }), unknown, 'keys are for gateway users only')
  // 6 failures so far; the rest of the allowance, then the right password is throttled.
  await Promise.all(Array.from({ length: GATEWAY_LOGIN_FAILURES - 6 }, () => g.login({ user: `${sshd.username}@nas`, password: 'nope' })))
  t.match(await g.login({ user: `${sshd.username}@nas`, password: sshd.password }), { ok: false, reason: 'throttled' }, 'wrong backend passwords count too')

  await sshd.stop()
  t.match(await g.login({ user: `${sshd.username}@nas`, password: sshd.password, address: '203.0.113.9' }), { ok: false, reason: 'unavailable' }, 'the server down: unavailable')
})

t.test('"gateway_passthrough" in the configuration: a boolean, and true only where users bring their credentials', async (t) => {
  const nas = { label: 'nas', type: 'sftp', hostname: '127.0.0.1' }
  t.doesNotThrow(() => validateConfig({ connections: [{ ...nas, gateway_passthrough: true }] }))
  t.doesNotThrow(() => validateConfig({ connections: [{ ...nas, gateway_passthrough: false, username: 'u', password: 'p' }] }))
  t.throws(() => validateConfig({ connections: [{ ...nas, gateway_passthrough: 'yes' }] }), { name: 'ConfigError', message: /"gateway_passthrough" must be true or false/ })
  t.throws(() => validateConfig({ connections: [{ ...nas, username: 'shared', gateway_passthrough: true }] }), { name: 'ConfigError', message: /leaves the credentials to its users.*username, password, private_key/ })
  t.throws(() => validateConfig({ connections: [{ label: 'd', type: 'local', path: '/srv', public: true, gateway_passthrough: true }] }), { name: 'ConfigError', message: /needs an sftp, ftp, smb or s3 connection/ })
})

t.test('pass-through on s3: <access key id>@<label>, the secret access key as the password', async (t) => {
  const s3 = await startS3rver(t)
  const bucket = await s3.bucket()
  const g = await gate(t, () => ({ connections: [{ label: 'store', type: 's3', endpoint: s3.endpoint, region: 'us-east-1', path_style: true, path: bucket }] }))
  const fs = opened(t, await g.login({ door: 's3', user: `${s3.accessKeyId}@store`, password: s3.secretAccessKey }), 'the right secret')
  await fs.mkdir(ctxOf, '/made-through-the-gateway')
  t.same(await names(fs, '/'), ['made-through-the-gateway'], 'the view is the bucket')
  t.match(await g.login({ door: 's3', user: `${s3.accessKeyId}@store`, password: 'not the secret' }), { ok: false, reason: 'refused' }, 'a wrong secret is refused')
  t.match(await g.login({ door: 's3', user: 'NOSUCHKEY@store', password: s3.secretAccessKey }), { ok: false, reason: 'refused' }, 'an unknown key id is refused')
})

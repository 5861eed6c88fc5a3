/**
 * @module test/front/gateway-login-signature.test
 * Signature logins (S3's; front/gateway-login.ts with front/s3-keys.ts and
 * gateways/connection/shared-views.ts): the key's secret handed to `verify`, unknown keys and wrong
 * signatures refused alike after the failure delay, a removed user's keys gone; and the
 * user's view shared between requests without one request's end cutting another's
 * transfer: closing a login's view aborts the files opened through it, and only those.
 */
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { OpenFlags } from '../../core/view.js'
import { api } from '../helpers/filegate.js'
import { gate } from '../helpers/gateway.js'
import { adminToken } from '../helpers/share.js'

const WRITE: OpenFlags = { read: false, write: true, append: false, create: true, truncate: true, exclusive: false }
const ctx = () => ({ requestId: 'r', signal: new AbortController().signal })

t.test('signature logins: the secret to verify with, refusals alike, a lease per request on a shared view', async (t) => {
  const g = await gate(t, (disk) => ({ connections: [{ label: 'disk', type: 'local', path: disk, public: true }] }))
  await g.addUser({ name: 'sam', connection: 'disk', password: 'sam password' })
  const admin = api(g.url, await adminToken(g.url))
  const key = ((await (await admin('POST', '/admin/api/users/sam/s3-keys')).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const seen: string[] = []
  const sign = (user: string, ok: (secret: string) => boolean) =>
    g.login({ door: 's3', user, signature: { verify: (s) => (seen.push(s), ok(s)) } })

  const a = await sign(key.access_key_id, (s) => s === key.secret_access_key)
  t.ok(a.ok, 'the right secret')
  t.same(seen, [key.secret_access_key], 'verify got the key secret, once')
  const started = Date.now()
  t.match(await sign(key.access_key_id, () => false), { ok: false, reason: 'refused' }, 'a signature the secret did not make')
  t.ok(Date.now() - started >= 290, 'after the failure delay')
  seen.length = 0
  t.match(await sign('FGAAAAAAAAAAAAAAAAAA', () => true), { ok: false, reason: 'refused' }, 'an unknown key')
  t.match(await sign('not a key id', () => true), { ok: false, reason: 'refused' }, 'a malformed key id')
  t.same(seen, [], 'verify never called without a key')

  // Two requests at once: each gets its own view of the user's shared one.
  const b = await sign(key.access_key_id, (s) => s === key.secret_access_key)
  if (!a.ok || !b.ok) throw new Error('logins failed')
  t.not(a.fs, b.fs, 'each login its own view')
  const h = await a.fs.open(ctx(), '/kept.txt', WRITE)
  await h.write(0, Buffer.from('written by request a'))
  b.fs.close() // request b ends while a is still writing
  await h.close()
  t.equal(readFileSync(join(g.disk, 'kept.txt'), 'utf8'), 'written by request a', "another request's end does not cut this one's file")

  const h2 = await a.fs.open(ctx(), '/dropped.txt', WRITE)
  await h2.write(0, Buffer.from('never committed'))
  a.fs.close() // request a ends (its client went away) before its file was closed
  await t.rejects(h2.close(), { code: 'ECANCELED' }, "a request's end aborts the files it opened")
  t.notOk(existsSync(join(g.disk, 'dropped.txt')), 'nothing written')
  await t.rejects(a.fs.open(ctx(), '/late.txt', WRITE), { code: 'ECANCELED' }, 'a closed view opens nothing')

  const c = await sign(key.access_key_id, (s) => s === key.secret_access_key)
  t.ok(c.ok && (await c.fs.stat(ctx(), '/kept.txt')).size === 20, 'the next request sees the file')
  if (c.ok) c.fs.close()

  t.equal((await admin('DELETE', '/admin/api/users/sam')).status, 200)
  t.match(await sign(key.access_key_id, () => true), { ok: false, reason: 'refused' }, "a removed user's key")
  t.ok(g.logs.some((l) => l.msg === 'gateway login refused' && l.fields.why === 'wrong signature'), 'the admin sees why in the log')
})

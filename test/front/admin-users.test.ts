/**
 * @module test/front/admin-users.test
 * Gateway users' credentials in the admin API (docs/api.md, "Admin API"): authorized
 * public keys made by OpenSSH's ssh-keygen (added at creation or later, listed by
 * fingerprint, removed), keys refused with a reason (not a key, a private key, DSA,
 * short RSA), duplicates, key-only users, password changes, and a user left with no
 * way to log in refused; the permission bits (given, the read_only shorthand, the
 * default) and malformed bits refused.
 */
import t from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, expectError } from '../helpers/share.js'
import { sshKeygen } from '../helpers/ssh-keys.js'

interface UserView {
  name: string
  has_password: boolean
  keys: { fingerprint: string; type: string; comment: string; created: number }[]
}

t.test('authorized keys: add at creation and later, list by fingerprint, remove', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const ed = sshKeygen('ed25519', { comment: 'carol@laptop' })
  const ec = sshKeygen('ecdsa')
  const rsa = sshKeygen('rsa', { bits: 3072 })

  const res = await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'carol', connection: 'tmp', authorized_keys: [ed.pub] }) })
  t.equal(res.status, 200, 'a key-only user')
  const carol = ((await res.json()) as { result: UserView }).result
  t.match(carol, { name: 'carol', has_password: false, keys: [{ fingerprint: ed.fingerprint, type: 'ssh-ed25519', comment: 'carol@laptop' }] }, 'the fingerprint is the one ssh-keygen prints')

  const addKey = (name: string, key: unknown) => a('POST', `/admin/api/users/${name}/keys`, {}, { body: JSON.stringify({ key }) })
  for (const k of [ec, rsa]) {
    const r = await addKey('carol', k.pub)
    t.equal(r.status, 200)
    t.match(((await r.json()) as { result: unknown }).result, { fingerprint: k.fingerprint })
  }
  await expectError(t, await addKey('carol', `  ${ed.pub.replace('carol@laptop', 'another comment')}\n`), 409, 'CONFLICT', 'the same key again')
  await expectError(t, await addKey('nobody', ed.pub), 404, 'NOT_FOUND', 'a key for an unknown user')

  const listed = await (await a('GET', '/admin/api/users')).text()
  const users = (JSON.parse(listed) as { results: UserView[] }).results
  t.same(
    users[0]!.keys.map((k) => [k.type, k.fingerprint]),
    [
      ['ssh-ed25519', ed.fingerprint],
      ['ecdsa-sha2-nistp256', ec.fingerprint],
      ['ssh-rsa', rsa.fingerprint],
    ],
    'listed oldest first',
  )
  t.notOk(listed.includes(ed.pub.split(' ')[1]!), 'the keys themselves are not listed')

  const del = (name: string, fp: string) => a('DELETE', `/admin/api/users/${name}/keys/${encodeURIComponent(fp)}`)
  t.equal((await del('carol', ec.fingerprint)).status, 200, 'removed by its fingerprint')
  await expectError(t, await del('carol', ec.fingerprint), 404, 'NOT_FOUND', 'removed twice')
  t.equal((await del('carol', rsa.fingerprint)).status, 200)
  await expectError(t, await del('carol', ed.fingerprint), 409, 'CONFLICT', 'the last key of a user without a password')
  t.same(((await (await a('GET', '/admin/api/users')).json()) as { results: UserView[] }).results[0]!.keys.map((k) => k.fingerprint), [ed.fingerprint])

  // A password makes the last key removable; removing the password needs a key.
  const patch = (name: string, body: unknown) => a('PATCH', `/admin/api/users/${name}`, {}, { body: JSON.stringify(body) })
  const p = await patch('carol', { password: 'carol password' })
  t.equal(p.status, 200)
  t.match(((await p.json()) as { result: unknown }).result, { has_password: true })
  t.equal((await del('carol', ed.fingerprint)).status, 200, 'the last key, now that there is a password')
  await expectError(t, await patch('carol', { password: null }), 409, 'CONFLICT', 'removing the only credential')
  await expectError(t, await patch('carol', { password: 'short' }), 400, 'INVALID_INPUT', 'a short password')
  await expectError(t, await patch('carol', { root: '/elsewhere' }), 400, 'INVALID_INPUT', 'another field')
  await expectError(t, await patch('nobody', { password: 'long enough' }), 404, 'NOT_FOUND', 'an unknown user')
})

t.test('keys that are refused, with the reason', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const add = (body: Record<string, unknown>) => a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'dave', connection: 'tmp', ...body }) })
  const ed = sshKeygen('ed25519')
  const cases: [string, unknown, RegExp][] = [
    ['not a key', 'hello world', /not an SSH public key/],
    ['a broken key', ed.pub.slice(0, 40), /not an SSH public key|Malformed/],
    ['a private key', ed.priv, /private key/],
    ['two keys in one string', `${ed.pub}\n${sshKeygen('ed25519').pub}`, /one key per line/],
    ['a short RSA key', sshKeygen('rsa', { bits: 1024 }).pub, /1024 bits: at least 2048/],
    ['not a string', 42, /public key line/],
  ]
  // OpenSSH 9.8 and later may be built without DSA: then there is no DSA key to refuse.
  const dsa = (() => {
    try {
      return sshKeygen('dsa')
    } catch {
      return null
    }
  })()
  if (dsa) cases.push(['a DSA key', dsa.pub, /DSA keys are refused/])
  else t.comment('this ssh-keygen makes no DSA keys: that case is not checked here')
  for (const [what, key, why] of cases) {
    const res = await add({ authorized_keys: [key] })
    const body = (await res.json()) as { code: string; message: string }
    t.equal(res.status, 400, `${what}: 400`)
    t.equal(body.code, 'INVALID_INPUT', `${what}: INVALID_INPUT`)
    t.match(body.message, why, `${what}: says why (${body.message})`)
  }
  await expectError(t, await add({}), 400, 'INVALID_INPUT', 'neither a password nor a key')
  await expectError(t, await add({ authorized_keys: [ed.pub, ed.pub] }), 400, 'INVALID_INPUT', 'the same key twice')
  await expectError(t, await add({ name: '..', password: 'long enough' }), 400, 'INVALID_INPUT', 'a name of dots only')
  t.same(((await (await a('GET', '/admin/api/users')).json()) as { results: unknown[] }).results, [], 'nothing was added')
})

t.test('a connection that leaves the credentials to its users cannot hold gateway users', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD, connections: [{ label: 'nas', type: 'sftp', hostname: '127.0.0.1', port: 22 }] })
  const a = api(url, await adminToken(url))
  const res = await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'erin', password: 'long enough', connection: 'nas' }) })
  t.equal(res.status, 400)
  t.match(((await res.json()) as { message: string }).message, /does not fix everything a login needs.*<user>@nas/, 'says so, and how its users log in instead')
})

t.test('permission bits: given, shorthand, default, listed; malformed bits refused', async (t) => {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const add = (body: Record<string, unknown>) => a('POST', '/admin/api/users', {}, { body: JSON.stringify({ connection: 'tmp', password: 'a long password', ...body }) })
  const none = { can_read: false, can_create_file: false, can_create_directory: false, can_rename: false, can_move: false, can_upload: false, can_delete: false, can_share: false }
  const made = async (body: Record<string, unknown>) => {
    const r = await add(body)
    t.equal(r.status, 200, `${JSON.stringify(body)}: made`)
    return ((await r.json()) as { result: { permissions: unknown; read_only: boolean } }).result
  }
  t.match(await made({ name: 'drop', permissions: { can_upload: true, can_create_file: true } }), { permissions: { ...none, can_upload: true, can_create_file: true }, read_only: false }, 'upload-only: a bit left out is not granted')
  t.match(await made({ name: 'ro', read_only: true }), { permissions: { ...none, can_read: true }, read_only: true }, 'read_only: the shorthand for can_read only')
  const all = { can_read: true, can_create_file: true, can_create_directory: true, can_rename: true, can_move: true, can_upload: true, can_delete: true, can_share: false }
  t.match(await made({ name: 'rw' }), { permissions: all, read_only: false }, 'neither: everything but share links')
  const listed = ((await (await a('GET', '/admin/api/users')).json()) as { results: { name: string; permissions: unknown }[] }).results
  t.same(listed.find((u) => u.name === 'drop')!.permissions, { ...none, can_upload: true, can_create_file: true }, 'listed as stored')
  await expectError(t, await add({ name: 'x1', permissions: { can_fly: true } }), 400, 'INVALID_INPUT', 'an unknown bit')
  await expectError(t, await add({ name: 'x2', permissions: { can_read: 'yes' } }), 400, 'INVALID_INPUT', 'a bit that is not true or false')
  await expectError(t, await add({ name: 'x3', permissions: { can_share: true } }), 400, 'INVALID_INPUT', 'can_share for a gateway user')
  await expectError(t, await add({ name: 'x4', permissions: { can_read: true }, read_only: true }), 400, 'INVALID_INPUT', 'both the bits and the shorthand')
  await expectError(t, await add({ name: 'x5', permissions: [] }), 400, 'INVALID_INPUT', 'not an object')
})

/**
 * @module test/front/admin-permissions.test
 * Changing the permission bits of gateway users and S3 keys through the admin API
 * (docs/api.md, "Admin API"; docs/gateways.md, "Permissions"): PATCH changes only the
 * bits it names (or all eight by `read_only`), answers as GET lists; bad input is 400
 * naming the field, and nothing changes. A gateway user's HTTP session gets the new
 * bits at its next request.
 */
import t, { type Test } from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, expectError } from '../helpers/share.js'

const NONE = { can_read: false, can_create_file: false, can_create_directory: false, can_rename: false, can_move: false, can_upload: false, can_delete: false, can_share: false }
const ALL = { can_read: true, can_create_file: true, can_create_directory: true, can_rename: true, can_move: true, can_upload: true, can_delete: true, can_share: false }

interface UserView {
  name: string
  permissions: Record<string, boolean>
  read_only: boolean
  has_password: boolean
}
interface KeyView {
  access_key_id: string
  permissions: Record<string, boolean> | null
}

async function setup(t: Test) {
  const { url } = await startTestServer(t, { admin_password: ADMIN_PASSWORD })
  const a = api(url, await adminToken(url))
  const json = async <T>(res: Response, status = 200): Promise<T> => {
    const text = await res.text()
    t.equal(res.status, status, `HTTP ${status} (${text.slice(0, 200)})`)
    return JSON.parse(text) as T
  }
  const patch = (path: string, body: unknown) => a('PATCH', `/admin/api/users/${path}`, {}, { body: typeof body === 'string' ? body : JSON.stringify(body) })
  const listed = async (name: string) => (await json<{ results: UserView[] }>(await a('GET', '/admin/api/users'))).results.find((u) => u.name === name)!
  const keys = async (name: string) => (await json<{ results: KeyView[] }>(await a('GET', `/admin/api/users/${name}/s3-keys`))).results
  return { url, a, json, patch, listed, keys }
}

t.test("a user's bits: PATCH changes the bits it names, answers as GET lists", async (t) => {
  const { a, json, patch, listed } = await setup(t)
  await json(await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'carol', connection: 'tmp', password: 'carol password' }) }))

  const r1 = (await json<{ result: UserView }>(await patch('carol', { permissions: { can_upload: false, can_delete: false } }))).result
  t.same(r1.permissions, { ...ALL, can_upload: false, can_delete: false }, 'only the two named bits changed')
  t.equal(r1.read_only, false)
  t.same(r1, await listed('carol'), 'the answer is the user as GET lists it')

  const r2 = (await json<{ result: UserView }>(await patch('carol', { read_only: true }))).result
  t.same(r2.permissions, { ...NONE, can_read: true }, 'read_only: true, the shorthand: can_read only')
  t.equal(r2.read_only, true)

  const r3 = (await json<{ result: UserView }>(await patch('carol', { permissions: { can_upload: true, can_create_file: true, can_read: false } }))).result
  t.same(r3.permissions, { ...NONE, can_upload: true, can_create_file: true }, 'an upload-only user, from a read-only one')
  t.equal(r3.read_only, false)

  const r4 = (await json<{ result: UserView }>(await patch('carol', { read_only: false, password: 'another password' }))).result
  t.same(r4.permissions, ALL, 'read_only: false: every bit but can_share')
  t.equal(r4.has_password, true, 'a password and bits in one PATCH')
  t.same(await listed('carol'), r4)
})

t.test("bad input for a user's bits is refused naming the field, and changes nothing", async (t) => {
  const { a, json, patch, listed } = await setup(t)
  await json(await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'dave', connection: 'tmp', password: 'dave password', permissions: { can_read: true, can_upload: true, can_create_file: true } }) }))
  const before = await listed('dave')
  const cases: [string, unknown, RegExp][] = [
    ['an unknown bit', { permissions: { can_read: false, can_fly: true } }, /can_fly/],
    ['a bit that is not true or false', { permissions: { can_delete: 'yes' } }, /"can_delete" must be true or false/],
    ['a bit given as null', { permissions: { can_read: null } }, /"can_read" must be true or false/],
    ['can_share', { permissions: { can_share: true } }, /can_share/],
    ['permissions not an object', { permissions: ['can_read'] }, /"permissions" must be an object/],
    ['both the bits and the shorthand', { permissions: { can_read: true }, read_only: true }, /not both/],
    ['read_only not a boolean', { read_only: 'yes' }, /"read_only" must be true or false/],
    ['another field', { permissions: { can_delete: true }, root: '/elsewhere' }, /"root" cannot be changed/],
    ['good bits with a bad password', { permissions: { can_delete: true }, password: 'short' }, /"password"/],
    ['nothing to change', {}, /give "password".*"permissions" or "read_only"/],
  ]
  for (const [what, body, why] of cases) {
    const res = await patch('dave', body)
    const b = (await res.json()) as { code: string; message: string }
    t.equal(res.status, 400, `${what}: 400`)
    t.equal(b.code, 'INVALID_INPUT', `${what}: INVALID_INPUT`)
    t.match(b.message, why, `${what}: names the field (${b.message})`)
  }
  await expectError(t, await patch('dave', 'not json'), 400, 'INVALID_INPUT', 'a body that is not JSON')
  t.same(await listed('dave'), before, 'nothing changed')
  await expectError(t, await patch('nobody', { permissions: { can_read: true } }), 404, 'NOT_FOUND', 'an unknown user')
})

t.test("an S3 key's bits: PATCH narrows them, null gives back its user's; bad input changes nothing", async (t) => {
  const { a, json, patch, keys } = await setup(t)
  await json(await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'erin', connection: 'tmp', password: 'erin password' }) }))
  await json(await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'frank', connection: 'tmp', password: 'frank password' }) }))
  const made = (await json<{ result: KeyView }>(await a('POST', '/admin/api/users/erin/s3-keys'), 201)).result
  t.equal(made.permissions, null, "made without a body: its user's bits")
  const path = `erin/s3-keys/${made.access_key_id}`

  const r1 = (await json<{ result: KeyView & { secret_access_key?: string } }>(await patch(path, { permissions: { can_delete: false } }))).result
  t.same(r1.permissions, { ...ALL, can_delete: false }, "a key with its user's bits: the named bit taken from every bit a user may have")
  t.notOk('secret_access_key' in r1, 'no secret in the answer')
  t.same(await keys('erin'), [{ ...r1 }], 'the answer is the key as GET lists it')

  const r2 = (await json<{ result: KeyView }>(await patch(path, { read_only: true }))).result
  t.same(r2.permissions, { ...NONE, can_read: true }, 'read_only: true')
  const r3 = (await json<{ result: KeyView }>(await patch(path, { permissions: { can_upload: true } }))).result
  t.same(r3.permissions, { ...NONE, can_read: true, can_upload: true }, 'partial: the other bits stay')

  const before = await keys('erin')
  for (const [what, body] of [
    ['an unknown bit', { permissions: { can_fly: true } }],
    ['a bit that is not true or false', { permissions: { can_upload: 1 } }],
    ['can_share', { permissions: { can_share: true } }],
    ['both the bits and the shorthand', { permissions: null, read_only: false }],
    ['another field', { permissions: { can_read: true }, user: 'frank' }],
    ['nothing to change', {}],
  ] as const) {
    await expectError(t, await patch(path, body), 400, 'INVALID_INPUT', what)
  }
  t.same(await keys('erin'), before, 'nothing changed')
  await expectError(t, await patch(`frank/s3-keys/${made.access_key_id}`, { read_only: true }), 404, 'NOT_FOUND', "another user's key")
  await expectError(t, await patch('erin/s3-keys/FGAAAAAAAAAAAAAAAAAA', { read_only: true }), 404, 'NOT_FOUND', 'an unknown key')
  t.same(await keys('erin'), before, 'still nothing changed')

  const r4 = (await json<{ result: KeyView }>(await patch(path, { permissions: null }))).result
  t.equal(r4.permissions, null, "null: its user's bits again")
  t.same(await keys('erin'), [r4])
})

t.test("a gateway user's HTTP session gets its new bits at its next request", async (t) => {
  const { url, a, json, patch } = await setup(t)
  await json(await a('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'gina', connection: 'tmp', password: 'gina password' }) }))
  const login = await json<{ result: { authorization: string } }>(await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'gateway', user: 'gina', password: 'gina password' }) }))
  const gina = api(url, login.result.authorization)
  t.equal((await gina('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'first' })).status, 200, 'uploads while it may')

  await json(await patch('gina', { permissions: { can_upload: false } }))
  await expectError(t, await gina('POST', '/api/files/cat', { path: '/b.txt' }, { body: 'second' }), 403, 'FORBIDDEN', 'the same session, after can_upload was taken away')
  const ls = await json<{ results: { name: string }[]; permissions: Record<string, boolean> }>(await gina('GET', '/api/files/ls', { path: '/' }))
  t.same(ls.results.map((e) => e.name), ['a.txt'], 'nothing was written; it still reads')
  t.equal(ls.permissions.can_upload, false, 'and its listing says so')

  await json(await patch('gina', { permissions: { can_upload: true } }))
  t.equal((await gina('POST', '/api/files/cat', { path: '/b.txt' }, { body: 'second' })).status, 200, 'given back: the same session uploads again')
})

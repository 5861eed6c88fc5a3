/**
 * @module test/state/store-suite
 * The one test suite of the StateStore interface (core/state.ts), run against every
 * store: test/state/sqlite-state.test.ts and test/state/pg-state.test.ts call it with
 * their factory. Records round-trip, orderings are byte orders, and what must be
 * atomic holds when two stores on the same database (two nodes) race on it.
 */
import type { Test } from 'tap'
import type { StateStore } from '../../core/state.js'
import { FULL_ACCESS, NO_ACCESS, READ_ONLY } from '../../core/permissions.js'

/** Two stores on one fresh, empty database (as two nodes would open it), closed when `t` ends. */
export type OpenStores = (t: Test) => Promise<readonly [StateStore, StateStore]>

export function storeSuite(t: Test, open: OpenStores): void {
  t.test('records round-trip', async (t) => {
    const [s] = await open(t)
    await s.revokeToken('tok1', Date.now() + 60_000)
    await s.revokeToken('old', Date.now() - 1)
    t.equal(await s.isTokenRevoked('tok1'), true)
    t.equal(await s.isTokenRevoked('old'), false, 'already expired: not kept')
    t.equal(await s.isTokenRevoked('other'), false)
    const share = { id: 'sh1', owner: 'o1', path: '/docs', kind: 'directory', can_read: true, can_upload: false, can_write: true, password_hash: null, expire: 123, sealed: 'x', created: 1 } as const
    await s.putShare(share)
    t.same(await s.getShare('sh1'), share)
    t.same(await s.listShares('o1'), [share])
    t.same(await s.listShares('o2'), [])
    t.equal(await s.deleteShare('sh1'), true)
    t.equal(await s.deleteShare('sh1'), false)
    const key = { id: 'k1', name: 'n', hash: 'h', origins: ['https://a.com'], created: 2, last_used: null }
    await s.putApiKey(key)
    t.same(await s.getApiKeyByHash('h'), key)
    await s.touchApiKey('k1', 99)
    t.equal((await s.listApiKeys())[0]!.last_used, 99)
    t.equal(await s.deleteApiKey('k1'), true)
    t.equal(await s.getApiKeyByHash('h'), null)
    const k1 = { fingerprint: 'SHA256:one', type: 'ssh-ed25519', blob: 'AAAA', comment: 'laptop', created: 4 }
    const k2 = { fingerprint: 'SHA256:two', type: 'ssh-rsa', blob: 'BBBB', comment: '', created: 5 }
    // An upload-only user: the bits are kept as given, not as read-only or not.
    const user = { name: 'u', password_hash: 'scrypt$..', keys: [k1], connection: 'tmp', root: '/', permissions: { ...NO_ACCESS, can_upload: true, can_create_file: true }, created: 3 }
    t.equal(await s.addGatewayUser(user), true)
    t.equal(await s.addGatewayUser({ ...user, root: '/other' }), false, 'no overwrite of an existing user')
    t.same(await s.getGatewayUser('u'), user)
    t.same(await s.listGatewayUsers(), [user])
    t.equal(await s.addGatewayUserKey('u', k2), 'added')
    t.equal(await s.addGatewayUserKey('u', { ...k2, comment: 'again' }), 'duplicate', 'one fingerprint once per user')
    t.equal(await s.addGatewayUserKey('nobody', k2), 'no-user')
    t.same((await s.getGatewayUser('u'))!.keys, [k1, k2], 'keys oldest first')
    t.equal(await s.updateGatewayUser('u', { password_hash: null }), true)
    t.same(await s.getGatewayUser('u'), { ...user, keys: [k1, k2], password_hash: null }, 'a key-only user, nothing else changed')
    t.equal(await s.updateGatewayUser('u', { permissions: READ_ONLY }), true)
    t.same(await s.getGatewayUser('u'), { ...user, keys: [k1, k2], password_hash: null, permissions: READ_ONLY }, 'new bits, the password left as it was')
    t.equal(await s.updateGatewayUser('u', { password_hash: 'scrypt$new', permissions: { ...NO_ACCESS, can_delete: true } }), true)
    t.match(await s.getGatewayUser('u'), { password_hash: 'scrypt$new', permissions: { ...NO_ACCESS, can_delete: true } }, 'both in one change')
    t.equal(await s.updateGatewayUser('nobody', { password_hash: 'x' }), false)
    t.equal(await s.deleteGatewayUserKey('u', 'SHA256:one'), true)
    t.equal(await s.deleteGatewayUserKey('u', 'SHA256:one'), false)
    t.same((await s.listGatewayUsers())[0]!.keys, [k2])
    t.equal(await s.deleteGatewayUser('u'), true)
    t.equal(await s.deleteGatewayUser('u'), false)
    t.equal(await s.addGatewayUser({ ...user, keys: [] }), true, 'a user of the same name again')
    t.same((await s.getGatewayUser('u'))!.keys, [], 'does not inherit the removed user\'s keys')
  })

  t.test('S3 keys: per user, oldest first, gone with their user', async (t) => {
    const [s] = await open(t)
    const key = { id: 'AKIAAAAAAAAAAAAAAAA1', user: 'u', sealed: 'sealed-secret', permissions: null, created: 20, last_used: null }
    t.equal(await s.addS3Key(key), 'no-user', 'no key for a user that does not exist')
    await s.addGatewayUser({ name: 'u', password_hash: null, keys: [], connection: 'tmp', root: '/', permissions: FULL_ACCESS, created: 1 })
    t.equal(await s.addS3Key(key), 'added')
    const second = { ...key, id: 'AKIAAAAAAAAAAAAAAAA0', permissions: READ_ONLY } // a key that narrows its user's bits
    t.equal(await s.addS3Key(second), 'added')
    t.same(await s.getS3Key(key.id), key)
    t.same(await s.listS3Keys('u'), [key, second], 'same creation time: in the order added')
    await s.touchS3Key(key.id, 77)
    t.equal((await s.getS3Key(key.id))!.last_used, 77)
    t.equal(await s.setS3KeyPermissions('u', key.id, READ_ONLY), true)
    t.same((await s.getS3Key(key.id))!.permissions, READ_ONLY, 'narrowed')
    t.equal(await s.setS3KeyPermissions('u', key.id, null), true)
    t.same(await s.getS3Key(key.id), { ...key, last_used: 77 }, "its user's bits again, nothing else changed")
    t.equal(await s.setS3KeyPermissions('other', key.id, READ_ONLY), false, 'only its own user changes a key')
    t.equal((await s.getS3Key(key.id))!.permissions, null)
    t.equal(await s.deleteS3Key('other', key.id), false, 'only its own user removes a key')
    t.equal(await s.deleteS3Key('u', key.id), true)
    t.same(await s.listS3Keys('u'), [second])
    await s.deleteGatewayUser('u')
    t.equal(await s.getS3Key(second.id), null, 'removed with its user')
  })

  t.test('orderings: newest shares first, names and keys in byte order', async (t) => {
    const [s] = await open(t)
    const share = { id: 'a', owner: 'o', path: '/', kind: 'file', can_read: true, can_upload: false, can_write: false, password_hash: null, expire: null, sealed: 'x', created: 1 } as const
    await s.putShare(share)
    await s.putShare({ ...share, id: 'c', created: 2 })
    await s.putShare({ ...share, id: 'b', created: 2 })
    t.same((await s.listShares()).map((x) => x.id), ['b', 'c', 'a'], 'newest first, then by id')
    const names = ['b', 'B', 'a', '_z', 'é', 'A1', 'a-b', 'ab']
    const bytes = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    for (const name of names) await s.addGatewayUser({ name, password_hash: null, keys: [], connection: 'tmp', root: '/', permissions: FULL_ACCESS, created: 1 })
    t.same((await s.listGatewayUsers()).map((u) => u.name), bytes, 'users by name, bytewise')
    for (const [i, key] of names.entries()) {
      await s.putMultipartUpload({ id: `up${i}`, user: 'u', bucket: 'b', key, created: 1, content_type: null, user_meta: {}, completed_etag: null })
    }
    t.same((await s.listMultipartUploads('u', 'b')).map((u) => u.key), bytes, 'uploads by key, bytewise')
  })

  t.test('S3 object metadata and multipart records round-trip; a part is refused once its upload is gone or completed', async (t) => {
    const [s] = await open(t)
    const m = { storage: 'st', path: '/b/k', size: 3, mtime_ms: 5, etag: 'abc', content_type: 'text/plain', user_meta: { a: 'ü' } }
    await s.putObjectMeta(m)
    t.same(await s.getObjectMeta('st', '/b/k'), m)
    t.equal(await s.getObjectMeta('other', '/b/k'), null, 'keyed by storage')
    const other = { ...m, path: '/b/l', etag: 'def', content_type: null, user_meta: {} }
    await s.putObjectMeta(other)
    await s.putObjectMeta({ ...m, storage: 'else', path: '/b/x' })
    const odd = { ...m, path: '/b/it\'s, "odd" ü\\' }
    await s.putObjectMeta(odd)
    const page = await s.getObjectMetas('st', ['/b/k', '/b/none', '/b/l', '/b/x', odd.path])
    t.same([...page.entries()].sort(), [['/b/it\'s, "odd" ü\\', odd], ['/b/k', m], ['/b/l', other]], 'a batch: the records of the paths that have one, of that storage only')
    t.equal((await s.getObjectMetas('st', [])).size, 0, 'an empty batch')
    const many = Array.from({ length: 1500 }, (_, i) => `/many/${i}`)
    for (const path of many.slice(0, 3)) await s.putObjectMeta({ ...m, path })
    t.same([...(await s.getObjectMetas('st', many)).keys()].sort(), many.slice(0, 3).sort(), 'a page of 1,500 paths in one call')
    await s.putObjectMeta({ ...m, size: 4, etag: 'new', user_meta: { b: 'x' } })
    t.same(await s.getObjectMeta('st', '/b/k'), { ...m, size: 4, etag: 'new', user_meta: { b: 'x' } }, 'a record replaced')
    await s.deleteObjectMeta('st', '/b/k')
    t.equal(await s.getObjectMeta('st', '/b/k'), null)

    const up = { id: 'u1', user: 'alice', bucket: 'b', key: 'k', created: 10, content_type: null, user_meta: {}, completed_etag: null }
    await s.putMultipartUpload(up)
    await s.putMultipartUpload({ ...up, id: 'u0', key: 'j', created: 20 })
    t.same(await s.getMultipartUpload('u1'), up)
    t.same((await s.listMultipartUploads('alice', 'b')).map((u) => u.id), ['u0', 'u1'], 'by key')
    t.same(await s.listMultipartUploads('bob', 'b'), [], 'per user')
    const part = { upload_id: 'u1', number: 1, size: 4, etag: 'e1', file: 'f1', modified: 11 }
    t.equal(await s.putMultipartPart(part), null, 'a new part')
    t.equal(await s.putMultipartPart({ ...part, file: 'f2', etag: 'e2' }), 'f1', 'a replaced part names the file to remove')
    t.same(await s.listMultipartParts('u1'), [{ ...part, file: 'f2', etag: 'e2' }])
    t.same((await s.expiredMultipartUploads(15)).map((u) => u.id), ['u1'])
    t.equal(await s.completeMultipartUpload('u1', 'final-2'), true)
    t.equal((await s.getMultipartUpload('u1'))?.completed_etag, 'final-2')
    t.same(await s.listMultipartParts('u1'), [], 'parts forgotten at completion')
    t.equal(await s.putMultipartPart({ ...part, number: 2 }), 'no-upload', 'no part for a completed upload')
    t.same((await s.listMultipartUploads('alice', 'b')).map((u) => u.id), ['u0'], 'completed uploads are not listed')
    t.equal(await s.completeMultipartUpload('nope', 'x'), false)
    t.equal(await s.putMultipartPart({ ...part, upload_id: 'u0' }), null)
    t.equal(await s.deleteMultipartUpload('u0'), true)
    t.same(await s.listMultipartParts('u0'), [], 'parts removed with their upload')
    t.equal(await s.putMultipartPart({ ...part, upload_id: 'u0' }), 'no-upload', 'no part for a removed upload')
    t.equal(await s.deleteMultipartUpload('u0'), false)
  })

  t.test('OAuth clients and refresh tokens: round-trip, unused clients purged, a refresh token used once, families deleted', async (t) => {
    const [s] = await open(t)
    const old = { client_id: 'fgc_old', name: 'Old', redirect_uris: ['http://127.0.0.1/cb'], created: 1000, last_used: null }
    const used = { ...old, client_id: 'fgc_used', name: 'Used' }
    await s.putOAuthClient(old)
    await s.putOAuthClient(used)
    await s.touchOAuthClient('fgc_used', 5000)
    t.same(await s.getOAuthClient('fgc_used'), { ...used, last_used: 5000 })
    t.equal(await s.countOAuthClients(), 2)
    t.equal(await s.purgeOAuthClients(2000), 1, 'only the never-used client registered before the cut-off')
    t.same([await s.getOAuthClient('fgc_old'), (await s.getOAuthClient('fgc_used'))?.client_id], [null, 'fgc_used'])
    for (const [id, created] of [['fgc_b', 3000], ['fgc_a', 2000], ['fgc_c', 4000]] as const) await s.putOAuthClient({ ...old, client_id: id, created })
    t.equal(await s.evictUnusedOAuthClients(2), 2, 'room made: two never-used clients removed')
    t.same(
      await Promise.all(['fgc_a', 'fgc_b', 'fgc_c', 'fgc_used'].map(async (id) => (await s.getOAuthClient(id))?.client_id ?? null)),
      [null, null, 'fgc_c', 'fgc_used'],
      'the oldest never-used ones; a client in use is kept',
    )
    await s.purgeOAuthClients(Number.MAX_SAFE_INTEGER)

    const r = { hash: 'h1', family: 'f1', client_id: 'fgc_used', resource: 'http://x/mcp', grant: 'sealed', expires: Date.now() + 60_000, used: null }
    await s.putOAuthRefresh(r)
    await s.putOAuthRefresh({ ...r, hash: 'h2' })
    await s.putOAuthRefresh({ ...r, hash: 'h3', family: 'f2' })
    t.same(await s.getOAuthRefresh('h2'), { ...r, hash: 'h2' })
    t.same(await s.useOAuthRefresh('h1', 7000), r, 'the first use returns it unused')
    t.same(await s.useOAuthRefresh('h1', 8000), { ...r, used: 7000 }, 'the second sees the first use')
    t.equal(await s.useOAuthRefresh('nope', 1), null)
    await s.deleteOAuthFamily('f1')
    t.same([await s.getOAuthRefresh('h1'), await s.getOAuthRefresh('h2'), (await s.getOAuthRefresh('h3'))?.family], [null, null, 'f2'], 'one family deleted, the other kept')
  })

  t.test('login throttles: counted atomically per key, a window that has ended starts again, refunds and forgets, purged once ended', async (t) => {
    const [s] = await open(t)
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 10_000), { count: 1, since: 10_000 })
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 10_500), { count: 2, since: 10_000 }, 'same window: counted on')
    t.same(await Promise.all([1, 2, 3].map(() => s.throttleHit('admin 192.0.2.1', 1000, 10_600))).then((r) => r.map((c) => c.count).sort()), [3, 4, 5], 'concurrent hits: none lost')
    t.same(await s.throttleHit('admin 192.0.2.2', 1000, 10_600), { count: 1, since: 10_600 }, 'another key counts apart')
    t.same(await s.throttlePeek('admin 192.0.2.1', 10_700), { count: 5, since: 10_000 }, 'a peek reads the count')
    t.same(await s.throttlePeek('admin 192.0.2.1', 10_700), { count: 5, since: 10_000 }, 'and does not count')
    t.equal(await s.throttlePeek('admin 192.0.2.1', 11_000), null, 'nothing once the window ended')
    t.equal(await s.throttlePeek('admin 192.0.2.9', 10_700), null, 'nothing for an unknown key')
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 11_000), { count: 1, since: 11_000 }, 'the window ended: a new one')
    await s.throttleRefund('admin 192.0.2.1')
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 11_100), { count: 1, since: 11_100 }, 'refunded to 0: the count went')
    await s.throttleHit('admin 192.0.2.1', 1000, 11_200)
    await s.throttleRefund('admin 192.0.2.1')
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 11_300), { count: 2, since: 11_100 }, 'a refund takes back one attempt only')
    await s.throttleForget('admin 192.0.2.1')
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 11_400), { count: 1, since: 11_400 }, 'forgotten')
    await s.throttleRefund('nobody')
    t.equal(await s.purgeThrottles(11_600), 1, 'only the count whose window ended (192.0.2.2, until 11 600)')
    t.same(await s.throttleHit('admin 192.0.2.1', 1000, 11_500), { count: 2, since: 11_400 }, 'a live count is kept')
  })

  t.test('OAuth codes: used once atomically with the family its exchange creates, purged after expiry', async (t) => {
    const [s] = await open(t)
    const code = { hash: 'c1', client_id: 'fgc_a', redirect_uri: 'http://127.0.0.1/cb', redirect_given: true, challenge: 'ch', resource: 'http://x/mcp', grant: 'sealed', expires: 5000, used: null, family: null }
    await s.putOAuthCode(code)
    await s.putOAuthCode({ ...code, hash: 'c2', redirect_given: false, expires: 9000 })
    // Two uses at once (on PostgreSQL on two connections): either may come first, exactly one does.
    const uses = await Promise.all([s.useOAuthCode('c1', 'fam1', 100), s.useOAuthCode('c1', 'fam2', 200)])
    const first = uses[0]?.used === null ? 0 : 1
    const won = first === 0 ? { used: 100, family: 'fam1' } : { used: 200, family: 'fam2' }
    t.same(uses[first], code, 'one use returns it unused')
    t.same(uses[1 - first], { ...code, ...won }, 'the other (a replay) sees the first use and the family to revoke')
    t.same(await s.useOAuthCode('c1', 'fam3', 300), { ...code, ...won }, 'a replay does not change the family')
    t.equal(await s.useOAuthCode('nope', 'f', 1), null)
    t.equal(await s.purgeOAuthCodes(6000), 1, 'only the code expired before the cut-off')
    t.equal(await s.useOAuthCode('c1', 'f', 1), null)
    t.same(await s.useOAuthCode('c2', 'f', 1), { ...code, hash: 'c2', redirect_given: false, expires: 9000 })
  })

  t.test('MCP sessions: round-trip, touched while they exist, deleted, purged when idle', async (t) => {
    const [s] = await open(t)
    const m = { hash: 'm1', owner: 'o1', protocol_version: '2025-06-18', init: '{"capabilities":{}}', created: 100, last_seen: 100 }
    await s.putMcpSession(m)
    await s.putMcpSession({ ...m, hash: 'm2' })
    t.same(await s.getMcpSession('m1'), m)
    t.equal(await s.touchMcpSession('m1', 500), true)
    t.equal(await s.touchMcpSession('m1', 400), true)
    t.equal((await s.getMcpSession('m1'))!.last_seen, 500, 'a late touch does not move it back')
    t.equal(await s.touchMcpSession('nope', 500), false)
    t.equal(await s.purgeMcpSessions(300), 1, 'the session idle since 100')
    t.equal(await s.getMcpSession('m2'), null)
    t.equal(await s.deleteMcpSession('m1'), true)
    t.equal(await s.deleteMcpSession('m1'), false)
    t.equal(await s.touchMcpSession('m1', 600), false, 'a deleted session is not brought back by a touch')
  })

  t.test('tus upload records: round-trip, replaced, expired ones listed oldest first, deleted', async (t) => {
    const [s] = await open(t)
    await s.putTusUpload({ id: 'b'.repeat(32), upload: '{"id":"b"}', created: 200 })
    await s.putTusUpload({ id: 'a'.repeat(32), upload: '{"id":"a"}', created: 100 })
    await s.putTusUpload({ id: 'c'.repeat(32), upload: '{"id":"c"}', created: 300 })
    await s.putTusUpload({ id: 'a'.repeat(32), upload: '{"id":"a","size":3}', created: 100 })
    t.same(await s.getTusUpload('a'.repeat(32)), { id: 'a'.repeat(32), upload: '{"id":"a","size":3}', created: 100 })
    t.same(await s.expiredTusUploads(300), ['a'.repeat(32), 'b'.repeat(32)])
    t.equal(await s.deleteTusUpload('a'.repeat(32)), true)
    t.equal(await s.deleteTusUpload('a'.repeat(32)), false)
    t.equal(await s.getTusUpload('a'.repeat(32)), null)
  })

  t.test('two nodes racing: a refresh token is used once', async (t) => {
    const [a, b] = await open(t)
    for (let i = 0; i < 20; i++) {
      const r = { hash: `race${i}`, family: `f${i}`, client_id: 'c', resource: 'r', grant: 'g', expires: Date.now() + 60_000, used: null }
      await a.putOAuthRefresh(r)
      const uses = await Promise.all([a, b, a, b, a, b].map((s, j) => s.useOAuthRefresh(r.hash, 1000 + j)))
      const first = uses.filter((u) => u !== null && u.used === null)
      t.equal(first.length, 1, `round ${i}: exactly one use finds it unused`)
      const at = (await a.getOAuthRefresh(r.hash))!.used
      t.ok(uses.every((u) => u === first[0] || u!.used === at), `round ${i}: the others see the one use recorded`)
    }
  })

  t.test('two nodes racing: no throttle count is lost; an OAuth code is exchanged once', async (t) => {
    const [a, b] = await open(t)
    const hits = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).throttleHit('admin 192.0.2.9', 60_000, 1000)))
    t.same(hits.map((h) => h.count).sort((x, y) => x - y), Array.from({ length: 12 }, (_, i) => i + 1), 'every hit counted once')
    t.ok(hits.every((h) => h.since === 1000), 'one window')
    for (let i = 0; i < 10; i++) {
      const code = { hash: `race${i}`, client_id: 'c', redirect_uri: 'http://127.0.0.1/cb', redirect_given: true, challenge: 'ch', resource: 'r', grant: 'g', expires: 9e12, used: null, family: null }
      await a.putOAuthCode(code)
      const uses = await Promise.all([a, b, a, b, a, b].map((s, j) => s.useOAuthCode(code.hash, `fam${j}`, 100 + j)))
      const first = uses.filter((u) => u !== null && u.used === null)
      t.equal(first.length, 1, `round ${i}: exactly one exchange finds it unused`)
      const family = (await b.useOAuthCode(code.hash, 'later', 1))!.family
      t.ok(uses.every((u) => u === first[0] || u!.family === family), `round ${i}: the replays see the family to revoke`)
    }
  })

  t.test('two nodes racing: one part number, every replaced file named once', async (t) => {
    const [a, b] = await open(t)
    for (let i = 0; i < 10; i++) {
      const id = `race${i}`
      await a.putMultipartUpload({ id, user: 'u', bucket: 'b', key: 'k', created: 1, content_type: null, user_meta: {}, completed_etag: null })
      const files = Array.from({ length: 6 }, (_, j) => `f${j}`)
      const replaced = await Promise.all(files.map((file, j) => (j % 2 ? a : b).putMultipartPart({ upload_id: id, number: 1, size: 1, etag: file, file, modified: 1 })))
      const parts = await a.listMultipartParts(id)
      t.equal(parts.length, 1)
      // Each file is either the one kept or named, once, as replaced (for its caller to remove): none is lost as debris.
      t.same([...replaced.filter((x) => x !== null), parts[0]!.file].sort(), files, `round ${i}: every file accounted for once`)
    }
  })

  t.test('two nodes racing: parts recorded while an upload completes, or is removed, do not outlive it', async (t) => {
    const [a, b] = await open(t)
    for (let i = 0; i < 10; i++) {
      const id = `race${i}`
      await a.putMultipartUpload({ id, user: 'u', bucket: 'b', key: 'k', created: 1, content_type: null, user_meta: {}, completed_etag: null })
      const end = i % 2 ? a.completeMultipartUpload(id, 'etag') : a.deleteMultipartUpload(id)
      const puts = Array.from({ length: 8 }, (_, n) => b.putMultipartPart({ upload_id: id, number: n + 1, size: 1, etag: 'e', file: `p${n}`, modified: 1 }))
      const [ended, ...results] = await Promise.all([end, ...puts])
      t.equal(ended, true)
      t.ok(results.every((r) => r === null || r === 'no-upload'))
      t.same(await a.listMultipartParts(id), [], `round ${i}: no part left once it ${i % 2 ? 'completed' : 'was removed'}`)
      t.equal(await b.putMultipartPart({ upload_id: id, number: 99, size: 1, etag: 'e', file: 'late', modified: 1 }), 'no-upload')
    }
  })

  t.test('two nodes racing: a gateway user name is taken once; a removed user\'s keys do not come back', async (t) => {
    const [a, b] = await open(t)
    for (let i = 0; i < 10; i++) {
      const name = `user${i}`
      const adds = await Promise.all([a, b, a, b].map((s, j) =>
        s.addGatewayUser({ name, password_hash: null, keys: [{ fingerprint: `SHA256:${j}`, type: 'ssh-ed25519', blob: 'AAAA', comment: `${j}`, created: 1 }], connection: 'tmp', root: `/r${j}`, permissions: FULL_ACCESS, created: 1 }),
      ))
      t.equal(adds.filter(Boolean).length, 1, `round ${i}: one add wins`)
      const won = adds.indexOf(true)
      const user = (await b.getGatewayUser(name))!
      t.same([user.root, user.keys.map((k) => k.fingerprint)], [`/r${won}`, [`SHA256:${won}`]], 'the winner\'s record, whole')
      const [, ...keys] = await Promise.all([
        a.deleteGatewayUser(name),
        ...Array.from({ length: 6 }, (_, j) => b.addGatewayUserKey(name, { fingerprint: `SHA256:late${j}`, type: 'ssh-ed25519', blob: 'AAAA', comment: '', created: 2 })),
      ])
      t.ok(keys.every((k) => k === 'added' || k === 'no-user'))
      t.equal(await a.addGatewayUser({ name, password_hash: null, keys: [], connection: 'tmp', root: '/', permissions: FULL_ACCESS, created: 3 }), true)
      t.same((await b.getGatewayUser(name))!.keys, [], `round ${i}: no key of the removed user survives`)
    }
  })
}

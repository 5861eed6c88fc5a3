/**
 * @module test/front/connection-spec.test
 * `specWithRoot`: a gateway user's root narrows each kind of backend spec the way its
 * driver reads a root (local folders joined, sftp/ftp paths joined with the login
 * folder kept relative, s3 `bucket/prefix`, smb folders), and a plugin storage refuses
 * a root it cannot narrow. `passthroughAllowed`: only connections that leave every
 * credential to their users, unless turned off.
 */
import t from 'tap'
import type { BackendSpec } from '../../core/backend.js'
import { passthroughAllowed, specWithRoot } from '../../front/connection-spec.js'

t.test('specWithRoot narrows every kind of spec to the user root', async (t) => {
  const sftp = { type: 'sftp', hostname: 'h', port: 22, username: 'u', password: 'p' } as const
  const s3 = { type: 's3', accessKeyId: 'k', secretAccessKey: 's', region: 'r', forcePathStyle: true } as const
  const smb = { type: 'smb', hostname: 'h', port: 445, share: 'sh', domain: 'D', username: 'u', password: 'p' } as const
  const cases: [BackendSpec, string, string][] = [
    [{ type: 'local', root: '/srv/files' }, '/home/bob', '/srv/files/home/bob'],
    [{ type: 'local', root: '/srv/files' }, '/', '/srv/files'],
    [{ ...sftp, root: '' }, '/home/bob', 'home/bob'],
    [{ ...sftp, root: '/' }, '/home/bob', '/home/bob'],
    [{ ...sftp, root: '/data' }, '/bob', '/data/bob'],
    [{ ...sftp, root: 'data' }, '/bob', 'data/bob'],
    [{ type: 'ftp', hostname: 'h', port: 21, username: 'u', password: 'p', secure: false, root: '' }, '/pub', 'pub'],
    [{ ...s3, root: '' }, '/bucket', 'bucket'],
    [{ ...s3, root: 'bucket' }, '/team/bob', 'bucket/team/bob'],
    [{ ...s3, root: 'bucket/prefix' }, '/bob', 'bucket/prefix/bob'],
    [{ ...smb, root: '' }, '/bob', 'bob'],
    [{ ...smb, root: 'users' }, '/bob', 'users/bob'],
  ]
  for (const [spec, root, want] of cases) t.equal((specWithRoot(spec, root) as { root: string }).root, want, `${spec.type} ${JSON.stringify((spec as { root: string }).root)} + ${root}`)
  const plugin: BackendSpec = { type: 'plugin', plugin: 'p', backend: 'memory', params: {} }
  t.equal(specWithRoot(plugin, '/'), plugin, 'a plugin storage at its root')
  t.throws(() => specWithRoot(plugin, '/bob'), { code: 'INVALID_INPUT', message: /can only be served from its root/ })
})

t.test('passthroughAllowed: only where every credential is left to the users, unless turned off', async (t) => {
  const base = { label: 'x', hostname: 'h' }
  t.equal(passthroughAllowed({ ...base, type: 'sftp' }), true)
  t.equal(passthroughAllowed({ ...base, type: 'sftp', gateway_passthrough: false }), false)
  t.equal(passthroughAllowed({ ...base, type: 'sftp', username: 'shared' }), false, 'a fixed user name')
  t.equal(passthroughAllowed({ ...base, type: 'sftp', private_key: 'k' }), false, 'a fixed key')
  t.equal(passthroughAllowed({ ...base, type: 's3' }), true)
  t.equal(passthroughAllowed({ ...base, type: 's3', secret_access_key: 's' }), false)
  t.equal(passthroughAllowed({ ...base, type: 'ftp' }), true)
  t.equal(passthroughAllowed({ ...base, type: 'smb', password: 'p' }), false)
  t.equal(passthroughAllowed({ label: 'd', type: 'local', path: '/srv', public: true }), false)
})

/**
 * A gateway user removed, or its password or key changed, through the admin API: its
 * open SFTP connections end and what they were writing is not committed (issue: a put
 * committed 60 s after the user was removed). A key added ends nothing. Changing its
 * permission bits ends its connections too: logged in again, they have the new bits.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import ssh2, { type SFTPWrapper } from 'ssh2'
import { api } from '../../helpers/filegate.js'
import { adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { call, ssh2Sftp } from './clients.js'
import { startGateway } from './fixture.js'

type Client = InstanceType<typeof ssh2.Client>

/** Whether the server ends `client`'s connection within `ms`. */
const ends = (client: Client, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    client.on('error', () => {}) // the server's end may reach it as a reset
    const timer = setTimeout(() => resolve(false), ms)
    client.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

/** Whether `l` can log in (a client that keeps quiet about the errors of a refused login). */
function logsIn(l: { port: number; user: string; password: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const client = new ssh2.Client()
    client.on('error', () => resolve(false))
    client.once('ready', () => {
      client.end()
      resolve(true)
    })
    client.connect({ host: '127.0.0.1', port: l.port, username: l.user, password: l.password, readyTimeout: 20_000 })
  })
}

/** A handle open for writing with some bytes written, not closed. */
async function writing(sftp: SFTPWrapper, name: string): Promise<void> {
  const h = await call<Buffer>(sftp.open.bind(sftp), name, 'w')
  const data = Buffer.alloc(100_000, 1)
  await call(sftp.write.bind(sftp), h, data, 0, data.length, 0)
}

t.test('removing the user ends its connections; what they wrote is not committed', async (t) => {
  const { login, url, root } = await startGateway(t)
  const admin = api(url, await adminToken(url))
  const a = await ssh2Sftp(t, login)
  const b = await ssh2Sftp(t, login)
  await writing(a.sftp, 'half.bin')
  const endedA = ends(a.client, 30_000)
  const endedB = ends(b.client, 30_000)
  t.equal((await admin('DELETE', `/admin/api/users/${login.user}`)).status, 200, 'removed')
  t.ok(await endedA, 'the connection writing is ended')
  t.ok(await endedB, 'and the idle one')
  t.notOk(existsSync(join(root, 'half.bin')), 'nothing was committed')
  t.notOk(await logsIn(login), 'and it cannot log in again')
})

t.test('a new password ends the connections logged in with the old one', async (t) => {
  const { login, url } = await startGateway(t)
  const admin = api(url, await adminToken(url))
  const a = await ssh2Sftp(t, login)
  const ended = ends(a.client, 30_000)
  const res = await admin('PATCH', `/admin/api/users/${login.user}`, {}, { body: JSON.stringify({ password: 'a-brand-new-password' }) })
  t.equal(res.status, 200, 'password changed')
  t.ok(await ended, 'the connection is ended')
  const again = await ssh2Sftp(t, { ...login, password: 'a-brand-new-password' })
  t.ok(Array.isArray(await call(again.sftp.readdir.bind(again.sftp), '.')), 'the new password logs in')
})

t.test('removing the key a connection logged in with ends it; adding a key ends nothing', async (t) => {
  const dir = serverDir(t, 'keys')
  const key = (name: string) => {
    execFileSync('/usr/bin/ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)])
    return readFileSync(join(dir, `${name}.pub`), 'utf8').trim()
  }
  const mine = key('mine')
  const other = key('other')
  const { login, url } = await startGateway(t, { authorizedKey: mine })
  const admin = api(url, await adminToken(url))
  const byKey = await ssh2Sftp(t, { ...login, password: '' }, { password: undefined, privateKey: readFileSync(join(dir, 'mine')) })
  const byPassword = await ssh2Sftp(t, login)
  const keyEnded = ends(byKey.client, 30_000)
  const passwordEnded = ends(byPassword.client, 12_000)
  t.equal((await admin('POST', `/admin/api/users/${login.user}/keys`, {}, { body: JSON.stringify({ key: other }) })).status, 200, 'a key added')
  t.ok(Array.isArray(await call(byKey.sftp.readdir.bind(byKey.sftp), '.')), 'the key login is still served')
  const users = (await (await admin('GET', '/admin/api/users')).json()) as { results: { name: string; keys: { fingerprint: string }[] }[] }
  const fp = users.results.find((u) => u.name === login.user)!.keys[0]!.fingerprint
  t.equal((await admin('DELETE', `/admin/api/users/${login.user}/keys/${encodeURIComponent(fp)}`)).status, 200, 'its key removed')
  t.ok(await keyEnded, 'the connection that logged in with it is ended')
  t.notOk(await passwordEnded, 'a password login of the same user goes on')
  t.ok(Array.isArray(await call(byPassword.sftp.readdir.bind(byPassword.sftp), '.')), 'and is served')
})

t.test("taking can_upload away ends the user's connections; logged in again, it cannot upload", async (t) => {
  const { login, url, root } = await startGateway(t)
  const admin = api(url, await adminToken(url))
  const patch = (body: unknown) => admin('PATCH', `/admin/api/users/${login.user}`, {}, { body: JSON.stringify(body) })
  const a = await ssh2Sftp(t, login)
  await call(a.sftp.writeFile.bind(a.sftp), 'before.txt', 'uploaded while it may')
  t.equal(readFileSync(join(root, 'before.txt'), 'utf8'), 'uploaded while it may', 'the live connection uploads')

  // Bits given as they are change nothing: the connection goes on.
  const unchanged = ends(a.client, 3_000)
  t.equal((await patch({ permissions: { can_upload: true } })).status, 200)
  t.notOk(await unchanged, 'a PATCH that leaves the bits as they were ends nothing')
  await call(a.sftp.writeFile.bind(a.sftp), 'still.txt', 'still uploading')
  t.ok(existsSync(join(root, 'still.txt')), 'and it still uploads')

  const ended = ends(a.client, 30_000)
  await writing(a.sftp, 'half.bin')
  t.equal((await patch({ permissions: { can_upload: false } })).status, 200, 'can_upload taken away')
  t.ok(await ended, 'the live connection is ended')
  t.notOk(existsSync(join(root, 'half.bin')), 'what it was writing is not committed')

  const again = await ssh2Sftp(t, login)
  const refused = await call(again.sftp.writeFile.bind(again.sftp), 'after.txt', 'not allowed').then(
    () => null,
    (err: Error & { code?: unknown }) => err,
  )
  t.equal(refused?.code, 3, 'logged in again, an upload is refused: SSH_FX_PERMISSION_DENIED')
  t.match(refused?.message, /can_upload/, `saying which bit it lacks (${refused?.message})`)
  t.notOk(existsSync(join(root, 'after.txt')), 'nothing was written')
  t.same((await call<{ filename: string }[]>(again.sftp.readdir.bind(again.sftp), '.')).map((e) => e.filename).sort(), ['before.txt', 'still.txt'], 'it still lists and reads')
})

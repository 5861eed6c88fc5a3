/**
 * A worker thread killed (Worker.terminate(), through the pool's `threads`, a seam for
 * operations and tests only) under live transfers on every door: uploads and downloads
 * through HTTP, SFTP and S3, placed one at a time so that they alternate between the two
 * threads. Of the killed thread's transfers, the uploads and the HTTP downloads fail,
 * and the SFTP and S3 downloads (read through a gateway's open file) go on from the
 * other thread, byte-exact; the other thread's finish byte-exact; the targets of the
 * failed uploads keep their old content and no `.part` stays; the pool replaces the
 * thread and the next request on every door (MCP included) works.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { connect, textOf } from '../gateways/mcp/client.js'
import { call, ssh2Sftp } from '../gateways/sftp/clients.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { type Ended, type HeldDownload, type HeldUpload, httpDownload, httpUpload, s3Get, s3Put, sftpDownload, sftpUpload } from '../helpers/held-transfers.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { tempUploads } from '../helpers/small-disk.js'
import { serverDir } from '../servers/process.js'
import { userStorage } from '../helpers/user-storage.js'

const MiB = 1024 * 1024

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

t.test('a worker thread killed under live transfers on every door', async (t) => {
  const root = serverDir(t, 'worker-death')
  mkdirSync(join(root, 'bkt'))
  const big = randomBytes(48 * MiB) // more than the download buffers: the streams stay live on their threads
  writeFileSync(join(root, 'bkt', 'down.bin'), big)
  const { app, url } = await startTestServer(t, {
    workers: 2,
    admin_password: ADMIN_PASSWORD,
    sftp: { port: 0 },
    s3: { port: 0 },
    connections: [{ label: 'disk', type: 'local', path: root }],
  })
  const pool = app.pool
  const admin = api(url, await adminToken(url))
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: 'disk', root: '/' }) })).status, 200)
  const k = ((await (await admin('POST', '/admin/api/users/alice/s3-keys')).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const key = { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }
  const s3 = `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`
  const token = ((await (await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })).json()) as { result: { authorization: string } }).result.authorization
  const login = { port: app.gateways.find((g) => g.name === 'sftp')!.port!, user: 'alice', password: 'alice-password-1' }
  const { sftp } = await ssh2Sftp(t, login)

  const UP = 3 * MiB
  const bodies = new Map<string, Buffer>()
  type Live = { name: string; kind: 'up'; held: HeldUpload; target: string; sent: number } | { name: string; kind: 'down'; held: HeldDownload; want: Buffer }
  const live: Live[] = []
  const startUpload = async (name: string, target: string, open: () => Promise<HeldUpload> | HeldUpload) => {
    writeFileSync(join(root, 'bkt', target), `old ${target}`)
    bodies.set(target, randomBytes(UP))
    const before = pool.stats.transfers
    const held = await open()
    const first = bodies.get(target)!.subarray(0, 3 * MiB / 2) // past the SFTP gateway's 1 MiB coalescing
    await held.push(first)
    await until(`${name} live on a thread`, () => pool.stats.transfers === before + 1 && pool.stats.running === 0)
    live.push({ name, kind: 'up', held, target, sent: first.length })
  }
  const startDownload = async (name: string, open: () => Promise<HeldDownload>, want = big) => {
    const before = pool.stats.transfers
    const held = await open()
    await until(`${name} live on a thread`, () => pool.stats.transfers === before + 1 && pool.stats.running === 0)
    live.push({ name, kind: 'down', held, want })
  }

  // One at a time, each on the thread with the fewest transfers: they alternate, the first on threads[0].
  for (const i of [0, 1]) await startUpload(`HTTP upload ${i}`, `h${i}`, () => httpUpload(url, token, `/bkt/h${i}`))
  for (const i of [0, 1]) await startUpload(`SFTP upload ${i}`, `s${i}`, () => sftpUpload(sftp, `/bkt/s${i}`))
  for (const i of [0, 1]) await startUpload(`S3 upload ${i}`, `o${i}`, () => s3Put(s3, key, `/bkt/o${i}`, UP))
  for (const i of [0, 1]) await startDownload(`HTTP download ${i}`, () => httpDownload(url, token, '/bkt/down.bin'))
  for (const i of [0, 1]) await startDownload(`SFTP download ${i}`, () => sftpDownload(sftp, '/bkt/down.bin'))
  for (const i of [0, 1]) await startDownload(`S3 ranged GET ${i}`, () => s3Get(s3, key, '/bkt/down.bin', `bytes=${MiB}-`), big.subarray(MiB))
  t.equal(pool.stats.transfers, live.length, `${live.length} live transfers`)

  const killed = pool.threads[0]!
  await killed.terminate()

  const ends: Ended[] = await Promise.all(
    live.map(async (l) => {
      if (l.kind === 'down') return l.held.finish()
      await l.held.push(bodies.get(l.target)!.subarray(l.sent))
      return l.held.end()
    }),
  )
  live.forEach((l, i) => {
    const e = ends[i]!
    if (i % 2 === 0 && l.kind === 'down' && !l.name.startsWith('HTTP')) {
      // Read through a gateway's open file: it goes on from the other thread.
      t.ok(e.ok, `${l.name} (on the killed thread) goes on: ${e.status ?? ''} ${e.error ?? ''}`)
      t.ok(e.body?.equals(l.want), `${l.name} (on the killed thread): byte-exact`)
    } else if (i % 2 === 0) {
      t.notOk(e.ok, `${l.name} (on the killed thread) fails: ${e.status ?? ''} ${e.error ?? e.body?.toString().slice(0, 120) ?? ''}`)
      if (l.kind === 'up') t.equal(readFileSync(join(root, 'bkt', l.target), 'utf8'), `old ${l.target}`, `${l.name}: the old content stays`)
      if (l.kind === 'down') t.not(e.body?.length, l.want.length, `${l.name}: cut short`)
    } else {
      t.ok(e.ok, `${l.name} (on the other thread) finishes: ${e.status ?? ''} ${e.error ?? ''}`)
      if (l.kind === 'up') t.ok(readFileSync(join(root, 'bkt', l.target)).equals(bodies.get(l.target)!), `${l.name}: byte-exact`)
      else t.ok(e.body?.equals(l.want), `${l.name}: byte-exact`)
    }
  })

  await until('no temporary file left', () => tempUploads(root).length === 0).then(
    () => t.pass('no temporary file left'),
    () => t.fail(`temporary files left: ${tempUploads(root).join(', ')}`),
  )
  await until('the pool replaced the thread', () => pool.threads.length === 2 && !pool.threads.includes(killed))
  t.pass('the pool replaced the thread')

  // The next request on every door works.
  const again = randomBytes(2 * MiB)
  t.equal((await api(url, token)('POST', '/api/files/cat', { path: '/bkt/after-http' }, { body: again })).status, 200, 'HTTP upload after')
  await call(sftp.writeFile.bind(sftp), '/bkt/after-sftp', again)
  const put = await s3Put(s3, key, '/bkt/after-s3', again.length)
  await put.push(again)
  t.ok((await put.end()).ok, 'S3 upload after')
  const mcp = await connect(t, url, token, 'streamable')
  const w = await mcp.call('write', { path: '/bkt/after-mcp', content: again.toString('base64'), encoding: 'base64' })
  t.notOk(w.isError, `MCP write after: ${textOf(w)}`)
  for (const f of ['after-http', 'after-sftp', 'after-s3', 'after-mcp']) t.ok(readFileSync(join(root, 'bkt', f)).equals(again), `${f} byte-exact`)
  t.ok((await (await httpDownload(url, token, '/bkt/down.bin')).finish()).body?.equals(big), 'HTTP download after, byte-exact')
})

for (const backend of ['local', 'sftp'] as const) {
  t.test(`the only thread killed mid-upload (${backend} storage): its replacement removes the temporary file`, async (t) => {
    const storage = await userStorage(t, serverDir(t, 'worker-death'), backend)
    const { app, url } = await startTestServer(t, { workers: 1, connections: [storage.connection] })
    storage.mkdir('d')
    const token = ((await (await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: storage.connection.label }) })).json()) as { result: { authorization: string } }).result.authorization
    const dir = `${storage.userRoot === '/' ? '' : storage.userRoot}/d`
    const up = httpUpload(url, token, `${dir}/x.bin`)
    await up.push(randomBytes(MiB))
    await until('the upload live', () => app.pool.stats.transfers === 1 && tempUploads(storage.root).length === 1)
    await app.pool.threads[0]!.terminate()
    t.notOk((await up.end()).ok, 'the upload fails')
    await until('no temporary file left', () => tempUploads(storage.root).length === 0).then(
      () => t.pass('no temporary file left'),
      () => t.fail(`temporary files left: ${tempUploads(storage.root).join(', ')}`),
    )
    await until('a new thread', () => app.pool.threads.length === 1)
    t.equal((await api(url, token)('POST', '/api/files/cat', { path: `${dir}/y.txt` }, { body: 'y' })).status, 200, 'the next upload works')
    t.equal(readFileSync(join(storage.root, 'd', 'y.txt'), 'utf8'), 'y')
  })
}

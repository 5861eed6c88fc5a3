/**
 * A full pool answers at once with a clear 503 (and Retry-After) instead of queueing
 * without bound, and serves again as soon as capacity frees up. Tasks and transfers
 * are two lanes: a transfer held open by its client holds no task, so requests keep
 * being served beside it, and transfers have their own limit per thread.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5))
}

/** A download the client holds open after its first bytes. */
function held(url: string, token: string, path: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}/api/files/cat?path=${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.once('data', () => {
          res.pause()
          resolve(res)
        })
      })
      .on('error', reject)
  })
}

t.test('a full task queue answers 503 UNAVAILABLE, then recovers', async (t) => {
  // One worker, one task at a time, one waiting: a long rm plus one queued request fill it.
  const { app, url, dataDir } = await startTestServer(t, { workers: 1, tasks_per_worker: 1, max_queue: 1 })
  const token = await tmpSession(url, 'busy')
  const call = api(url, token)
  for (let d = 0; d < 50; d++) {
    const dir = join(dataDir, 'tmp', 'busy', 'tree', `d${d}`)
    await mkdir(dir, { recursive: true })
    await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(join(dir, `f${f}`), 'x')))
  }
  const rm = call('POST', '/api/files/rm', { path: '/tree' })
  await until(() => app.pool.stats.running === 1)
  const queued = call('GET', '/api/files/ls', { path: '/' }) // waits behind the rm
  await until(() => app.pool.stats.queued === 1)
  const refused = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(refused.status, 503, 'beyond the queue: 503')
  t.equal(refused.headers.get('retry-after'), '5', 'with Retry-After')
  t.match(await refused.json(), { status: 'error', code: 'UNAVAILABLE', message: /overloaded/ })
  t.equal((await rm).status, 200, 'the rm completes')
  t.equal((await queued).status, 200, 'the queued request was served once the task ended')
  t.equal((await call('GET', '/api/files/ls', { path: '/' })).status, 200, 'and new requests are served again')
})

t.test('a held transfer holds no task; transfers have their own limit', async (t) => {
  const { app, url, dataDir } = await startTestServer(t, { workers: 1, tasks_per_worker: 1, max_queue: 0, transfers_per_worker: 1 })
  const token = await tmpSession(url, 'busy')
  await mkdir(join(dataDir, 'tmp', 'busy'), { recursive: true })
  await writeFile(join(dataDir, 'tmp', 'busy', 'big.bin'), Buffer.alloc(32 * 1024 * 1024, 7))
  const call = api(url, token)
  const download = await held(url, token, '/big.bin')
  t.equal(app.pool.stats.transfers, 1, 'the download is a live transfer')
  t.equal(app.pool.stats.running, 0, 'and holds no task')
  t.equal((await call('GET', '/api/files/ls', { path: '/' })).status, 200, 'so a listing is served beside it')

  const refused = await call('POST', '/api/files/cat', { path: '/new.txt' }, { body: 'x' })
  t.equal(refused.status, 503, 'a second transfer on the full thread: 503')
  t.match(await refused.json(), { status: 'error', code: 'UNAVAILABLE' })
  const refusedDownload = await call('GET', '/api/files/cat', { path: '/big.bin' })
  t.equal(refusedDownload.status, 503, 'a second download too')
  await refusedDownload.arrayBuffer()
  t.equal((await call('GET', '/api/files/cat', { path: '/new.txt' })).status, 404, 'a small read is no transfer: answered')

  download.resume()
  await new Promise((r) => download.on('end', r))
  await until(() => app.pool.stats.transfers === 0)
  t.equal((await call('POST', '/api/files/cat', { path: '/new.txt' }, { body: 'x' })).status, 200, 'once it ended, transfers run again')
})

/**
 * A full pool answers at once with a clear 503 (and Retry-After) instead of queueing
 * without bound, and serves again as soon as capacity frees up.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

t.test('a full queue answers 503 UNAVAILABLE, then recovers', async (t) => {
  // One worker, one task at a time, one waiting: a held download plus one queued request fill it.
  const { app, url, dataDir } = await startTestServer(t, { workers: 1, tasks_per_worker: 1, max_queue: 1 })
  const token = await tmpSession(url, 'busy')
  await mkdir(join(dataDir, 'tmp', 'busy'), { recursive: true })
  await writeFile(join(dataDir, 'tmp', 'busy', 'big.bin'), Buffer.alloc(32 * 1024 * 1024, 7))
  const call = api(url, token)

  // A transfer the client holds open keeps its task running.
  const held = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http
      .get(`${url}/api/files/cat?path=/big.bin`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.once('data', () => {
          res.pause()
          resolve(res)
        })
      })
      .on('error', reject)
  })
  const queued = call('GET', '/api/files/ls', { path: '/' }) // waits behind the transfer
  // Until the pool holds both (the transfer running, the listing queued): no sleep to hope for it.
  while (app.pool.stats.running < 2) await new Promise((r) => setTimeout(r, 5))
  const refused = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(refused.status, 503, 'beyond the queue: 503')
  t.equal(refused.headers.get('retry-after'), '5', 'with Retry-After')
  t.match(await refused.json(), { status: 'error', code: 'UNAVAILABLE', message: /overloaded/ })

  held.resume()
  await new Promise((r) => held.on('end', r))
  t.equal((await queued).status, 200, 'the queued request was served once the transfer ended')
  t.equal((await call('GET', '/api/files/ls', { path: '/' })).status, 200, 'and new requests are served again')
})

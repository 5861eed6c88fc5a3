/**
 * One-shot operations stop when their caller leaves: a recursive rm of a big tree
 * whose client disconnects is cancelled in the worker (by a `cancel` message, not by
 * killing the thread), so the rest of the tree stays and the service keeps serving.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

async function countFiles(dir: string): Promise<number> {
  let n = 0
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) if (e.isFile()) n++
  return n
}

t.test('a recursive rm stops when its client disconnects', async (t) => {
  const { app, url, dataDir } = await startTestServer(t, { workers: 1 })
  const token = await tmpSession(url, 'cancel')
  const tree = join(dataDir, 'tmp', 'cancel', 'tree')
  const DIRS = 100
  const FILES = 100
  for (let d = 0; d < DIRS; d++) {
    const dir = join(tree, `d${d}`)
    await mkdir(dir, { recursive: true })
    await Promise.all(Array.from({ length: FILES }, (_, f) => writeFile(join(dir, `f${f}`), 'x')))
  }
  const total = DIRS * FILES

  const req = http.request(`${url}/api/files/rm?path=/tree`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  req.on('error', () => {})
  req.end()
  // Once the rm is running in the worker and has made progress, the client leaves.
  while (app.pool.stats.running < 1 || (await countFiles(tree)) === total) await new Promise((r) => setTimeout(r, 5))
  req.destroy()

  // The worker stops: the count settles, well before the tree is gone.
  let last = await countFiles(tree)
  for (let stable = 0; stable < 3; ) {
    await new Promise((r) => setTimeout(r, 300))
    const now = await countFiles(tree)
    stable = now === last ? stable + 1 : 0
    last = now
  }
  t.ok(last > 0 && last < total, `the rm stopped midway (${last} of ${total} files left)`)
  while (app.pool.stats.running > 0) await new Promise((r) => setTimeout(r, 10))
  t.pass('the task ended')
  const ls = await api(url, token)('GET', '/api/files/ls', { path: '/tree/' })
  t.equal(ls.status, 200, 'the service keeps serving on the same thread')
  t.equal(app.pool.threads.length, 1, 'no thread was killed to cancel it')
})

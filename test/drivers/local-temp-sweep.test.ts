/**
 * The hidden file of an upload that a whole-process crash cut off (issue 23, item 20):
 * filegate killed with SIGKILL mid-upload leaves `.filegate-<id>.part` beside the
 * target; the next filegate sweeps it once it is old enough, and never a file a live
 * upload is writing, however old its last change looks.
 */
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { existsSync } from 'node:fs'
import { mkdir, readFile, readdir, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createLocalDriver } from '../../workers/drivers/local.js'
import { sweepTempUploads } from '../../workers/drivers/local/temp-sweep.js'
import { tmpSession } from '../helpers/filegate.js'
import { spawnFilegate } from '../helpers/spawn-filegate.js'

const TEMP = /^\.filegate-[A-Za-z0-9_-]+\.part$/
const HOUR = 3_600_000

/** Every hidden upload file under `dir` (absolute paths), links not followed. */
async function temps(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile() && TEMP.test(e.name)) out.push(join(e.parentPath, e.name))
  return out
}

async function until<T>(what: string, get: () => Promise<T | null>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await get()
    if (v !== null) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const backdate = (file: string, ms: number) => utimes(file, new Date(Date.now() - ms), new Date(Date.now() - ms))

t.test('filegate killed mid-upload: the hidden file it left is swept at the next start, once old enough; a fresh one is kept', async (t) => {
  const dataDir = t.testdir()
  const first = await spawnFilegate({ dataDir, workers: 1 })
  t.teardown(() => first.child.kill('SIGKILL'))
  const token = await tmpSession(first.url, 'crash')
  // An upload that sends 1 MiB, then waits: its hidden file is being written when the process dies.
  const u = new URL(`${first.url}/api/files/cat?path=/docs/big.bin`)
  const req = request({ host: u.hostname, port: u.port, method: 'POST', path: u.pathname + u.search, headers: { authorization: `Bearer ${token}`, 'content-length': String(64 * 1024 * 1024) } })
  req.on('error', () => {})
  req.write(randomBytes(1024 * 1024))
  // `/docs` does not exist: the upload goes to the top folder of the space otherwise.
  const [left] = await until('the hidden upload file', async () => {
    const found = await temps(dataDir)
    return found.length > 0 ? found : null
  })
  first.child.kill('SIGKILL')
  await new Promise((r) => first.child.once('exit', r))
  t.ok(existsSync(left!), 'the crash left the hidden file beside the target')

  // An hour and more later (its clock turned back), and one that could be another process's live upload.
  await backdate(left!, 2 * HOUR)
  const fresh = join(left!, '..', '.filegate-freshlyWritten1.part')
  await writeFile(fresh, 'maybe live')

  const second = await spawnFilegate({ dataDir, workers: 1 })
  t.teardown(() => second.child.kill('SIGKILL'))
  const again = await tmpSession(second.url, 'crash')
  const ls = await fetch(`${second.url}/api/files/ls?path=/`, { headers: { authorization: `Bearer ${again}` } })
  t.equal(ls.status, 200, 'the space is used again')
  await until('the sweep', async () => (existsSync(left!) ? null : true))
  t.pass('the old hidden file is swept')
  t.ok(existsSync(fresh), 'a recent one is kept: a live upload may be writing it')
  t.notOk(existsSync(join(left!, '..', 'big.bin')), 'the cut upload never appeared')
})

t.test('a live upload is never swept, however old its file looks; debris is, links are not followed', async (t) => {
  const base = t.testdir({ root: { sub: {} }, outside: {} })
  const root = join(base, 'root')
  await writeFile(join(base, 'outside', '.filegate-outsideFile1.part'), 'not ours')
  await backdate(join(base, 'outside', '.filegate-outsideFile1.part'), 2 * HOUR)
  await symlink(join(base, 'outside'), join(root, 'linked'))
  await writeFile(join(root, 'sub', '.filegate-oldDebris001.part'), 'debris')
  await backdate(join(root, 'sub', '.filegate-oldDebris001.part'), 2 * HOUR)
  await writeFile(join(root, 'sub', 'notes.part'), 'a user file of that extension')
  await backdate(join(root, 'sub', 'notes.part'), 2 * HOUR)

  const driver = await createLocalDriver({ root, tempSweep: false })
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  async function* body(): AsyncIterable<Uint8Array> {
    yield Buffer.from('first half, ')
    await held
    yield Buffer.from('second half')
  }
  await mkdir(join(root, 'up'))
  const ctx = { requestId: 't', signal: new AbortController().signal }
  const writing = driver.write(ctx, '/up/file.txt', body())
  const [live] = await until('the live upload file', async () => {
    const found = (await temps(join(root, 'up'))).filter((f) => !f.includes('Debris'))
    return found.length > 0 ? found : null
  })
  await backdate(live!, 2 * HOUR) // as if its client had been silent for two hours

  t.equal(await sweepTempUploads(await realRoot(root), HOUR), 1, 'one file swept')
  t.notOk(existsSync(join(root, 'sub', '.filegate-oldDebris001.part')), 'the debris')
  t.ok(existsSync(live!), 'not the live upload')
  t.ok(existsSync(join(base, 'outside', '.filegate-outsideFile1.part')), 'nothing behind a link')
  t.ok(existsSync(join(root, 'sub', 'notes.part')), 'nothing of another name')
  release()
  await writing
  t.equal(await readFile(join(root, 'up', 'file.txt'), 'utf8'), 'first half, second half', 'the live upload completes')
  t.same(await temps(join(root, 'up')), [], 'and leaves no hidden file')
})

const realRoot = async (p: string) => (await import('node:fs/promises')).realpath(p)

/**
 * Writes into a local folder over HTTP (issue 10, items 4 and 6):
 * - an upload whose folder is moved or removed while the body arrives fails
 *   cleanly (404) and leaves its hidden temporary file nowhere; a folder holding
 *   hidden temporary files (an upload in progress, a crash's leftover) can still
 *   be removed;
 * - a dangling symlink that leads outside the root is refused (403) by an upload
 *   and by an overwriting mv, and stays as it was.
 */
import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { startUpload } from '../helpers/transfers.js'

const HALF = 1024 * 1024

async function setup(t: Test) {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  fs.mkdirSync(home, { recursive: true })
  return { url, token, home, dataDir, call: api(url, token) }
}

/** Every entry under `dir`, hidden ones included, relative and sorted. */
function entriesUnder(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      out.push(relative(dir, join(d, e.name)))
      if (e.isDirectory()) walk(join(d, e.name))
    }
  }
  walk(dir)
  return out.sort()
}

const partsUnder = (dir: string): string[] => entriesUnder(dir).filter((p) => /\.filegate-.*\.part$/.test(p))

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}


/** The size of the hidden temporary file in `dir` (0 while there is none). */
function partSize(dir: string): number {
  const name = fs.existsSync(dir) ? fs.readdirSync(dir).find((n) => n.endsWith('.part')) : undefined
  return name === undefined ? 0 : fs.statSync(join(dir, name)).size
}

for (const [what, change] of [
  ['moved', 'mv /pr_x/ /pr_y/'],
  ['removed', 'rm /pr_x/'],
] as const) {
  t.test(`an upload whose folder is ${what} meanwhile fails cleanly and leaves nothing behind`, async (t) => {
    const { url, token, home, call } = await setup(t)
    const body = randomBytes(2 * HALF)
    const up = startUpload(url, token, '/pr_x/f.bin', { 'content-length': 2 * HALF })
    await up.send(body.subarray(0, HALF))
    await until('the first half on disk', () => partSize(join(home, 'pr_x')) === HALF)

    const res =
      what === 'moved' ? await call('POST', '/api/files/mv', { from: '/pr_x/', to: '/pr_y/' }) : await call('POST', '/api/files/rm', { path: '/pr_x/' })
    t.equal(res.status, 200, `${change} during the upload: 200`)

    await up.send(body.subarray(HALF))
    up.req.end()
    const answer = await up.response
    t.equal(answer.status, 404, `the upload answers 404 (${answer.body.trim()})`)
    t.match(JSON.parse(answer.body), { status: 'error', code: 'NOT_FOUND' })
    t.same(partsUnder(home), [], 'no temporary file anywhere')
    t.same(entriesUnder(home), what === 'moved' ? ['pr_y'] : [], 'nothing else either')

    if (what === 'moved') {
      const ls = await call('GET', '/api/files/ls', { path: '/pr_y/' })
      t.match(await ls.json(), { status: 'ok', results: [] }, 'the moved folder lists as empty')
      t.equal((await call('POST', '/api/files/rm', { path: '/pr_y/' })).status, 200, 'and can be removed')
      t.same(entriesUnder(home), [], 'it is gone')
    }
  })
}

t.test('a hidden temporary file left by a crash does not make its folder undeletable', async (t) => {
  const { home, call } = await setup(t)
  fs.mkdirSync(join(home, 'crashed', 'deeper'), { recursive: true })
  fs.writeFileSync(join(home, 'crashed', '.filegate-left0ver.part'), 'half an upload')
  fs.writeFileSync(join(home, 'crashed', 'deeper', '.filegate-other.part'), 'another')
  t.match(await (await call('GET', '/api/files/ls', { path: '/crashed/' })).json(), { status: 'ok', results: [{ name: 'deeper' }] })
  t.equal((await call('POST', '/api/files/rm', { path: '/crashed/' })).status, 200, 'rm of the folder: 200')
  t.same(entriesUnder(home), [], 'the folder and its hidden files are gone')
})

t.test('a dangling symlink that leads outside is refused (403) by an upload and by an overwriting mv', async (t) => {
  const { home, dataDir, call } = await setup(t)
  const outside = join(dataDir, 'outside')
  fs.mkdirSync(outside)
  fs.writeFileSync(join(outside, 'kept.txt'), 'outside')
  const links: Record<string, string> = {
    '/dangling-abs': join(outside, 'missing.txt'),
    '/dangling-rel': relative(home, join(outside, 'missing-too.txt')),
    '/dangling-dir': join(outside, 'missing-dir', 'x.txt'),
  }
  for (const [p, target] of Object.entries(links)) fs.symlinkSync(target, join(home, p))
  fs.writeFileSync(join(home, 'mine.txt'), 'mine')

  for (const [p, target] of Object.entries(links)) {
    for (const [what, send] of [
      ['upload', () => call('POST', '/api/files/cat', { path: p }, { body: 'replaced' })],
      ['mv overwrite=true', () => call('POST', '/api/files/mv', { from: '/mine.txt', to: p, overwrite: 'true' })],
      ['touch', () => call('POST', '/api/files/touch', { path: p })],
    ] as const) {
      const res = await send()
      t.equal(res.status, 403, `${what} onto ${p}: 403`)
      t.match(await res.json(), { status: 'error', code: 'FORBIDDEN' })
      t.equal(fs.readlinkSync(join(home, p)), target, `${p} is still the same link`)
    }
  }
  t.equal(fs.readFileSync(join(home, 'mine.txt'), 'utf8'), 'mine', 'the mv source stayed')
  t.same(fs.readdirSync(outside), ['kept.txt'], 'nothing created outside')
  t.same(partsUnder(home), [], 'no temporary file left')
})

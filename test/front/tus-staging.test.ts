/**
 * @module test/front/tus-staging.test
 * What resumable uploads may stage on the server's disk (issue 23, items 8 and 17),
 * driven by tus-js-client and plain fetch against a real filegate:
 * - many uploads left unfinished from one tmp session no longer fill the data folder:
 *   the login's limit answers 413 in the API's envelope, before the body; other users
 *   are served; what was refused leaves nothing; the total and the disk's reserve
 *   answer 507, and the state store keeps working;
 * - a target behind a link that leads outside the storage is refused at creation (as
 *   cat refuses it), before any byte is staged.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { Upload, type UploadOptions } from 'tus-js-client'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const TUS = { 'tus-resumable': '1.0.0' }
const MiB = 1024 * 1024

function tusUpload(data: Buffer, options: UploadOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload: Upload = new Upload(data, { retryDelays: null, storeFingerprintForResuming: false, ...options, onSuccess: () => resolve(upload.url!), onError: reject })
    upload.start()
  })
}

/** The HTTP status and body of a tus-js-client failure. */
function answerOf(err: unknown): { status: number; body: string } {
  const res = (err as { originalResponse?: { getStatus(): number; getBody(): string } }).originalResponse
  return res ? { status: res.getStatus(), body: res.getBody() } : { status: 0, body: String(err) }
}

/** An upload of `length` bytes, of which all but the last byte are sent: it stays staged. */
async function leaveStaged(url: string, auth: Record<string, string>, path: string, length: number): Promise<{ status: number; json: Record<string, unknown> | null; at?: string }> {
  const created = await fetch(`${url}/api/files/tus?path=${encodeURIComponent(path)}`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': String(length) } })
  if (created.status !== 201) return { status: created.status, json: (await created.json()) as Record<string, unknown> }
  const at = new URL(created.headers.get('location')!, url).href
  const res = await fetch(at, { method: 'PATCH', headers: { ...TUS, ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: randomBytes(length - 1) })
  const text = await res.text()
  return { status: res.status, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : null, at }
}

const sizes = async (dir: string) => {
  let n = 0
  for (const name of await readdir(dir)) n += (await readFile(join(dir, name))).length
  return n
}

t.test('unfinished uploads from one tmp session stop at the login limit with 413; other users are served; the total and the reserve answer 507', async (t) => {
  const limits = { per_login_bytes: 4 * MiB, per_share_bytes: 4 * MiB, total_bytes: 7 * MiB, reserve_bytes: 0 }
  const { url, dataDir } = await startTestServer(t, { staging_limits: limits })
  const alice = { authorization: `Bearer ${await tmpSession(url, 'alice')}` }

  // The attack: upload after upload left one byte short, as fast as the client can.
  const answers: { status: number; json: Record<string, unknown> | null; at?: string }[] = []
  for (let i = 0; i < 40; i++) {
    const r = await leaveStaged(url, alice, `/junk/${i}.bin`, MiB)
    answers.push(r)
    if (r.status !== 204) break
  }
  const refused = answers[answers.length - 1]!
  t.equal(answers.length, 5, 'four uploads of 1 MiB are staged, the fifth is refused')
  t.equal(refused.status, 413, 'with 413')
  t.match(refused.json, { status: 'error', code: 'TOO_LARGE', message: /this login's staged uploads would be over their limit \(4194304 bytes\)/ }, "in the API's envelope, saying which limit")
  t.ok((await sizes(join(dataDir, 'tus'))) <= limits.per_login_bytes, 'what is staged stays within the limit')
  const big = await tusUpload(randomBytes(5 * MiB), { endpoint: `${url}/api/files/tus`, headers: alice, metadata: { path: '/big.bin' } }).then(
    () => ({ status: 201, body: '' }),
    answerOf,
  )
  t.equal(big.status, 413, 'tus-js-client: an upload longer than what is left is refused at creation')
  t.match(big.body, /"code":"TOO_LARGE"/)

  // Another user is served meanwhile, by the real client.
  const bobToken = await tmpSession(url, 'bob')
  const bob = { authorization: `Bearer ${bobToken}` }
  const data = randomBytes(2 * MiB)
  await tusUpload(data, { endpoint: `${url}/api/files/tus`, headers: bob, metadata: { path: '/mine.bin' }, chunkSize: MiB })
  const got = await api(url, bobToken)('GET', '/api/files/cat', { path: '/mine.bin' })
  t.ok(Buffer.from(await got.arrayBuffer()).equals(data), "another user's upload is stored, byte-exact")

  // The total: alice holds 4 MiB, carol may stage 3 MiB more, then the server is full.
  const carol = { authorization: `Bearer ${await tmpSession(url, 'carol')}` }
  t.equal((await leaveStaged(url, carol, '/c1.bin', 2 * MiB)).status, 204, 'carol stages within the total')
  const full = await leaveStaged(url, carol, '/c2.bin', 2 * MiB)
  t.equal(full.status, 507, 'past the total: 507')
  t.match(full.json, { status: 'error', code: 'INSUFFICIENT_STORAGE', message: /room for staged uploads is full/ })

  // Terminating gives the room back: nothing is left behind.
  for (const r of answers) if (r.at && r.status === 204) t.equal((await fetch(r.at, { method: 'DELETE', headers: { ...TUS, ...alice } })).status, 204)
  t.equal((await leaveStaged(url, alice, '/again.bin', 3 * MiB)).status, 204, 'alice may stage again once her uploads are terminated')
  const left = await readdir(join(dataDir, 'tus'))
  for (const r of answers) if (r.at) t.notOk(left.includes(r.at.split('/').pop()!), 'a terminated upload leaves nothing')
  t.equal(await sizes(join(dataDir, 'tus')), 2 * MiB - 1 + (3 * MiB - 1), "what is staged is carol's and alice's open uploads, no byte of a refused one")
})

t.test("the disk's reserve: staging is refused with 507 before it could eat the state store's space; the store keeps working", async (t) => {
  // A reserve larger than any disk: every staged byte would cut into it.
  const { url, dataDir } = await startTestServer(t, { staging_limits: { reserve_bytes: 2 ** 52 } })
  const alice = { authorization: `Bearer ${await tmpSession(url, 'alice')}` }
  const r = await leaveStaged(url, alice, '/x.bin', MiB)
  t.equal(r.status, 507)
  t.match(r.json, { status: 'error', code: 'INSUFFICIENT_STORAGE', message: /reserve is kept/ })
  const viaClient = await tusUpload(randomBytes(MiB), { endpoint: `${url}/api/files/tus`, headers: alice, metadata: { path: '/y.bin' } }).then(() => 0, (e) => answerOf(e).status)
  t.equal(viaClient, 507, 'tus-js-client gets 507 too')
  const withBody = await fetch(`${url}/api/files/tus?path=/z.bin`, {
    method: 'POST',
    headers: { ...TUS, ...alice, 'upload-length': String(MiB), 'content-type': 'application/offset+octet-stream' },
    body: randomBytes(MiB),
  })
  t.equal(withBody.status, 507, 'creation-with-upload: 507')
  t.match(await withBody.json(), { code: 'INSUFFICIENT_STORAGE' })
  t.equal(await sizes(join(dataDir, 'tus')), 0, 'not a byte staged')
  t.ok((await tmpSession(url, 'bob')).length > 0, 'logins (state store writes) still work')
  const small = await api(url, await tmpSession(url, 'carol'))('POST', '/api/files/cat', { path: '/small.txt' }, { body: 'written directly' })
  t.equal(small.status, 200, 'a plain upload, which stages nothing here, still works')
})

t.test('a target behind a link that leads outside is refused at creation, before the body is staged', async (t) => {
  const base = t.testdir({ root: { inside: {} }, outside: { 'keep.txt': 'outside' } })
  const root = join(base, 'root')
  await symlink(join(base, 'outside'), join(root, 'out'))
  await symlink(join(base, 'outside', 'keep.txt'), join(root, 'escape.txt'))
  const { url, dataDir } = await startTestServer(t, { data_dir: join(base, 'data'), connections: [{ label: 'files', type: 'local', path: root }] })
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'local' }) })
  const token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  const auth = { authorization: `Bearer ${token}` }
  const endpoint = `${url}/api/files/tus`
  for (const path of ['/out/new.txt', '/escape.txt']) {
    const cat = await api(url, token)('POST', '/api/files/cat', { path }, { body: 'x' })
    const answer = await tusUpload(randomBytes(3 * MiB), { endpoint, headers: auth, metadata: { path } }).then(() => ({ status: 201, body: '' }), answerOf)
    t.equal(answer.status, cat.status, `${path}: refused with cat's status (${cat.status})`)
    t.match(answer.body, /"code":"FORBIDDEN"/, "in the API's envelope")
  }
  t.same(await readdir(join(dataDir, 'tus')), [], 'nothing was staged')
  t.same(await readdir(join(base, 'outside')), ['keep.txt'], 'nothing appeared outside')
  t.equal(await readFile(join(base, 'outside', 'keep.txt'), 'utf8'), 'outside', 'the file outside is untouched')
  await mkdir(join(root, 'inside', 'sub'))
  await writeFile(join(root, 'inside', 'sub', 'old.txt'), 'old')
  await tusUpload(Buffer.from('new'), { endpoint, headers: auth, metadata: { path: '/inside/sub/old.txt' } })
  t.equal(await readFile(join(root, 'inside', 'sub', 'old.txt'), 'utf8'), 'new', 'a target inside is still replaced')
})

t.test('uploads staged before a restart still count against their login', async (t) => {
  const dataDir = t.testdir()
  const limits = { per_login_bytes: 3 * MiB, reserve_bytes: 0 }
  const first = await startTestServer(t, { data_dir: dataDir, staging_limits: limits })
  const token = await tmpSession(first.url, 'alice')
  const alice = { authorization: `Bearer ${token}` }
  const staged = await leaveStaged(first.url, alice, '/a.bin', 2 * MiB)
  t.equal(staged.status, 204, '2 MiB staged')
  await first.app.close(0)

  const second = await startTestServer(t, { data_dir: dataDir, staging_limits: limits })
  const over = await leaveStaged(second.url, alice, '/b.bin', 2 * MiB)
  t.equal(over.status, 413, 'after the restart, 2 MiB more is over the 3 MiB limit')
  const path = new URL(staged.at!).pathname
  const last = await fetch(`${second.url}${path}`, { method: 'PATCH', headers: { ...TUS, ...alice, 'upload-offset': String(2 * MiB - 1), 'content-type': 'application/offset+octet-stream' }, body: 'z' })
  t.equal(last.status, 204, 'the staged upload is finished on the new process')
  t.equal((await leaveStaged(second.url, alice, '/c.bin', 2 * MiB)).status, 204, 'and its room is given back')
})

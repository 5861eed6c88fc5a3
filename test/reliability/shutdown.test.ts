/**
 * SIGTERM to a spawned filegate (dist/front/main.js) while transfers run on every door:
 * HTTP uploads, a download and a zip; SFTP uploads and a download; an S3 multipart
 * upload between parts and another during its Complete; a tus PATCH; an MCP write.
 * Transfers whose client goes on finish within `shutdown_grace_seconds`; those whose
 * client stalls are cut at the deadline and commit nothing (old content, no `.part`);
 * the process exits 0 within the grace. Restarted on the same data folder, it serves at
 * once: the tus upload resumes from the offset HEAD tells, the multipart uploads are
 * listed with their parts and complete.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, ListPartsCommand, UploadPartCommand } from '@aws-sdk/client-s3'
import t, { type Test } from 'tap'
import { connect, textOf } from '../gateways/mcp/client.js'
import { ssh2Sftp } from '../gateways/sftp/clients.js'
import { type Ended, type S3Key, httpDownload, httpUpload, s3Put, sftpDownload, sftpUpload } from '../helpers/held-transfers.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { tempUploads } from '../helpers/small-disk.js'
import { type SpawnedFilegate, spawnFilegate } from '../helpers/spawn-filegate.js'
import { serverDir } from '../servers/process.js'
import { s3Client } from '../helpers/s3-client.js'

const MiB = 1024 * 1024
/**
 * The shutdown grace of the transfers test: what the clients that go on must finish in
 * (32 MiB over HTTP, 1 MiB over SFTP, a zip, the rest of two uploads), which a machine
 * under stress-ng --cpu 2 did not in 6 s; the stalled clients hold the test this long.
 */
const GRACE_S = 20

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

interface Running extends SpawnedFilegate {
  readonly sftpPort: number
  readonly s3: string
}

/** A root and a data folder, a config with a local connection, and a way to start filegate on them (SFTP and S3 on free ports). */
function setup(t: Test, graceS: number) {
  const root = serverDir(t, 'shutdown-root')
  const dataDir = serverDir(t, 'shutdown-data')
  mkdirSync(join(root, 'bkt'))
  const config = join(dataDir, '..', `${dataDir.split('/').pop()}.json`)
  writeFileSync(config, JSON.stringify({ admin_password: ADMIN_PASSWORD, shutdown_grace_seconds: graceS, connections: [{ label: 'disk', type: 'local', path: root, public: true }] }))
  t.teardown(() => execFileSync('rm', ['-f', config]))
  const start = async (): Promise<Running> => {
    const f = await spawnFilegate({ dataDir, workers: 2, args: ['--config', config], env: { FILEGATE_SFTP_PORT: '0', FILEGATE_S3_PORT: '0' } })
    t.teardown(() => void f.child.kill('SIGKILL'))
    const port = (gw: string) => Number(new RegExp(`"${gw} gateway listening".*?"address":"127\\.0\\.0\\.1:(\\d+)"`).exec(f.output())![1])
    return { ...f, sftpPort: port('sftp'), s3: `http://127.0.0.1:${port('s3')}` }
  }
  const exited = (f: Running) => new Promise<{ code: number | null }>((resolve) => f.child.once('exit', (code) => resolve({ code })))
  /** The gateway user alice (root: the whole connection) and her S3 key. */
  const alice = async (f: Running): Promise<S3Key> => {
    const adminAuth = { authorization: `Bearer ${await adminToken(f.url)}` }
    t.equal((await fetch(`${f.url}/admin/api/users`, { method: 'POST', headers: adminAuth, body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: 'disk', root: '/' }) })).status, 200, 'gateway user')
    const k = ((await (await fetch(`${f.url}/admin/api/users/alice/s3-keys`, { method: 'POST', headers: adminAuth })).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
    return { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }
  }
  return { root, dataDir, start, exited, alice }
}

t.test('SIGTERM during transfers on every door', async (t) => {
  const { root, dataDir, start, exited, alice } = setup(t, GRACE_S)
  mkdirSync(join(root, 'bkt', 'zipme'))
  const down = randomBytes(32 * MiB)
  writeFileSync(join(root, 'bkt', 'down.bin'), down)
  const small = randomBytes(MiB) // ssh2's read stream asks for 64 KiB at a time: a smaller file for it, done well within the grace on a loaded machine
  writeFileSync(join(root, 'bkt', 'small.bin'), small)
  for (let i = 0; i < 4; i++) writeFileSync(join(root, 'bkt', 'zipme', `f${i}.bin`), randomBytes(8 * MiB))

  let fg = await start()
  const key = await alice(fg)
  const client = (endpoint: string) => s3Client(t, endpoint, key, { maxAttempts: 1 })
  const newToken = async (url: string) => ((await (await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })).json()) as { result: { authorization: string } }).result.authorization
  const token = await newToken(fg.url)
  const tusHeaders = () => ({ authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' })

  // Before the signal. Uploads over old files; a body each, part sent.
  const old = (name: string) => `old ${name}`
  const body = new Map<string, Buffer>()
  for (const name of ['h-go', 'h-stall', 's-go', 's-stall', 'm-write']) {
    writeFileSync(join(root, 'bkt', name), old(name))
    body.set(name, randomBytes(4 * MiB))
  }
  const half = (name: string) => body.get(name)!.subarray(0, 2 * MiB)
  const rest = (name: string) => body.get(name)!.subarray(2 * MiB)
  const hGo = httpUpload(fg.url, token, '/bkt/h-go')
  const hStall = httpUpload(fg.url, token, '/bkt/h-stall')
  await hGo.push(half('h-go'))
  await hStall.push(half('h-stall'))
  const { sftp } = await ssh2Sftp(t, { port: fg.sftpPort, user: 'alice', password: 'alice-password-1' })
  const sGo = sftpUpload(sftp, '/bkt/s-go')
  const sStall = sftpUpload(sftp, '/bkt/s-stall')
  await sGo.push(half('s-go'))
  await sStall.push(half('s-stall'))
  const hDown = await httpDownload(fg.url, token, '/bkt/down.bin')
  const zip = await httpDownload(fg.url, token, '/bkt/zipme/', 'zip')
  const sDown = await sftpDownload(sftp, '/bkt/small.bin')

  const s3 = client(fg.s3)
  const part = (n: number) => Buffer.alloc(5 * MiB, n)
  // Between parts: part 1 in, part 2 after the restart.
  const between = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp-between' }))
  const p1 = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp-between', UploadId: between.UploadId!, PartNumber: 1, Body: part(1) }))
  // During Complete: two parts in, Complete sent with the signal.
  const during = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp-during' }))
  const d1 = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp-during', UploadId: during.UploadId!, PartNumber: 1, Body: part(1) }))
  const d2 = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp-during', UploadId: during.UploadId!, PartNumber: 2, Body: part(2) }))
  const duringParts = [{ PartNumber: 1, ETag: d1.ETag! }, { PartNumber: 2, ETag: d2.ETag! }]

  // tus: an upload whose PATCH is in flight (its client stalls) at the signal.
  const tusBody = randomBytes(4 * MiB)
  const created = await fetch(`${fg.url}/api/files/tus/?path=/bkt/t.bin`, { method: 'POST', headers: { ...tusHeaders(), 'upload-length': String(tusBody.length) } })
  t.equal(created.status, 201, 'tus upload created')
  const tusId = /\/api\/files\/tus\/([0-9a-f]+)/.exec(created.headers.get('location')!)![1]!
  let tusCtrl!: ReadableStreamDefaultController<Uint8Array>
  const tusPatch = fetch(`${fg.url}/api/files/tus/${tusId}`, {
    method: 'PATCH',
    headers: { ...tusHeaders(), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body: new ReadableStream<Uint8Array>({ start: (c) => void (tusCtrl = c) }),
    duplex: 'half',
  } as RequestInit).then((r) => r.status, () => 0)
  tusCtrl.enqueue(tusBody.subarray(0, MiB))

  const mcp = await connect(t, fg.url, token, 'streamable')

  // The signal, with a Complete and an MCP write on their way.
  const complete = s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp-during', UploadId: during.UploadId!, MultipartUpload: { Parts: duringParts } })).then(() => true, () => false)
  const mcpWrite = mcp.call('write', { path: '/bkt/m-write', content: body.get('m-write')!.toString('base64'), encoding: 'base64' }).then((r) => r, (e: Error) => ({ isError: true, content: [{ type: 'text' as const, text: e.message }] }))
  const exit = exited(fg)
  const signalled = Date.now()
  fg.child.kill('SIGTERM')
  await until('the server shuts down', () => fg.output().includes('"shutting down"'))

  // Clients that go on finish; the stalled ones are cut at the deadline.
  const trace = <T>(what: string, p: Promise<T>) => p.then((v) => (t.comment(`${what}: done`), v))
  const [hGoEnd, sGoEnd, hDownEnd, zipEnd, sDownEnd] = await Promise.all([
    trace('hGo', hGo.push(rest('h-go')).then(() => hGo.end())),
    trace('sGo', sGo.push(rest('s-go')).then(() => sGo.end())),
    trace('hDown', hDown.finish()),
    trace('zip', zip.finish()),
    trace('sDown', sDown.finish()),
  ])
  const [hStallEnd, sStallEnd, completed, mcpResult, tusStatus, { code }] = await Promise.all([trace('hStall', hStall.ended), trace('sStall', sStall.ended), trace('complete', complete), trace('mcp', mcpWrite), trace('tus', tusPatch), trace('exit', exit)])
  const total = Date.now() - signalled

  t.equal(code, 0, 'exit code 0')
  t.ok(total < GRACE_S * 1000 + 2000, `exited within the grace (${GRACE_S} s): ${total} ms after SIGTERM`)
  const finished = (what: string, e: Ended) => t.ok(e.ok, `${what} finishes: ${e.status ?? ''} ${e.error ?? ''}`)
  finished('HTTP upload', hGoEnd)
  t.ok(readFileSync(join(root, 'bkt', 'h-go')).equals(body.get('h-go')!), 'HTTP upload: byte-exact')
  finished('SFTP upload', sGoEnd)
  t.ok(readFileSync(join(root, 'bkt', 's-go')).equals(body.get('s-go')!), 'SFTP upload: byte-exact')
  finished('HTTP download', hDownEnd)
  t.ok(hDownEnd.body?.equals(down), 'HTTP download: byte-exact')
  finished('SFTP download', sDownEnd)
  t.ok(sDownEnd.body?.equals(small), 'SFTP download: byte-exact')
  finished('zip', zipEnd)
  const zipFile = join(dataDir, 'downloaded.zip')
  writeFileSync(zipFile, zipEnd.body ?? Buffer.alloc(0))
  t.doesNotThrow(() => execFileSync('unzip', ['-tq', zipFile], { stdio: 'pipe' }), 'zip: a whole archive (unzip -t)')
  execFileSync('rm', ['-f', zipFile])
  t.notOk(hStallEnd.ok, 'stalled HTTP upload: cut')
  t.notOk(sStallEnd.ok, 'stalled SFTP upload: cut')
  for (const name of ['h-stall', 's-stall']) t.equal(readFileSync(join(root, 'bkt', name), 'utf8'), old(name), `${name}: old content`)
  const mcpFile = readFileSync(join(root, 'bkt', 'm-write'))
  if (mcpResult.isError) t.equal(mcpFile.toString(), old('m-write'), `MCP write failed (${textOf(mcpResult as never)}): old content`)
  else t.ok(mcpFile.equals(body.get('m-write')!), 'MCP write finished: byte-exact')
  t.not(tusStatus, 204, 'the stalled tus PATCH did not complete')
  t.strictSame(tempUploads(root), [], 'no temporary file in the root')
  t.notOk(existsSync(join(root, 'bkt', 't.bin')), 'no tus target yet')
  if (completed) t.ok(readFileSync(join(root, 'bkt', 'mp-during')).equals(Buffer.concat([part(1), part(2)])), 'Complete during the signal finished: byte-exact')
  else t.notOk(existsSync(join(root, 'bkt', 'mp-during')), 'Complete during the signal failed: no object')

  // Restart on the same data folder.
  const restarted = Date.now()
  fg = await start()
  t.ok(true, `restarted, listening after ${Date.now() - restarted} ms`)
  // The same session token: a tus upload belongs to the credential that created it.
  const head = await fetch(`${fg.url}/api/files/tus/${tusId}`, { method: 'HEAD', headers: tusHeaders() })
  t.equal(head.status, 200, 'tus HEAD after the restart')
  const offset = Number(head.headers.get('upload-offset'))
  t.ok(offset >= 0 && offset <= MiB, `tus offset kept: ${offset}`)
  const patch = await fetch(`${fg.url}/api/files/tus/${tusId}`, { method: 'PATCH', headers: { ...tusHeaders(), 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: tusBody.subarray(offset) })
  t.equal(patch.status, 204, 'tus PATCH resumes')
  t.ok(readFileSync(join(root, 'bkt', 't.bin')).equals(tusBody), 'tus target byte-exact')

  const s3b = client(fg.s3)
  const listed = await s3b.send(new ListPartsCommand({ Bucket: 'bkt', Key: 'mp-between', UploadId: between.UploadId! }))
  t.strictSame(listed.Parts?.map((p) => p.PartNumber), [1], 'multipart between parts: part 1 listed after the restart')
  const p2 = await s3b.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp-between', UploadId: between.UploadId!, PartNumber: 2, Body: part(2) }))
  await s3b.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp-between', UploadId: between.UploadId!, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }] } }))
  t.ok(readFileSync(join(root, 'bkt', 'mp-between')).equals(Buffer.concat([part(1), part(2)])), 'multipart between parts: completed byte-exact')
  if (!completed) {
    await s3b.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp-during', UploadId: during.UploadId!, MultipartUpload: { Parts: duringParts } }))
    t.ok(readFileSync(join(root, 'bkt', 'mp-during')).equals(Buffer.concat([part(1), part(2)])), 'multipart during Complete: completed after the restart, byte-exact')
  }
  const exit2 = exited(fg)
  fg.child.kill('SIGTERM')
  t.equal((await exit2).code, 0, 'an idle server stops at once, exit code 0')
})

t.test('SIGTERM with only gateway transfers under way: they get the grace, no more', async (t) => {
  const grace = 3
  const { root, start, exited, alice } = setup(t, grace)
  const fg = await start()
  const key = await alice(fg)
  const { sftp } = await ssh2Sftp(t, { port: fg.sftpPort, user: 'alice', password: 'alice-password-1' })
  const data = randomBytes(4 * MiB)
  for (const name of ['s-go', 'o-stall']) writeFileSync(join(root, 'bkt', name), `old ${name}`)
  const sGo = sftpUpload(sftp, '/bkt/s-go')
  await sGo.push(data.subarray(0, 2 * MiB))
  const oStall = await s3Put(fg.s3, key, '/bkt/o-stall', data.length)
  await oStall.push(data.subarray(0, 2 * MiB))
  await until('both uploads under way', () => tempUploads(root).length === 2)

  const exit = exited(fg)
  const signalled = Date.now()
  fg.child.kill('SIGTERM')
  await until('the server shuts down', () => fg.output().includes('"shutting down"'))
  // Nothing in flight on the HTTP port: the SFTP upload still gets the grace to finish.
  await sGo.push(data.subarray(2 * MiB))
  const [sEnd, oEnd, { code }] = await Promise.all([sGo.end(), oStall.ended, exit])
  const total = Date.now() - signalled
  t.ok(sEnd.ok, `the SFTP upload finishes after the signal: ${sEnd.error ?? ''}`)
  t.ok(readFileSync(join(root, 'bkt', 's-go')).equals(data), 'byte-exact')
  t.notOk(oEnd.ok, 'the stalled S3 upload is cut')
  t.equal(readFileSync(join(root, 'bkt', 'o-stall'), 'utf8'), 'old o-stall', 'its target keeps the old content')
  t.strictSame(tempUploads(root), [], 'no temporary file')
  t.equal(code, 0, 'exit code 0')
  t.ok(total < grace * 1000 + 1500, `exited within the grace (${grace} s): ${total} ms after SIGTERM`)
})

t.test('SIGTERM with MCP clients connected and idle: they do not hold the shutdown', async (t) => {
  const grace = 6
  const { start, exited } = setup(t, grace)
  const fg = await start()
  const token = ((await (await fetch(`${fg.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })).json()) as { result: { authorization: string } }).result.authorization
  // The SSE transport keeps its event stream open: an HTTP request in flight for the session's life.
  const sse = await connect(t, fg.url, token, 'sse')
  const streamable = await connect(t, fg.url, token, 'streamable')
  t.match(await sse.text('ls', { path: '/' }), /bkt/, 'an MCP session over SSE')
  t.match(await streamable.text('ls', { path: '/' }), /bkt/, 'an MCP session over Streamable HTTP')
  const exit = exited(fg)
  const signalled = Date.now()
  fg.child.kill('SIGTERM')
  const { code } = await exit
  const total = Date.now() - signalled
  t.equal(code, 0, 'exit code 0')
  t.ok(total < (grace * 1000) / 2, `exited at once, not at the end of the ${grace} s grace: ${total} ms after SIGTERM`)
})

/**
 * A full disk, through every door: a local root on a small tmpfs, and the data folder
 * (where tus and S3 multipart parts are staged) on another. Each upload that meets the
 * full disk fails in its protocol's shape (HTTP 507 INSUFFICIENT_STORAGE, an SFTP
 * failure saying so, S3's XML with 507, an MCP tool error), the old content stays, no
 * temporary file stays, and once the filler is removed the next upload works, with no
 * restart.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, ListPartsCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { smallDisk, tempUploads } from '../helpers/small-disk.js'
import { connect, textOf } from '../gateways/mcp/client.js'
import { call, ssh2Sftp } from '../gateways/sftp/clients.js'
import { asFsError } from '../../gateways/connection/errors.js'
import { toStatus } from '../../gateways/sftp/errors.js'
import { s3Client } from '../helpers/s3-client.js'

const MiB = 1024 * 1024

t.test('a full disk through every door', async (t) => {
  const root = smallDisk(t, 8)
  const data = smallDisk(t, 16)
  mkdirSync(join(root.dir, 'bkt'))
  const { app, url } = await startTestServer(t, {
    data_dir: data.dir,
    // No reserve: the data folder's own disk fills here (the reserve is test/front/tus-staging.test.ts's).
    staging_limits: { reserve_bytes: 0 },
    admin_password: ADMIN_PASSWORD,
    sftp: { port: 0 },
    s3: { port: 0 },
    connections: [{ label: 'disk', type: 'local', path: root.dir }],
  })
  const admin = api(url, await adminToken(url))
  const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: 'disk', root: '/' }) })
  t.equal(made.status, 200, 'gateway user')
  const keyRes = await admin('POST', '/admin/api/users/alice/s3-keys')
  const key = ((await keyRes.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const s3 = s3Client(t, `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`, { accessKeyId: key.access_key_id, secretAccessKey: key.secret_access_key }, { maxAttempts: 1 })
  const session = (await (await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })).json()) as { result: { authorization: string } }
  const token = session.result.authorization
  const http = api(url, token)
  const { sftp } = await ssh2Sftp(t, { port: app.gateways.find((g) => g.name === 'sftp')!.port!, user: 'alice', password: 'alice-password-1' })
  const mcp = await connect(t, url, token, 'streamable')

  const old = 'old content\n'
  writeFileSync(join(root.dir, 'bkt', 'keep.txt'), old)
  const big = randomBytes(2 * MiB)
  const noDebris = (what: string) => {
    t.strictSame(tempUploads(root.dir), [], `${what}: no temporary file in the root`)
    t.equal(readFileSync(join(root.dir, 'bkt', 'keep.txt'), 'utf8'), old, `${what}: the old content is intact`)
  }

  // The root full (256 KiB left), for the doors that write into it.
  const filler = root.fill(256 * 1024)

  await t.test('HTTP upload', async (t) => {
    const res = await http('POST', '/api/files/cat', { path: '/bkt/keep.txt' }, { body: big })
    t.equal(res.status, 507, '507')
    const body = (await res.json()) as { code: string; message: string }
    t.equal(body.code, 'INSUFFICIENT_STORAGE', body.message)
    t.match(body.message, /no space left/)
    t.notMatch(body.message, root.dir, 'the server folder is not named')
    noDebris('HTTP')
  })

  await t.test('SFTP upload', async (t) => {
    const err = await call(sftp.writeFile.bind(sftp), '/bkt/keep.txt', big).then(() => null, (e: Error & { code?: number }) => e)
    t.ok(err, 'the write fails')
    t.equal(err?.code, 4, 'SSH_FX_FAILURE')
    t.match(err?.message, /no space left/)
    noDebris('SFTP')
  })

  await t.test('S3 PutObject', async (t) => {
    const err = await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: 'keep.txt', Body: big })).then(() => null, (e: Error & { $metadata?: { httpStatusCode?: number } }) => e)
    t.equal(err?.name, 'InsufficientStorage', 'S3 error code')
    t.equal(err?.$metadata?.httpStatusCode, 507)
    noDebris('S3')
  })

  await t.test('MCP write', async (t) => {
    const r = await mcp.call('write', { path: '/bkt/keep.txt', content: big.toString('base64'), encoding: 'base64' })
    t.equal(r.isError, true, 'a tool error')
    t.match(textOf(r), /^INSUFFICIENT_STORAGE: no space left/)
    noDebris('MCP')
  })

  await t.test('tus: the last byte staged, the target full: kept for a retry', async (t) => {
    const created = await http('POST', '/api/files/tus/', { path: '/bkt/keep.txt' }, { headers: { 'tus-resumable': '1.0.0', 'upload-length': String(big.length) } })
    t.equal(created.status, 201)
    const at = `${url}${created.headers.get('location')!.replace(/^.*(\/api\/files\/tus\/)/, '$1')}`
    const patch = await fetch(at, { method: 'PATCH', headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: big })
    t.equal(patch.status, 507, 'the commit into the full root is 507')
    noDebris('tus')
    rmSync(filler)
    const head = await fetch(at, { method: 'HEAD', headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' } })
    t.equal(head.status, 200, 'HEAD with space back stores it')
    t.equal(head.headers.get('upload-offset'), String(big.length))
    t.ok(readFileSync(join(root.dir, 'bkt', 'keep.txt')).equals(big), 'stored, byte-exact')
    writeFileSync(join(root.dir, 'bkt', 'keep.txt'), old)
  })

  await t.test('space back: every door writes again', async (t) => {
    const big = randomBytes(MiB)
    t.equal((await http('POST', '/api/files/cat', { path: '/bkt/h.bin' }, { body: big })).status, 200, 'HTTP')
    await call(sftp.writeFile.bind(sftp), '/bkt/s.bin', big)
    await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: 'o.bin', Body: big }))
    const w = await mcp.call('write', { path: '/bkt/m.bin', content: big.toString('base64'), encoding: 'base64' })
    t.notOk(w.isError, `MCP: ${textOf(w)}`)
    for (const f of ['h.bin', 's.bin', 'o.bin', 'm.bin']) t.ok(readFileSync(join(root.dir, 'bkt', f)).equals(big), `${f} byte-exact`)
    for (const f of ['h.bin', 's.bin', 'o.bin', 'm.bin']) rmSync(join(root.dir, 'bkt', f))
  })

  await t.test('the data folder full: tus PATCH and S3 UploadPart, then resumed', async (t) => {
    const created = await http('POST', '/api/files/tus/', { path: '/bkt/t.bin' }, { headers: { 'tus-resumable': '1.0.0', 'upload-length': String(big.length) } })
    const at = `${url}${created.headers.get('location')!.replace(/^.*(\/api\/files\/tus\/)/, '$1')}`
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp.bin' }))
    const part = randomBytes(2 * MiB) // one part, the last: any size; a larger body still being sent when the 507 closes the connection may meet EPIPE first
    const dataFiller = data.fill(512 * 1024)
    const tus = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' }
    const patch = await fetch(at, { method: 'PATCH', headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: big })
    t.equal(patch.status, 507, 'tus PATCH: 507')
    t.equal(((await patch.json()) as { code: string }).code, 'INSUFFICIENT_STORAGE')
    const err = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId: mp.UploadId!, PartNumber: 1, Body: part })).then(() => null, (e: Error & { $metadata?: { httpStatusCode?: number } }) => e)
    t.equal(err?.name, 'InsufficientStorage', `S3 UploadPart: ${err?.name} ${err?.message}`)
    t.equal(err?.$metadata?.httpStatusCode, 507)
    const staged = join(data.dir, 's3-multipart', mp.UploadId!)
    t.strictSame(existsSync(staged) ? readdirSync(staged) : [], [], 'no part file left in staging')
    t.notOk(existsSync(join(root.dir, 'bkt', 't.bin')) || existsSync(join(root.dir, 'bkt', 'mp.bin')), 'no target yet')

    rmSync(dataFiller)
    const head = await fetch(at, { method: 'HEAD', headers: tus })
    const offset = Number(head.headers.get('upload-offset'))
    t.ok(offset >= 0 && offset < big.length, `tus keeps its offset (${offset})`)
    const rest = await fetch(at, { method: 'PATCH', headers: { ...tus, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: big.subarray(offset) })
    t.equal(rest.status, 204, `tus resumes: ${rest.status} ${await rest.text()}`)
    t.ok(readFileSync(join(root.dir, 'bkt', 't.bin')).equals(big), 'tus target byte-exact')
    const up = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId: mp.UploadId!, PartNumber: 1, Body: part }))
    t.equal((await s3.send(new ListPartsCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId: mp.UploadId! }))).Parts?.length, 1, 'one part listed')
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId: mp.UploadId!, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: up.ETag! }] } }))
    t.ok(readFileSync(join(root.dir, 'bkt', 'mp.bin')).equals(part), 'S3 multipart object byte-exact')
    t.strictSame(tempUploads(root.dir), [], 'no temporary file in the root')
  })
})

t.test("the SFTP gateway's own staging copies (data folder) report a full disk as such", async (t) => {
  // Out-of-order writes to a storage that cannot write in place go to a staging copy in the
  // data folder (gateways/connection/staging.ts); its Node errors pass through asFsError.
  const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 })
  const e = asFsError(full)
  t.equal(e.code, 'ENOSPC', 'ENOSPC')
  t.match(e.message, /no space left/)
  t.equal(toStatus(e).message, e.message, 'the SFTP status says it')
  t.equal(asFsError(Object.assign(new Error('boom'), { code: 'EBADF' })).code, 'EIO', 'other Node errors stay EIO')
})

/**
 * Staged uploads committed into a storage by one worker task (the view's `commitStaged`,
 * workers/staged/commit.ts: the thread that writes the target reads the staged files
 * itself), as users of real clients see it:
 *
 * - a tus upload and an S3 multipart upload (AWS SDK) to a user's sftp and s3 storage
 *   are stored whole, with the md5-of-md5s ETag and the metadata, and nothing stays staged;
 * - a local folder on the disk of the staging folder takes a tus upload's staged file as
 *   it is (a hard link, no byte copied): an upload larger than the room left for a second
 *   copy is stored, with the mode a plain upload gets; an S3 multipart upload there, whose
 *   parts must be joined, answers InsufficientStorage when the disk cannot hold the copy,
 *   and its parts stay for another Complete;
 * - the only worker thread killed while it commits (an sftp storage behind a fault proxy
 *   that stalls the write once 2 MiB went through): the tus PATCH that finished the upload
 *   answers 500, the S3 Complete an error; the staged upload stays as it was, no temporary
 *   file is left at the target, no folder the Complete made; the next HEAD (tus) or
 *   Complete (S3) stores it, byte-exact, and then nothing stays staged.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import t, { type Test } from 'tap'
import type { ConnectionConfig } from '../../core/config.js'
import { startFaultProxy } from '../helpers/fault-proxy.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { s3Client } from '../helpers/s3-client.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { smallDisk, tempUploads } from '../helpers/small-disk.js'
import { type UserStorage, sharedSshd, userStorage } from '../helpers/user-storage.js'
import { serverDir } from '../servers/process.js'

const MiB = 1024 * 1024
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')
const md5OfMd5s = (parts: Uint8Array[]) => `${createHash('md5').update(Buffer.concat(parts.map((p) => createHash('md5').update(p).digest()))).digest('hex')}-${parts.length}`

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** filegate with one worker thread over `connection`; a gateway user on the storage's user folder, its S3 key, an HTTP session. */
async function gate(t: Test, storage: UserStorage, connection: ConnectionConfig = storage.connection, config: Record<string, unknown> = {}) {
  const { app, url, dataDir } = await startTestServer(t, { workers: 1, admin_password: ADMIN_PASSWORD, s3: { port: 0 }, connections: [connection], ...config })
  const admin = api(url, await adminToken(url))
  const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: connection.label, root: storage.userRoot }) })
  t.equal(made.status, 200, 'a gateway user')
  const k = ((await (await admin('POST', '/admin/api/users/alice/s3-keys')).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const s3 = s3Client(t, `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`, { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }, { maxAttempts: 1, keepAlive: false })
  const session = await (await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: connection.label }) })).json()
  const token = (session as { result: { authorization: string } }).result.authorization
  const tus = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' }
  /** A tus upload of `body` to `path` (a path of the session, `storage.userRoot` inside), created and sent in one PATCH: that PATCH's status. */
  const tusUpload = async (t: Test, path: string, body: Buffer<ArrayBuffer>): Promise<{ at: string; status: number }> => {
    const created = await fetch(`${url}/api/files/tus?path=${encodeURIComponent(path)}`, { method: 'POST', headers: { ...tus, 'upload-length': String(body.byteLength) } })
    t.equal(created.status, 201, 'tus upload created')
    const at = new URL(created.headers.get('location')!, url).href
    const res = await fetch(at, { method: 'PATCH', headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body })
    await res.arrayBuffer()
    return { at, status: res.status }
  }
  const cat = async (t: Test, path: string): Promise<Buffer> => {
    const res = await api(url, token)('GET', '/api/files/cat', { path })
    t.equal(res.status, 200, `cat ${path}`)
    return Buffer.from(await res.arrayBuffer())
  }
  const staged = (area: 'tus' | 's3-multipart', id = ''): string[] => {
    const dir = join(dataDir, area, id)
    return existsSync(dir) ? readdirSync(dir) : []
  }
  return { app, s3, tus, tusUpload, cat, staged, inUser: (p: string) => `${storage.userRoot === '/' ? '' : storage.userRoot}${p}` }
}

for (const backend of ['sftp', 's3'] as const) {
  t.test(`${backend} storage: a tus upload and an S3 multipart upload are committed whole; nothing stays staged`, async (t) => {
    const storage = await userStorage(t, serverDir(t, 'staged-commit'), backend)
    const g = await gate(t, storage)
    const body = randomBytes(3 * MiB + 11)
    const up = await g.tusUpload(t, g.inUser('/tus/deep/t.bin'), body)
    t.equal(up.status, 204, 'the last PATCH stored the file')
    t.equal(md5(await g.cat(t, g.inUser('/tus/deep/t.bin'))), md5(body), 'the tus upload is on the storage, byte-exact, its folders made')
    t.same(g.staged('tus'), [], 'nothing staged for tus')

    await g.s3.send(new CreateBucketCommand({ Bucket: 'bkt' }))
    const parts = [randomBytes(5 * MiB), randomBytes(MiB + 7)]
    const { UploadId } = await g.s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'in/m.bin', ContentType: 'application/x-parts', Metadata: { who: 'alice' } }))
    const etags: string[] = []
    for (const [i, p] of parts.entries()) etags.push((await g.s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'in/m.bin', UploadId, PartNumber: i + 1, Body: p }))).ETag!)
    const done = await g.s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'in/m.bin', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }))
    t.equal(done.ETag, `"${md5OfMd5s(parts)}"`, 'Complete answers the md5-of-md5s ETag')
    const head = await g.s3.send(new HeadObjectCommand({ Bucket: 'bkt', Key: 'in/m.bin' }))
    t.equal(head.ETag, done.ETag, 'HEAD answers the same ETag')
    t.equal(head.ContentType, 'application/x-parts', 'its Content-Type')
    t.same(head.Metadata, { who: 'alice' }, 'its metadata')
    const got = await g.s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'in/m.bin' }))
    t.equal(md5(await got.Body!.transformToByteArray()), md5(Buffer.concat(parts)), 'the object is the parts in order')
    t.same(g.staged('s3-multipart'), [], 'nothing staged for S3')
  })
}

t.test('a local folder on the staging disk takes a staged tus upload as it is: no room needed for a second copy', async (t) => {
  const disk = smallDisk(t, 24)
  const files = join(disk.dir, 'files')
  mkdirSync(files)
  const storage: UserStorage = { connection: { label: 'disk', type: 'local', path: files }, userRoot: '/', root: files, put: () => {}, mkdir: () => {} }
  const g = await gate(t, storage, storage.connection, { data_dir: join(disk.dir, 'data'), staging_limits: { reserve_bytes: 0 } })
  // The state store's files are made; what is left is less than two copies of the upload.
  const free = disk.free()
  const body = randomBytes(Math.floor(free * 0.6))
  const up = await g.tusUpload(t, '/in/big.bin', body)
  t.equal(up.status, 204, `a tus upload of ${(body.length / MiB).toFixed(1)} MiB on a disk with ${(free / MiB).toFixed(1)} MiB free is stored`)
  t.equal(md5(readFileSync(join(files, 'in', 'big.bin'))), md5(body), 'byte-exact')
  t.equal(statSync(join(files, 'in', 'big.bin')).mode & 0o777, 0o644 & ~process.umask(), 'with the mode a plain upload gets')
  t.same(g.staged('tus'), [], 'nothing staged')
  t.same(tempUploads(files), [], 'no temporary file')

  await g.s3.send(new CreateBucketCommand({ Bucket: 'bkt' }))
  const parts = [randomBytes(5 * MiB), randomBytes(Math.floor(disk.free() * 0.6) - 5 * MiB)]
  const { UploadId } = await g.s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'm.bin' }))
  const etags: string[] = []
  for (const [i, p] of parts.entries()) etags.push((await g.s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'm.bin', UploadId, PartNumber: i + 1, Body: p }))).ETag!)
  const complete = () => g.s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'm.bin', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }))
  t.match(await complete().catch((err: unknown) => err), { name: 'InsufficientStorage' }, 'parts to join need the room for the object: InsufficientStorage')
  t.notOk(existsSync(join(files, 'bkt', 'm.bin')), 'no object')
  t.same(tempUploads(files), [], 'no temporary file')
  t.equal(g.staged('s3-multipart', UploadId).length, 2, 'the parts stay for another Complete')
  rmSync(join(files, 'in', 'big.bin'))
  t.equal((await complete()).ETag, `"${md5OfMd5s(parts)}"`, 'with room made, Complete sent again stores it')
  t.equal(md5(readFileSync(join(files, 'bkt', 'm.bin'))), md5(Buffer.concat(parts)), 'byte-exact')
})

t.test('the only worker thread killed while it commits: the staged upload stays, no debris at the target, the next try stores it', async (t) => {
  const storage = await userStorage(t, serverDir(t, 'staged-commit'), 'sftp')
  const sshd = await sharedSshd()
  const proxy = await startFaultProxy(t, sshd.port)
  const g = await gate(t, storage, { ...storage.connection, port: proxy.port } as ConnectionConfig)
  storage.mkdir('d')
  /** Stalls the storage once 2 MiB more went to it, kills the thread under the commit, then lets the storage answer again. */
  const killMidCommit = async (t: Test, tripped: Promise<void>, commit: Promise<unknown>): Promise<void> => {
    await tripped
    t.equal(g.app.pool.stats.transfers, 1, 'the commit is live on the thread')
    t.equal(tempUploads(storage.root).length, 1, 'its temporary file at the target')
    await g.app.pool.threads[0]!.terminate()
    proxy.dropAll()
    proxy.mode = 'pass'
    await commit
  }

  await t.test('tus', async (t) => {
    const body = randomBytes(8 * MiB + 5)
    const path = g.inUser('/d/t.bin')
    let up: { at: string; status: number } | null = null
    await killMidCommit(t, proxy.trip('up', 2 * MiB), g.tusUpload(t, path, body).then((r) => (up = r)))
    t.equal(up!.status, 500, 'the PATCH that finished the upload answers 500')
    await until('no temporary file at the target', () => tempUploads(storage.root).length === 0).then(
      () => t.pass('no temporary file at the target'),
      () => t.fail(`temporary files left: ${tempUploads(storage.root).join(', ')}`),
    )
    t.notOk(existsSync(join(storage.root, 'd', 't.bin')), 'no target')
    const id = up!.at.split('/').pop()!
    t.same(g.staged('tus'), [id], 'the upload stays staged')
    await until('a new thread', () => g.app.pool.threads.length === 1)
    const head = await fetch(up!.at, { method: 'HEAD', headers: g.tus })
    t.equal(head.status, 200, 'HEAD stores it')
    t.equal(head.headers.get('upload-offset'), String(body.length), 'every byte in')
    t.equal(md5(readFileSync(join(storage.root, 'd', 't.bin'))), md5(body), 'the file on the storage, byte-exact')
    t.same(g.staged('tus'), [], 'then nothing stays staged')
  })

  await t.test('S3 Complete', async (t) => {
    await g.s3.send(new CreateBucketCommand({ Bucket: 'bkt' }))
    const parts = [randomBytes(5 * MiB), randomBytes(3 * MiB)]
    const { UploadId } = await g.s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'new/m.bin' }))
    const etags: string[] = []
    for (const [i, p] of parts.entries()) etags.push((await g.s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'new/m.bin', UploadId, PartNumber: i + 1, Body: p }))).ETag!)
    const complete = () => g.s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'new/m.bin', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }))
    let failed: unknown = null
    await killMidCommit(t, proxy.trip('up', 2 * MiB), complete().catch((err: unknown) => (failed = err)))
    t.match(failed, { name: 'InternalError' }, 'Complete fails')
    await until('no temporary file at the target', () => tempUploads(storage.root).length === 0).then(
      () => t.pass('no temporary file at the target'),
      () => t.fail(`temporary files left: ${tempUploads(storage.root).join(', ')}`),
    )
    await until('the folder Complete made removed', () => !existsSync(join(storage.root, 'bkt', 'new'))).then(
      () => t.pass('the folder Complete made is removed'),
      () => t.fail(`left: ${readdirSync(join(storage.root, 'bkt', 'new')).join(', ')}`),
    )
    t.equal(g.staged('s3-multipart', UploadId).length, 2, 'both parts stay staged')
    await until('a new thread', () => g.app.pool.threads.length === 1)
    t.equal((await g.s3.send(new ListPartsCommand({ Bucket: 'bkt', Key: 'new/m.bin', UploadId }))).Parts?.length, 2, 'ListParts still lists both')
    t.equal((await complete()).ETag, `"${md5OfMd5s(parts)}"`, 'Complete sent again stores it')
    t.equal(md5(readFileSync(join(storage.root, 'bkt', 'new', 'm.bin'))), md5(Buffer.concat(parts)), 'the object on the storage, byte-exact')
    t.same(g.staged('s3-multipart'), [], 'then nothing stays staged')
  })
})

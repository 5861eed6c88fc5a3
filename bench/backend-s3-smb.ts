/**
 * @module bench/backend-s3-smb
 * Download and upload MB/s of one file (BENCH_SIZE_MB, default 128 MiB of random
 * bytes) on loopback, in the same run:
 * - through filegate's HTTP API (curl, GET /api/files/cat and POST with -T) on an s3
 *   session to s3rver, and on smb sessions to Samba smbd;
 * - with the native clients straight to the same servers: the AWS SDK (GetObject
 *   streamed, PutObject of a file stream) and the SMB library, @tryjsky/v9u-smb2
 *   (`readFile`/`writeFile`, its own pipelining of 20 requests);
 * - for reference, filegate's smb driver called in-process (no HTTP, no threads) and
 *   Samba's own `smbclient`.
 * The SMB library crashes the process on the interim STATUS_PENDING replies of a
 * default Samba (README.md), so it runs against a second smbd with
 * `aio read size = 0` and `aio write size = 0`; filegate is measured on both.
 * s3rver is an emulator (~100 MB/s): its rows compare clients, not S3's speed.
 * Figures are medians of BENCH_RUNS (3) runs, MB = 10^6 bytes. Needs root (smbd runs
 * for a throwaway user, as in the tests), samba, smbclient, curl.
 *
 *   node --import tsx bench/backend-s3-smb.ts
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3'
import type { Readable } from 'node:stream'
import { validateConfig } from '../core/config.js'
import { curl, fakeTest, onCleanup, runCases, runMain, session } from './lib/backend.js'
import { startFilegate } from '../front/app.js'
import { silentLogger } from '../front/log.js'
import { startS3rver } from '../test/servers/s3rver.js'
import { type SambaServer, startSamba } from '../test/servers/samba.js'
import { createSmbDriver } from '../workers/drivers/smb/index.js'
import { createS3Driver } from '../workers/drivers/s3/index.js'

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'

const MiB = 1024 * 1024
const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 128)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const workers = Number(process.env.BENCH_WORKERS ?? 2)
const size = sizeMb * MiB
const exec = promisify(execFile)


/** A sink that counts and drops. */
const devNull = (): Writable => new Writable({ write: (_c, _e, cb) => cb() })

/** The SMB library's promise API (CommonJS, its own types are loose). */
interface SmbLib {
  readFile(path: string): Promise<Buffer>
  writeFile(path: string, data: Buffer, opts: { flags: string }): Promise<void>
  disconnect(): void
}

function smbLib(s: SambaServer): SmbLib {
  const SMB2 = createRequire(import.meta.url)('@tryjsky/v9u-smb2') as new (o: Record<string, unknown>) => SmbLib
  return new SMB2({ share: `\\\\127.0.0.1\\${s.share}`, domain: s.domain, username: s.username, password: s.password, port: s.port, autoCloseTimeout: 0 })
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-bench-s3-smb-'))
  onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'big.bin')
  writeFileSync(file, randomBytes(size))
  const data = readFileSync(file)

  const s3 = await startS3rver(fakeTest)
  const bucket = await s3.bucket()
  const smb = await startSamba(fakeTest)
  const smbNoAio = await startSamba(fakeTest, { extraGlobal: { 'aio read size': '0', 'aio write size': '0' } })
  const config = validateConfig({
    port: 0,
    workers,
    data_dir: join(dir, 'data'),
    log: { level: 'error', requests: false },
    sftp: { port: 'off' },
    s3: { port: 'off' },
    connections: [
      { label: 's3', type: 's3', endpoint: s3.endpoint, region: 'us-east-1', path_style: true },
      { label: 'smb', type: 'smb', hostname: '127.0.0.1', port: smb.port, share: smb.share },
      { label: 'smb-noaio', type: 'smb', hostname: '127.0.0.1', port: smbNoAio.port, share: smbNoAio.share },
    ],
  })
  const app = await startFilegate(config, { logger: silentLogger })
  onCleanup(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  const s3Token = await session(url, { label: 's3', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, path: bucket })
  const smbToken = await session(url, { label: 'smb', username: smb.username, password: smb.password })
  const noAioToken = await session(url, { label: 'smb-noaio', username: smbNoAio.username, password: smbNoAio.password })

  // Native clients, connected once (as filegate's pooled sessions are).
  const sdk = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  onCleanup(() => sdk.destroy())
  const lib = smbLib(smbNoAio)
  onCleanup(() => lib.disconnect())
  const driver = await createSmbDriver({ hostname: '127.0.0.1', port: smb.port, share: smb.share, domain: smb.domain, username: smb.username, password: smb.password, root: '' })
  onCleanup(() => driver.close())
  const ctx = () => ({ signal: new AbortController().signal, requestId: 'bench' })
  const s3Driver = await createS3Driver({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, root: bucket })
  onCleanup(() => s3Driver.close())
  /** The file as 1 MiB chunks, as the pool hands a body to a driver. */
  const chunks = async function* () {
    for (let i = 0; i < size; i += MiB) yield data.subarray(i, i + MiB)
  }
  const smbclient = (s: SambaServer, command: string) =>
    exec('smbclient', [`//127.0.0.1/${s.share}`, '-p', String(s.port), '-U', `${s.username}%${s.password}`, '-c', command], { maxBuffer: 1 << 20 })

  const get = (token: string) => () => curl(['-o', '/dev/null', '-H', `Authorization: Bearer ${token}`, `${url}/api/files/cat?path=/big.bin`])
  const put = (token: string) => () => curl(['-X', 'POST', '-T', file, '-H', 'Expect:', '-H', `Authorization: Bearer ${token}`, `${url}/api/files/cat?path=/up.bin`])
  const cases: Record<string, () => Promise<unknown>> = {
    's3 download, filegate HTTP': get(s3Token),
    's3 download, AWS SDK GetObject': async () => {
      const out = await sdk.send(new GetObjectCommand({ Bucket: bucket, Key: 'big.bin' }))
      await pipeline(out.Body as Readable, devNull())
    },
    's3 upload, filegate HTTP': put(s3Token),
    's3 upload, AWS SDK PutObject': () => sdk.send(new PutObjectCommand({ Bucket: bucket, Key: 'up-native.bin', Body: createReadStream(file), ContentLength: size })),
    // What filegate does (it cannot know that a body is short enough for one PUT until it ends).
    's3 upload, AWS SDK multipart 8 MiB x3': async () => {
      const { UploadId } = await sdk.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'up-multipart.bin' }))
      const part = 8 * MiB
      const numbers = Array.from({ length: Math.ceil(size / part) }, (_, i) => i + 1)
      const parts: { PartNumber: number; ETag: string | undefined }[] = []
      let next = 0
      await Promise.all(
        [0, 1, 2].map(async () => {
          while (next < numbers.length) {
            const n = numbers[next++]!
            const body = data.subarray((n - 1) * part, n * part)
            const out = await sdk.send(new UploadPartCommand({ Bucket: bucket, Key: 'up-multipart.bin', UploadId, PartNumber: n, Body: body, ContentLength: body.length }))
            parts.push({ PartNumber: n, ETag: out.ETag })
          }
        }),
      )
      parts.sort((a, b) => a.PartNumber - b.PartNumber)
      await sdk.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'up-multipart.bin', UploadId, MultipartUpload: { Parts: parts } }))
    },
    // The driver alone (no HTTP, no threads): what the SDK row compares with, like for like.
    's3 upload, s3 driver in-process': () => s3Driver.write(ctx(), '/up-driver.bin', chunks()),
    'smb download, filegate HTTP': get(smbToken),
    'smb download, filegate HTTP (aio off)': get(noAioToken),
    'smb download, smb driver in-process': async () => {
      for await (const _ of driver.read(ctx(), '/big.bin'));
    },
    'smb download, library readFile (aio off)': () => lib.readFile('big.bin'),
    'smb download, smbclient': () => smbclient(smb, 'get big.bin /dev/null'),
    'smb upload, filegate HTTP': put(smbToken),
    'smb upload, filegate HTTP (aio off)': put(noAioToken),
    'smb upload, smb driver in-process': () => driver.write(ctx(), '/up-driver.bin', chunks()),
    'smb upload, library writeFile (aio off)': () => lib.writeFile('up-native.bin', data, { flags: 'w' }), // its default, 'wx', refuses to replace
    'smb upload, smbclient': () => smbclient(smb, `put ${file} up-smbclient.bin`),
  }
  // The file to download, put in place once (also a warm-up of every case).
  await sdk.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.bin', Body: data }))
  await smbclient(smb, `put ${file} big.bin`)
  await smbclient(smbNoAio, `put ${file} big.bin`)
  await runCases(cases, size, runs, `${sizeMb} MiB, loopback, ${workers} filegate worker(s)`)
}

runMain(main)

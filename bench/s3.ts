/**
 * @module bench/s3
 * The S3 gateway against the HTTP API, on the same storage (a local connection over one
 * folder), the same filegate process and the same client, in the same run:
 * - GET of one big file (BENCH_SIZE_MB, default 1 GiB): curl, SigV4-signed
 *   (`--aws-sigv4`) on the S3 port, Bearer token on `GET /api/files/cat`;
 * - PUT of that file: curl -T (Content-Length), `PUT /<bucket>/<key>` against
 *   `POST /api/files/cat`; each upload's size is checked on disk (and its SHA-256 in
 *   quick mode), then removed; `PUT signed`: the same with the payload signed (its
 *   SHA-256 in `x-amz-content-sha256`, which the gateway checks), as SDKs sign over
 *   plain HTTP;
 * - the same file as a multipart upload by a real client: the aws CLI's `aws s3 cp`
 *   (Debian's awscli, a config of its own: parts of 8 MiB, 4 at a time), against the same
 *   HTTP upload; the object's ETag must show it was assembled from its parts;
 * - a listing of 10,000 keys (1,000 in quick mode) in one folder: ListObjectsV2 page by
 *   page (1,000 keys each, continuation tokens) against one `GET /api/files/ls`, both
 *   with Node's fetch in this process (SigV4 by @smithy/signature-v4, the AWS SDK's signer).
 * Figures: MB/s (keys/s for listings), filegate's CPU s/GiB (CPU s per whole listing),
 * ratios S3/HTTP, the main thread's share of filegate's CPU during each transfer, and the
 * clients' CPU s/GiB (curl, aws: they share the cores with filegate).
 */
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SignatureV4 } from '@smithy/signature-v4'
import { Sha256 } from '../gateways/s3/auth/sigv4.js'
import { runBenchmark } from './lib/bench.js'
import { session } from './lib/backend.js'
import { ensureCommand } from './lib/debian.js'
import { GiB, env, selected } from './lib/env.js'
import { bigFile, plant, warm } from './lib/files.js'
import { mainThreadMeter, reapedChildrenCpuSeconds, run } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { freePort, startFilegate, tempDir, waitForPort } from './lib/servers.js'


async function sha256(path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const c of createReadStream(path, { highWaterMark: 4 << 20 })) h.update(c as Buffer)
  return h.digest('hex')
}

type Case = 'GET' | 'PUT' | 'PUT signed' | 'multipart' | 'list'
interface Sample {
  readonly run: number
  readonly door: 's3' | 'http'
  readonly kase: Case
  /** MB/s, or keys/s for listings. */
  readonly rate: number
  readonly cpuPerGiB: number
  /** The main thread's CPU ÷ filegate's CPU during the case. */
  readonly mainShare: number
  /** The client's CPU s/GiB, when it is a child process (curl, aws); NaN for fetch in this process. */
  readonly clientCpuPerGiB: number
}

const BUCKET = 'bench'

/** The multipart upload's parts and how many the client sends at once (the issue's figures). */
const PART_MIB = 8
const PART_PARALLEL = 4

/** The aws CLI: Debian's (awscli, v2) when there, else whichever `aws` is on the PATH (installed when allowed). */
async function findAws(): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  if (existsSync('/usr/bin/aws')) return { ok: true, path: '/usr/bin/aws' }
  return ensureCommand('aws', 'awscli')
}

runBenchmark('s3', async () => {
  const curlFound = await ensureCommand('curl', 'curl')
  if (!curlFound.ok) throw new Error(`curl is required: ${curlFound.reason}`)
  const curl = curlFound.path
  const source = bigFile()
  const size = statSync(source).size
  warm(source)
  const expectHash = env.quick ? await sha256(source) : null
  const folder = tempDir('s3-root')
  plant(source, join(folder, BUCKET, 'big.bin'))
  const nKeys = env.quick ? 1000 : 10_000
  mkdirSync(join(folder, BUCKET, 'many'))
  for (let i = 0; i < nKeys; i++) writeFileSync(join(folder, BUCKET, 'many', `key-${String(i).padStart(6, '0')}.txt`), 'x')

  const adminPassword = randomBytes(18).toString('base64url')
  const localPassword = randomBytes(18).toString('base64url')
  const config = join(tempDir('s3-config'), 'config.json')
  writeFileSync(config, JSON.stringify({ admin_password: adminPassword, connections: [{ label: 'bench', type: 'local', path: folder, password: localPassword }] }), { mode: 0o600 })
  const port = await freePort()
  const server = await startFilegate(tempDir('s3-data'), env.workers, 'auto', { config, env: { FILEGATE_S3_PORT: String(port) } })
  await waitForPort(port, null, 'filegate S3 gateway')
  const endpoint = `http://127.0.0.1:${port}`
  const admin = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: token ? { authorization: `Bearer ${token}` } : {} })
    return (await res.json()) as { result?: Record<string, unknown> }
  }
  const adminToken = (await admin('/admin/api/session', { password: adminPassword })).result?.authorization as string
  await admin('/admin/api/users', { name: 'bench', password: randomBytes(18).toString('base64url'), connection: 'bench', root: '/', read_only: false }, adminToken)
  const key = (await admin('/admin/api/users/bench/s3-keys', {}, adminToken)).result as { access_key_id: string; secret_access_key: string } | undefined
  if (!key?.access_key_id) throw new Error('filegate made no S3 key')
  const token = await session(server.url, { label: 'bench', password: localPassword })
  progress(`S3 gateway on ${endpoint}, HTTP API on ${server.url}, both over ${folder}`)

  const sigv4 = ['--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${key.access_key_id}:${key.secret_access_key}`, '-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD']
  const bearer = ['-H', `Authorization: Bearer ${token}`]
  const curlOnce = async (args: string[], what: string) => {
    const r = await run(curl, ['-sS', '--noproxy', '*', '-H', 'Expect:', '-w', '\n%{http_code}', ...args])
    const code = r.stdout.trim().split('\n').pop()
    if (r.code !== 0 || !code?.startsWith('2')) throw new Error(`${what}: curl ${r.code}, HTTP ${code}: ${r.stdout.slice(0, 300)} ${r.stderr.slice(0, 300)}`)
  }
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: { accessKeyId: key.access_key_id, secretAccessKey: key.secret_access_key }, sha256: Sha256, uriEscapePath: false })
  const listS3 = async (): Promise<number> => {
    let count = 0
    let tokenNext: string | undefined
    do {
      const query: Record<string, string> = { 'list-type': '2', prefix: 'many/', 'max-keys': '1000', ...(tokenNext ? { 'continuation-token': tokenNext } : {}) }
      const signed = await signer.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port, path: `/${BUCKET}`, query, headers: { host: `127.0.0.1:${port}`, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } })
      const res = await fetch(`${endpoint}/${BUCKET}?${new URLSearchParams(query)}`, { headers: signed.headers as Record<string, string> })
      const xml = await res.text()
      if (res.status !== 200) throw new Error(`ListObjectsV2: ${res.status} ${xml.slice(0, 300)}`)
      count += xml.split('<Contents>').length - 1
      tokenNext = /<NextContinuationToken>([^<]+)</.exec(xml)?.[1]
    } while (tokenNext)
    return count
  }
  const listHttp = async (): Promise<number> => {
    const res = await fetch(`${server.url}/api/files/ls?path=/${BUCKET}/many/`, { headers: { authorization: `Bearer ${token}` } })
    const j = (await res.json()) as { results?: unknown[]; result?: unknown[] }
    return (j.results ?? j.result ?? []).length
  }

  // The aws CLI with a config and a home of its own (nothing of the machine's set-up): multipart
  // from the first part's size up, PART_MIB parts, PART_PARALLEL at once, path-style URLs.
  const aws = await findAws()
  const awsHome = tempDir('s3-aws')
  writeFileSync(
    join(awsHome, 'config'),
    `[default]\nregion = us-east-1\ns3 =\n  multipart_threshold = ${PART_MIB}MB\n  multipart_chunksize = ${PART_MIB}MB\n  max_concurrent_requests = ${PART_PARALLEL}\n  addressing_style = path\n`,
  )
  const awsEnv = {
    PATH: process.env.PATH,
    HOME: awsHome,
    AWS_ACCESS_KEY_ID: key.access_key_id,
    AWS_SECRET_ACCESS_KEY: key.secret_access_key,
    AWS_CONFIG_FILE: join(awsHome, 'config'),
    AWS_SHARED_CREDENTIALS_FILE: join(awsHome, 'none'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
  }
  const parts = Math.ceil(size / (PART_MIB * 2 ** 20))
  const multipartPut = async (): Promise<number> => {
    if (!aws.ok) throw new Error(aws.reason)
    const r = await run(aws.path, ['--endpoint-url', endpoint, 's3', 'cp', '--only-show-errors', '--no-progress', source, `s3://${BUCKET}/up-s3.bin`], { env: awsEnv })
    if (r.code !== 0) throw new Error(`aws s3 cp: exit ${r.code ?? r.signal}: ${r.stderr.trim().slice(-1000)}`)
    return size
  }
  /** An object assembled from N parts has an ETag ending in "-N": the client did send parts. */
  const checkParts = async () => {
    const head = await run(curl, ['-sS', '--noproxy', '*', '-I', ...sigv4, `${endpoint}/${BUCKET}/up-s3.bin`])
    const etag = /^etag:\s*(\S+)/im.exec(head.stdout)?.[1]
    if (!etag?.endsWith(`-${parts}"`)) throw new Error(`aws s3 cp: the object's ETag is ${etag ?? 'missing'}, not that of ${parts} parts (was it sent in one piece?)`)
  }

  const skipped: Record<string, string> = {}
  if (!aws.ok) skipped.multipart = `the multipart upload's client, the aws CLI: ${aws.reason}`
  const chosen = (['GET', 'PUT', 'PUT signed', 'multipart', 'list'] as const).filter((k) => selected(k) && !(k === 'multipart' && !aws.ok))
  const payloadHash = chosen.includes('PUT signed') ? (expectHash ?? (await sha256(source))) : ''
  const signedPayload = [...sigv4.slice(0, -1), `x-amz-content-sha256: ${payloadHash}`]
  const landed = (door: string) => join(folder, BUCKET, `up-${door}.bin`)
  const cases: Record<`${Case} ${'s3' | 'http'}`, () => Promise<number>> = {
    'GET s3': async () => (await curlOnce([...sigv4, '-o', '/dev/null', `${endpoint}/${BUCKET}/big.bin`], 'GET s3'), size),
    'GET http': async () => (await curlOnce([...bearer, '-o', '/dev/null', `${server.url}/api/files/cat?path=/${BUCKET}/big.bin`], 'GET http'), size),
    'PUT s3': async () => (await curlOnce([...sigv4, '-T', source, `${endpoint}/${BUCKET}/up-s3.bin`], 'PUT s3'), size),
    'PUT http': async () => (await curlOnce([...bearer, '-X', 'POST', '-T', source, `${server.url}/api/files/cat?path=/${BUCKET}/up-http.bin`], 'PUT http'), size),
    'PUT signed s3': async () => (await curlOnce([...signedPayload, '-T', source, `${endpoint}/${BUCKET}/up-s3.bin`], 'PUT signed s3'), size),
    'PUT signed http': async () => (await curlOnce([...bearer, '-X', 'POST', '-T', source, `${server.url}/api/files/cat?path=/${BUCKET}/up-http.bin`], 'PUT http'), size),
    'multipart s3': multipartPut,
    'multipart http': async () => (await curlOnce([...bearer, '-X', 'POST', '-T', source, `${server.url}/api/files/cat?path=/${BUCKET}/up-http.bin`], 'PUT http'), size),
    'list s3': listS3,
    'list http': listHttp,
  }

  const once = async (kase: Case, door: 's3' | 'http', runNo: number): Promise<Sample> => {
    const cpu0 = server.cpu()
    const client0 = reapedChildrenCpuSeconds()
    const main = mainThreadMeter(server.pid)
    const t0 = performance.now()
    const n = await cases[`${kase} ${door}`]()
    const wallS = (performance.now() - t0) / 1000
    const mainShare = main().share
    const clientCpu = reapedChildrenCpuSeconds() - client0
    const cpu = server.cpu() - cpu0
    if (kase === 'list' && n !== nKeys) throw new Error(`${door}: listed ${n} keys instead of ${nKeys}`)
    if (kase !== 'GET' && kase !== 'list') {
      if (kase === 'multipart' && door === 's3') await checkParts()
      const got = statSync(landed(door), { throwIfNoEntry: false })?.size
      if (got !== size) throw new Error(`${door}: the upload left ${got ?? 'no file'} bytes instead of ${size}`)
      if (expectHash && (await sha256(landed(door))) !== expectHash) throw new Error(`${door}: the uploaded bytes differ from the file sent`)
      rmSync(landed(door))
    }
    const gib = size / GiB
    return {
      run: runNo,
      door,
      kase,
      rate: kase === 'list' ? n / wallS : size / wallS / 1e6,
      cpuPerGiB: kase === 'list' ? cpu : cpu / gib,
      mainShare,
      clientCpuPerGiB: kase === 'list' ? Number.NaN : clientCpu / gib,
    }
  }

  progress('warm-up: each case once')
  for (const k of chosen) for (const d of ['s3', 'http'] as const) await once(k, d, 0)
  const samples: Sample[] = []
  for (let r = 1; r <= env.runs; r++) {
    for (const k of chosen) {
      for (const d of ['s3', 'http'] as const) {
        const s = await once(k, d, r)
        samples.push(s)
        progress(`run ${r}/${env.runs}, ${k} ${d}: ${fmt(s.rate)} ${k === 'list' ? 'keys/s' : 'MB/s'}, main thread ${fmt(s.mainShare, 2)} of filegate's CPU${k === 'list' ? '' : `, client ${fmt(s.clientCpuPerGiB)} CPU s/GiB`}`)
      }
    }
  }
  const med = (k: Case, d: 's3' | 'http', f: 'rate' | 'cpuPerGiB' | 'mainShare' | 'clientCpuPerGiB') => median(samples.filter((s) => s.kase === k && s.door === d).map((s) => s[f]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const k of chosen) {
    const rt = ratio(med(k, 's3', 'rate'), med(k, 'http', 'rate'))
    const cpu = ratio(med(k, 's3', 'cpuPerGiB'), med(k, 'http', 'cpuPerGiB'))
    ratios[`${k} s3/http ${k === 'list' ? 'keys/s' : 'MB/s'}`] = rt
    ratios[`${k} s3/http CPU`] = cpu
    for (const d of ['s3', 'http'] as const) {
      figures[`${k} ${d}`] = { rate: med(k, d, 'rate'), cpu: med(k, d, 'cpuPerGiB'), mainThreadShare: med(k, d, 'mainShare'), clientCpuPerGiB: med(k, d, 'clientCpuPerGiB') }
    }
    const unit = k === 'list' ? `${nKeys} keys` : `${Math.round(size / 2 ** 20)} MiB`
    const what = k === 'multipart' ? `multipart (${unit}, aws CLI, ${PART_MIB} MiB × ${PART_PARALLEL})` : `${k} (${unit})`
    rows.push([what, fmt(med(k, 's3', 'rate')), fmt(med(k, 'http', 'rate')), fmtRatio(rt), fmt(med(k, 's3', 'cpuPerGiB')), fmt(med(k, 'http', 'cpuPerGiB')), fmtRatio(cpu), fmt(med(k, 's3', 'mainShare'), 2), fmt(med(k, 'http', 'mainShare'), 2), k === 'list' ? '–' : `${fmt(med(k, 's3', 'clientCpuPerGiB'))} / ${fmt(med(k, 'http', 'clientCpuPerGiB'))}`])
  }
  await server.stop()
  publish({
    name: 's3',
    settings: {
      sizeMiB: env.sizeMb,
      keys: nKeys,
      client: `curl --aws-sigv4 / Bearer; multipart: ${aws.ok ? aws.path : 'aws'} s3 cp, ${PART_MIB} MiB parts, ${PART_PARALLEL} at once; listings: fetch`,
      runs: env.runs,
      workers: env.workers,
    },
    figures,
    ratios,
    runs: samples,
    skipped,
    table: table(
      ['case', 'S3 gateway MB/s (keys/s)', 'HTTP API MB/s (keys/s)', 'S3 / HTTP', 'S3 CPU s/GiB (s)', 'HTTP CPU s/GiB (s)', 'CPU S3 / HTTP', 'main-thread share S3', 'main-thread share HTTP', 'client CPU s/GiB S3 / HTTP'],
      rows,
    ),
  })
})

/**
 * @module bench/s3-auth
 * What S3's per-request authentication costs on the server (gateways/s3/auth, the
 * signature login of front/gateway-login.ts): a signed GET (a request made and signed
 * once, as the AWS SDK signs it, then handed to `authenticate` as an HTTP engine would
 * hand it over; its empty payload read and checked; its view closed), against the
 * cheapest other gateway login: an SFTP password login whose password was accepted a
 * moment ago (no scrypt), which opens a view of its own and looks at its root, as every
 * login did before S3's were shared. In-process, on the compiled code (lib/build.ts),
 * with a real filegate (state store, worker pool, a tmp user).
 *
 * Figures: µs per login one at a time, CPU µs per login, logins/s with 16 in flight.
 */
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { SignatureV4 } from '@smithy/signature-v4'
import { Sha256 } from '../gateways/s3/auth/sigv4.js'
import type * as ConfigModule from '../core/config.js'
import type { GatewayContext } from '../core/gateway.js'
import type { HttpRequest } from '../core/http.js'
import type * as AppModule from '../front/app.js'
import type * as AuthModule from '../gateways/s3/auth/index.js'
import { runBenchmark } from './lib/bench.js'
import { distDir } from './lib/build.js'
import { env } from './lib/env.js'
import { onCleanup } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { tempDir } from './lib/servers.js'

const dist = <T>(rel: string): Promise<T> => import(pathToFileURL(join(distDir(), rel)).href) as Promise<T>
const PASSWORD = 'a password for the bench'
const IN_FLIGHT = 16


async function timed(seconds: number, concurrency: number, op: () => Promise<unknown>): Promise<{ opsPerS: number; cpuUsPerOp: number }> {
  let count = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await op()
        count++
      }
    }),
  )
  const cpu = process.cpuUsage(cpu0)
  return { opsPerS: count / ((performance.now() - t0) / 1000), cpuUsPerOp: (cpu.user + cpu.system) / count }
}

runBenchmark('s3-auth', async () => {
  const { startFilegate } = await dist<typeof AppModule>('front/app.js')
  const { validateConfig } = await dist<typeof ConfigModule>('core/config.js')
  const { authenticate } = await dist<typeof AuthModule>('gateways/s3/auth/index.js')
  let ctx: GatewayContext | undefined
  const app = await startFilegate(validateConfig({ port: 0, workers: env.workers, data_dir: tempDir('s3-auth'), admin_password: PASSWORD, sftp: { port: 'off' }, log: { level: 'error', requests: false } }), {
    gateways: [{ name: 'bench', start: async (c) => void (ctx = c), stop: async () => {} }],
  })
  onCleanup(() => app.close(0))
  const base = `http://127.0.0.1:${app.port}/admin/api`
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/${path}`, { method, headers: { authorization: `Bearer ${token}` }, body: body === undefined ? null : JSON.stringify(body) })
    const json = (await res.json()) as { status: string; result?: Record<string, string> }
    if (json.status !== 'ok') throw new Error(`${method} ${path}: ${JSON.stringify(json)}`)
    return json.result!
  }
  let token = ''
  token = (await admin('POST', 'session', { password: PASSWORD })).authorization!
  await admin('POST', 'users', { name: 'bench', connection: 'tmp', password: PASSWORD })
  const key = await admin('POST', 'users/bench/s3-keys')
  const login = ctx!.login

  // One GET, signed once (valid 15 minutes), handed over afresh for each login.
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: { accessKeyId: key.access_key_id!, secretAccessKey: key.secret_access_key! }, sha256: Sha256, uriEscapePath: false })
  const signed = await signer.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', path: '/bucket/some/key.txt', query: {}, headers: { host: '127.0.0.1:8335', 'x-amz-content-sha256': createHash('sha256').digest('hex') } })
  const headers = new Map(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]))
  const request = (): HttpRequest => ({
    method: 'GET',
    path: '/bucket/some/key.txt',
    query: new URLSearchParams(),
    header: (n) => headers.get(n),
    headers: () => headers.entries(),
    remoteAddress: '127.0.0.1',
    requestId: 'bench',
    signal: new AbortController().signal,
    contentLength: null,
    body: (async function* () {})(),
  })
  const sides: [string, () => Promise<void>][] = [
    [
      'S3 signed GET',
      async () => {
        const caller = await authenticate(request(), login, { region: 'us-east-1' })
        for await (const _ of caller.body);
        caller.fs.close()
      },
    ],
    [
      'SFTP password login, remembered',
      async () => {
        const r = await login.login({ door: 'sftp', user: 'bench', password: PASSWORD, address: '127.0.0.1', requestId: 'bench' })
        if (!r.ok) throw new Error(`password login: ${r.message}`)
        r.fs.close()
      },
    ],
  ]

  const seconds = Math.max(0.5, env.durationS / 4)
  progress(`warm-up: ${seconds} s each`)
  for (const [, op] of sides) await timed(seconds, IN_FLIGHT, op)
  const samples: { side: string; run: number; usPerOp: number; cpuUsPerOp: number; opsPerS: number }[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const [side, op] of sides) {
      const seq = await timed(seconds, 1, op)
      const par = await timed(seconds, IN_FLIGHT, op)
      samples.push({ side, run, usPerOp: 1e6 / seq.opsPerS, cpuUsPerOp: seq.cpuUsPerOp, opsPerS: par.opsPerS })
      progress(`run ${run}/${env.runs}, ${side}: ${fmt(1e6 / seq.opsPerS)} µs/login, ${fmt(seq.cpuUsPerOp)} CPU µs, ${fmt(par.opsPerS)} logins/s at ${IN_FLIGHT} in flight`)
    }
  }
  const med = (side: string, k: 'usPerOp' | 'cpuUsPerOp' | 'opsPerS') => median(samples.filter((s) => s.side === side).map((s) => s[k]))
  const [s3, sftp] = sides.map(([side]) => side) as [string, string]
  const figures = Object.fromEntries(sides.map(([side]) => [side, { usPerOp: med(side, 'usPerOp'), cpuUsPerOp: med(side, 'cpuUsPerOp'), opsPerS: med(side, 'opsPerS') }]))
  publish({
    name: 's3-auth',
    settings: { workers: env.workers, secondsPerMeasure: seconds, runs: env.runs, inFlight: IN_FLIGHT },
    figures,
    ratios: { 'S3/SFTP logins per s in flight': ratio(med(s3, 'opsPerS'), med(sftp, 'opsPerS')), 'S3/SFTP µs per login': ratio(med(s3, 'usPerOp'), med(sftp, 'usPerOp')) },
    runs: samples,
    skipped: {},
    table: table(
      ['login', 'µs per login', 'CPU µs per login', `logins/s (${IN_FLIGHT} in flight)`, 'vs SFTP'],
      sides.map(([side]) => [side, fmt(med(side, 'usPerOp')), fmt(med(side, 'cpuUsPerOp')), fmt(med(side, 'opsPerS')), fmtRatio(ratio(med(side, 'opsPerS'), med(sftp, 'opsPerS')))]),
    ),
  })
})

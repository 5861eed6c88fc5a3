/**
 * @module bench/soak
 * One filegate (its CLI, 2 workers) with its HTTP API, SFTP gateway and S3 gateway over
 * one local folder, under a fixed mix of operations through all three doors
 * (lib/soak-doors.ts: HTTP ls/cat/HEAD/4 KiB and 1 MiB up- and downloads; SFTP
 * readdir/stat/1 MiB get and put on long-lived sessions, and login+ls+logout; S3
 * ListObjectsV2/GET/PUT/HEAD of 4 KiB and 1 MiB):
 * 1. the peak: the mix flat out from 16 clients (closed loop) for BENCH_SOAK_PEAK_SECONDS
 *    (30; quick: 4), in operations/s;
 * 2. the soak: the same mix at 80 % of that rate (open loop, a fixed schedule) for
 *    BENCH_SOAK_SECONDS (600; quick: 15), sampling every 10 s (quick: 2 s) filegate's RSS,
 *    its open file descriptors and its event-loop delay (p99, from its /metrics).
 * Every operation checks its answer (bytes of downloads, sizes of uploads on disk). The
 * file descriptors are counted with every client disconnected, after the peak (the
 * baseline: everything lazily opened is open by then) and after the soak.
 * BENCH_SOAK_ENGINE=node runs filegate on its node:http engine instead of uWS.
 * Fails (exit 1) on any error and on descriptors left open; never on speed or memory
 * (RSS is reported: at start, after the warm-up, at the end, and its slope after warm-up).
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { session } from './lib/backend.js'
import { env } from './lib/env.js'
import { fmt, median, progress, publish, table } from './lib/report.js'
import { freePort, startFilegate, tempDir, waitForPort } from './lib/servers.js'
import { clientKey } from './lib/sftp-servers.js'
import { BUCKET, type DoorConfig, Doors, LIST_FILES } from './lib/soak-doors.js'
import { type Tally, closedLoop, paced } from './lib/soak-load.js'
import { type Sample, fdKinds, fdsSettled, fdsStable, sample, slope } from './lib/soak-watch.js'

function seconds(name: string, dflt: number): number {
  const raw = process.env[name]
  const v = raw === undefined || raw === '' ? dflt : Number(raw)
  if (!Number.isFinite(v) || v < 1) throw new Error(`${name} must be a number of seconds >= 1 (got "${raw}")`)
  return v
}

const SOAK_S = seconds('BENCH_SOAK_SECONDS', env.quick ? 15 : 600)
const PEAK_S = seconds('BENCH_SOAK_PEAK_SECONDS', env.quick ? 4 : 30)
const SAMPLE_S = env.quick ? 2 : 10
/** filegate's HTTP engine (its `http_engine`): BENCH_SOAK_ENGINE=node runs the soak on node:http. */
const ENGINE = process.env.BENCH_SOAK_ENGINE === 'node' ? 'node' : 'auto'
const LOAD = 0.8
const PEAK_CLIENTS = 16
const SFTP_SESSIONS = 4
/** The first part of the soak, left out of the RSS slope: 20 % of it, at most 60 s. */
const WARMUP_S = Math.min(60, SOAK_S / 5)

const percentile = (xs: readonly number[], p: number): number => {
  const v = [...xs].sort((a, b) => a - b)
  return v.length === 0 ? Number.NaN : v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!
}

function describeErrors(what: string, tally: Tally): string {
  return `${what}: ${tally.errors} failed operations (${[...tally.errorsByOp].map(([op, n]) => `${op} ${n}`).join(', ')}); first: ${tally.firstErrors.join(' | ')}`
}

runBenchmark('soak', async () => {
  // The folder of the local connection: one bucket with what the mix reads.
  const folder = tempDir('soak-root')
  const payloads = { small: randomBytes(4096), big: randomBytes(2 ** 20) }
  mkdirSync(join(folder, BUCKET, 'list'), { recursive: true })
  mkdirSync(join(folder, BUCKET, 'up'))
  writeFileSync(join(folder, BUCKET, 'small.bin'), payloads.small)
  writeFileSync(join(folder, BUCKET, 'big.bin'), payloads.big)
  for (let i = 0; i < LIST_FILES; i++) writeFileSync(join(folder, BUCKET, 'list', `f${String(i).padStart(4, '0')}.txt`), `file ${i}\n`)

  const key = await clientKey(tempDir('soak-client'))
  const adminPassword = randomBytes(18).toString('base64url')
  const localPassword = randomBytes(18).toString('base64url')
  const config = join(tempDir('soak-config'), 'config.json')
  writeFileSync(config, JSON.stringify({ admin_password: adminPassword, connections: [{ label: 'soak', type: 'local', path: folder, password: localPassword }] }), { mode: 0o600 })
  const sftpPort = await freePort()
  const s3Port = await freePort()
  const server = await startFilegate(tempDir('soak-data'), env.workers, ENGINE, { config, env: { FILEGATE_SFTP_PORT: String(sftpPort), FILEGATE_S3_PORT: String(s3Port) } })
  await waitForPort(sftpPort, null, 'filegate SFTP gateway')
  await waitForPort(s3Port, null, 'filegate S3 gateway')
  const admin = async (path: string, body: unknown, token?: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { connection: 'close', ...(token ? { authorization: `Bearer ${token}` } : {}) } })
    const j = (await res.json()) as { status?: string; result?: Record<string, unknown> }
    if (j.status !== 'ok' || !j.result) throw new Error(`${path}: ${JSON.stringify(j)}`)
    return j.result
  }
  const adminToken = (await admin('/admin/api/session', { password: adminPassword })).authorization as string
  await admin('/admin/api/users', { name: 'soak', authorized_keys: [key.publicLine], connection: 'soak', root: '/', read_only: false }, adminToken)
  const s3Key = (await admin('/admin/api/users/soak/s3-keys', {}, adminToken)) as { access_key_id: string; secret_access_key: string }
  const cfg: DoorConfig = {
    folder,
    httpUrl: server.url,
    token: await session(server.url, { label: 'soak', password: localPassword }),
    sftpPort,
    sftpUser: 'soak',
    privateKey: key.privateKey,
    s3Port,
    accessKeyId: s3Key.access_key_id,
    secretAccessKey: s3Key.secret_access_key,
    payloads,
    sftpSessions: SFTP_SESSIONS,
  }
  progress(`filegate pid ${server.pid}: HTTP ${server.url}, SFTP 127.0.0.1:${sftpPort}, S3 127.0.0.1:${s3Port}, over ${folder}`)

  // 1. The peak, flat out.
  let doors = new Doors(cfg)
  await doors.open()
  const mix = doors.mix()
  progress(`warm-up, then the peak: ${PEAK_CLIENTS} clients flat out for ${PEAK_S} s, mix of ${mix.length}: ${mix.map((o) => o.name).join(', ')}`)
  const warm = await closedLoop(mix, PEAK_CLIENTS, Math.min(5, PEAK_S))
  if (warm.tally.errors > 0) throw new Error(describeErrors('the warm-up', warm.tally))
  const peak = await closedLoop(mix, PEAK_CLIENTS, PEAK_S)
  if (peak.tally.errors > 0) throw new Error(describeErrors('the peak', peak.tally))
  const peakRate = peak.tally.ops / peak.wallS
  const rate = LOAD * peakRate
  progress(`peak: ${fmt(peakRate)} ops/s, ${fmt(peak.tally.bytes / peak.wallS / 1e6)} MB/s; the soak runs at ${fmt(rate)} ops/s`)
  await doors.close()
  const fdsBefore = await fdsStable(server.pid)
  progress(`file descriptors with every client gone: ${fdsBefore.size} (${fdKinds(fdsBefore)})`)

  // 2. The soak, at 80 % of the peak.
  doors = new Doors(cfg)
  await doors.open()
  const load0 = loadavg()[0]!
  const run = paced(doors.mix(), rate, SOAK_S, PEAK_CLIENTS * 4)
  const t0 = performance.now()
  const samples: Sample[] = [await sample(server.pid, server.url, 0, 0)]
  let finished = false
  let shown = 0
  void run.done.finally(() => (finished = true))
  while (!finished) {
    const next = t0 + samples.length * SAMPLE_S * 1000
    await Promise.race([run.done, new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())))])
    if (finished) break
    const s = await sample(server.pid, server.url, (performance.now() - t0) / 1000, run.tally.ops)
    samples.push(s)
    progress(`soak ${fmt(s.t)} s: ${run.tally.ops} ops (${run.tally.errors} errors), RSS ${fmt(s.rssMiB)} MiB, ${s.fds} fds, event-loop p99 ${fmt(s.lagP99Ms)} ms`)
    for (const e of run.tally.firstErrors.slice(shown)) progress(`  error: ${e}`)
    shown = run.tally.firstErrors.length
  }
  const result = await run.done
  samples.push(await sample(server.pid, server.url, result.wallS, result.tally.ops))
  const load1 = loadavg()[0]!
  await doors.close()
  const fdsAfter = await fdsSettled(server.pid, fdsBefore.size, 30_000)
  // More descriptors than before is a leak; the ones not open before say what leaked.
  const before = new Set(fdsBefore.values())
  const leaked = fdsAfter.size > fdsBefore.size ? [...fdsAfter].filter(([, target]) => !before.has(target)) : []
  progress(`file descriptors with every client gone: ${fdsAfter.size} (${fdKinds(fdsAfter)})`)

  // Figures.
  const atWarmup = samples.find((s) => s.t >= WARMUP_S) ?? samples.at(-1)!
  const rssSlope = slope(samples.filter((s) => s.t >= WARMUP_S).map((s) => ({ x: s.t / 60, y: s.rssMiB })))
  const lags = samples.map((s) => s.lagP99Ms).filter((x): x is number => x !== null)
  const t = result.tally
  const figures = {
    peakOpsPerS: peakRate,
    peakMBps: peak.tally.bytes / peak.wallS / 1e6,
    soakOpsPerS: t.ops / result.wallS,
    soakMBps: t.bytes / result.wallS / 1e6,
    soakSeconds: result.wallS,
    operations: t.ops,
    errors: t.errors,
    scheduleMaxLagS: result.maxLagS,
    rssStartMiB: samples[0]!.rssMiB,
    rssAfterWarmupMiB: atWarmup.rssMiB,
    rssEndMiB: samples.at(-1)!.rssMiB,
    rssMaxMiB: Math.max(...samples.map((s) => s.rssMiB)),
    rssSlopeMiBPerMin: rssSlope,
    fdsBefore: fdsBefore.size,
    fdsAfter: fdsAfter.size,
    fdsLeaked: Math.max(0, fdsAfter.size - fdsBefore.size),
    eventLoopP99MedianMs: median(lags),
    eventLoopP99MaxMs: lags.length ? Math.max(...lags) : null,
    loadAverage: { start: load0, end: load1 },
  }
  const rows: string[][] = [
    ['peak (16 clients, flat out)', `${fmt(peakRate)} ops/s, ${fmt(figures.peakMBps)} MB/s`],
    [`soak (${LOAD * 100} % of peak, ${fmt(result.wallS)} s)`, `${fmt(figures.soakOpsPerS)} ops/s, ${fmt(figures.soakMBps)} MB/s, schedule late by ${fmt(result.maxLagS * 1000)} ms at most`],
    ['operations / errors', `${t.ops} / ${t.errors}`],
    ['RSS start / after warm-up / end / max', `${fmt(figures.rssStartMiB)} / ${fmt(atWarmup.rssMiB)} (at ${fmt(atWarmup.t)} s) / ${fmt(figures.rssEndMiB)} / ${fmt(figures.rssMaxMiB)} MiB`],
    ['RSS slope after warm-up', `${fmt(rssSlope)} MiB/min`],
    ['open fds before / after (clients gone)', `${fdsBefore.size} / ${fdsAfter.size}, ${Math.max(0, fdsAfter.size - fdsBefore.size)} left open`],
    ['event-loop delay p99 per interval, median / max', `${fmt(figures.eventLoopP99MedianMs)} / ${fmt(figures.eventLoopP99MaxMs)} ms`],
    ['load average (1 min) start / end', `${fmt(load0)} / ${fmt(load1)}`],
  ]
  const opRows = [...t.ms].map(([name, ms]) => [name, String(ms.length), String(t.errorsByOp.get(name) ?? 0), fmt(percentile(ms, 50)), fmt(percentile(ms, 99))])
  for (const [name, n] of t.errorsByOp) if (!t.ms.has(name)) opRows.push([name, '0', String(n), '–', '–'])
  const rssRows = samples.map((s) => [fmt(s.t), fmt(s.rssMiB), String(s.fds), fmt(s.lagP99Ms)])
  await server.stop()
  publish({
    name: 'soak',
    settings: { engine: ENGINE, soakSeconds: SOAK_S, peakSeconds: PEAK_S, load: LOAD, peakClients: PEAK_CLIENTS, sftpSessions: SFTP_SESSIONS, workers: env.workers, sampleSeconds: SAMPLE_S, warmupSeconds: WARMUP_S, mix: mix.map((o) => o.name) },
    figures,
    ratios: {},
    runs: samples,
    skipped: {},
    table: [
      table(['figure', 'value'], rows),
      '',
      table(['operation (soak)', 'count', 'errors', 'p50 ms', 'p99 ms'], opRows),
      '',
      table(['t (s)', 'RSS MiB', 'fds', 'event-loop p99 ms'], rssRows),
    ].join('\n'),
  })
  const failures: string[] = []
  if (t.errors > 0) failures.push(describeErrors('the soak', t))
  if (fdsAfter.size > fdsBefore.size) failures.push(`${fdsAfter.size - fdsBefore.size} file descriptors left open after the soak: ${leaked.slice(0, 20).map(([fd, target]) => `${fd} → ${target}`).join(', ')}`)
  if (failures.length > 0) throw new Error(failures.join('\n'))
})

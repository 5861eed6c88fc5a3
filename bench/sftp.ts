/**
 * @module bench/sftp
 * Uploads and downloads with OpenSSH's `sftp -b` (aes128-gcm@openssh.com, no compression),
 * the same client and options for every server, all serving the same folder
 * (bench/lib/sftp-servers.ts): filegate's SFTP gateway on a local connection, OpenSSH
 * sshd + internal-sftp, and `rclone serve sftp`. Cases:
 * - download: one big file (BENCH_SIZE_MB, default 1 GiB, random bytes), `get big.bin /dev/null`;
 * - upload: the same file, `put <file> up-<server>.bin`;
 * - N uploads at once: BENCH_CLIENTS (8) `sftp -b` clients started together, each putting
 *   a file of a quarter of BENCH_SIZE_MB (256 MiB by default) under its own name;
 *   filegate and OpenSSH only.
 * Every upload's size is checked afterwards (and its SHA-256 in quick mode), then removed.
 * Figures: MB/s (10^6 bytes/s, all clients together, from the first client's start to the
 * last one's exit, logins included: about 0.1 s), server CPU s/GiB (all threads, and sshd's
 * reaped per-session processes), the sftp clients' CPU s/GiB, ratios against OpenSSH, and
 * for filegate its main thread's share of the process's CPU during the transfer. The
 * file is served from the page cache (read once before, as every other benchmark here;
 * BENCH_SFTP_COLD=1 drops the page cache before each download instead, root only).
 */
import { createHash } from 'node:crypto'
import { createReadStream, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { GiB, env, selected } from './lib/env.js'
import { bigFile, plant, warm } from './lib/files.js'
import { mainThreadMeter, reapedChildrenCpuSeconds } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { CIPHER, type SftpTarget, clientKey, sftpBatch, startFilegateSftp, startOpenSsh, startRclone } from './lib/sftp-servers.js'
import { tempDir } from './lib/servers.js'

const cold = ['1', 'true', 'yes'].includes((process.env.BENCH_SFTP_COLD ?? '').toLowerCase())

async function sha256(path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const c of createReadStream(path, { highWaterMark: 4 << 20 })) h.update(c as Buffer)
  return h.digest('hex')
}

/** Clients of the "N uploads at once" case, and the MiB each sends. */
const PARALLEL = env.clients
const PARALLEL_MB = Math.max(1, Math.round(env.sizeMb / 4))
const PARALLEL_CASE = `${PARALLEL} uploads`

/** "download", "upload", or PARALLEL_CASE. */
type Case = string

interface Sample {
  readonly run: number
  readonly server: string
  readonly kase: Case
  readonly mbps: number
  readonly cpuPerGiB: number
  readonly clientCpuPerGiB: number
  /** filegate's main thread's CPU ÷ its process's CPU during the transfer (NaN for the others). */
  readonly mainShare: number
}

runBenchmark('sftp', async () => {
  const source = bigFile()
  const size = statSync(source).size
  const folder = tempDir('sftp-root')
  plant(source, join(folder, 'big.bin'))
  warm(source)
  const work = tempDir('sftp-client')
  const key = await clientKey(work)

  const skipped: Record<string, string> = {}
  const targets: SftpTarget[] = []
  const fg = await startFilegateSftp(folder, key, env.workers)
  if ('skipped' in fg) skipped.filegate = fg.skipped
  else targets.push(fg)
  targets.push(await startOpenSsh(folder, key))
  const rc = await startRclone(folder, key)
  if ('skipped' in rc) skipped.rclone = rc.skipped
  else targets.push(rc)

  // BENCH_ONLY picks servers ("filegate") or cases ("upload filegate", "download", "8 uploads").
  const casesOf = (t: SftpTarget): Case[] =>
    ['download', 'upload', ...(t.name === 'rclone' ? [] : [PARALLEL_CASE])].filter((c) => selected(`${c} ${t.name}`))
  const chosen = targets.filter((t) => casesOf(t).length > 0)
  const parallelSource = chosen.some((t) => casesOf(t).includes(PARALLEL_CASE)) ? bigFile(PARALLEL_MB) : null
  if (parallelSource) warm(parallelSource)
  const expectHash = env.quick ? new Map([[source, await sha256(source)], ...(parallelSource ? [[parallelSource, await sha256(parallelSource)] as const] : [])]) : null

  /** Checks an upload landed whole (and unchanged, in quick mode), then removes it. */
  const checkUpload = async (t: SftpTarget, name: string, sent: string) => {
    const landed = join(folder, name)
    const want = statSync(sent).size
    const got = statSync(landed, { throwIfNoEntry: false })?.size
    if (got !== want) throw new Error(`${t.name}: the upload of ${name} left ${got ?? 'no file'} bytes instead of ${want}`)
    if (expectHash && (await sha256(landed)) !== expectHash.get(sent)) throw new Error(`${t.name}: the bytes of ${name} differ from the file sent`)
    rmSync(landed)
  }

  const once = async (t: SftpTarget, kase: Case, run: number): Promise<Sample> => {
    if (kase === 'download' && cold) writeFileSync('/proc/sys/vm/drop_caches', '1\n')
    await t.settle()
    const cpu0 = t.cpu()
    const client0 = reapedChildrenCpuSeconds()
    const mainShare = t.name === 'filegate' ? mainThreadMeter(t.pid) : null
    const t0 = performance.now()
    let bytes: number
    if (kase === 'download') {
      await sftpBatch(t, key, ['get big.bin /dev/null'], work)
      bytes = size
    } else if (kase === 'upload') {
      await sftpBatch(t, key, [`put ${source} up-${t.name}.bin`], work)
      bytes = size
    } else {
      const from = parallelSource!
      await Promise.all(Array.from({ length: PARALLEL }, (_, i) => sftpBatch(t, key, [`put ${from} up-${t.name}-${i}.bin`], work)))
      bytes = PARALLEL * statSync(from).size
    }
    const wallS = (performance.now() - t0) / 1000
    const share = mainShare?.().share ?? Number.NaN
    const clientCpu = reapedChildrenCpuSeconds() - client0
    await t.settle()
    const cpu = t.cpu() - cpu0
    if (kase === 'upload') await checkUpload(t, `up-${t.name}.bin`, source)
    if (kase === PARALLEL_CASE) for (let i = 0; i < PARALLEL; i++) await checkUpload(t, `up-${t.name}-${i}.bin`, parallelSource!)
    const gib = bytes / GiB
    return { run, server: t.name, kase, mbps: bytes / wallS / 1e6, cpuPerGiB: cpu / gib, clientCpuPerGiB: clientCpu / gib, mainShare: share }
  }

  const allCases: Case[] = ['download', 'upload', PARALLEL_CASE]
  progress(`warm-up: each case once with each server (${CIPHER})`)
  for (const t of chosen) for (const c of casesOf(t)) await once(t, c, 0)
  const samples: Sample[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const kase of allCases) {
      // Servers interleaved within a run, so drift on a noisy machine hits all of them alike.
      for (const t of chosen.filter((c) => casesOf(c).includes(kase))) {
        const s = await once(t, kase, run)
        samples.push(s)
        const share = Number.isNaN(s.mainShare) ? '' : `, main thread ${fmt(s.mainShare, 2)} of its CPU`
        progress(`run ${run}/${env.runs}, ${kase} ${t.name}: ${fmt(s.mbps)} MB/s, ${fmt(s.cpuPerGiB)} server CPU s/GiB${share}${kase === 'download' ? '' : ' (sizes verified)'}`)
      }
    }
  }

  const med = (server: string, kase: Case, k: 'mbps' | 'cpuPerGiB' | 'clientCpuPerGiB' | 'mainShare') =>
    median(samples.filter((s) => s.server === server && s.kase === kase).map((s) => s[k]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  const label = (kase: Case) => (kase === PARALLEL_CASE ? `${PARALLEL} uploads × ${PARALLEL_MB} MiB` : `${kase} ${Math.round(size / 2 ** 20)} MiB`)
  for (const kase of allCases) {
    for (const t of chosen.filter((c) => casesOf(c).includes(kase))) {
      const n = t.name
      const mbps = ratio(med(n, kase, 'mbps'), med('openssh', kase, 'mbps'))
      const cpu = ratio(med(n, kase, 'cpuPerGiB'), med('openssh', kase, 'cpuPerGiB'))
      const share = med(n, kase, 'mainShare')
      figures[`${kase} ${n}`] = { mbps: med(n, kase, 'mbps'), cpuPerGiB: med(n, kase, 'cpuPerGiB'), clientCpuPerGiB: med(n, kase, 'clientCpuPerGiB'), ...(n === 'filegate' ? { mainThreadShare: share } : {}) }
      if (n !== 'openssh') {
        ratios[`${kase} ${n}/openssh MB/s`] = mbps
        ratios[`${kase} ${n}/openssh CPU per GiB`] = cpu
      }
      rows.push([label(kase), n, fmt(med(n, kase, 'mbps')), fmt(med(n, kase, 'cpuPerGiB')), fmt(med(n, kase, 'clientCpuPerGiB')), fmtRatio(mbps), fmtRatio(cpu), fmt(share, 2)])
    }
  }
  publish({
    name: 'sftp',
    settings: { sizeMiB: env.sizeMb, parallel: { clients: PARALLEL, sizeMiB: PARALLEL_MB }, cipher: CIPHER, client: 'OpenSSH sftp -b', runs: env.runs, workers: env.workers, pageCache: cold ? 'dropped before each download' : 'warm' },
    figures,
    ratios,
    runs: samples,
    skipped,
    table: table(['transfer', 'server', 'MB/s', 'server CPU s/GiB', 'sftp CPU s/GiB', 'MB/s vs OpenSSH', 'CPU vs OpenSSH', 'main-thread CPU share'], rows),
  })
})

/**
 * @module bench/sftp
 * One big file (BENCH_SIZE_MB, default 1 GiB, random bytes) downloaded and uploaded
 * with OpenSSH's `sftp -b` (aes128-gcm@openssh.com, no compression), the same client
 * and options for every server, all serving the same folder (bench/lib/sftp-servers.ts):
 * filegate's SFTP gateway on a local connection, OpenSSH sshd + internal-sftp, and
 * `rclone serve sftp`. Download: `get big.bin /dev/null`; upload: `put <file> up-<server>.bin`,
 * whose size is checked afterwards (and SHA-256 in quick mode), then removed.
 * Figures: MB/s (10^6 bytes/s, the client's wall time, login included: about 0.1 s),
 * server CPU s/GiB (all threads, and sshd's reaped per-session processes), the
 * sftp client's CPU s/GiB, ratios against OpenSSH. The file is served from the page
 * cache (read once before, as every other benchmark here; BENCH_SFTP_COLD=1 drops the
 * page cache before each download instead, root only).
 */
import { createHash } from 'node:crypto'
import { createReadStream, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { GiB, env, selected } from './lib/env.js'
import { bigFile, plant, warm } from './lib/files.js'
import { reapedChildrenCpuSeconds } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { CIPHER, type SftpTarget, clientKey, sftpBatch, startFilegateSftp, startOpenSsh, startRclone } from './lib/sftp-servers.js'
import { tempDir } from './lib/servers.js'

const cold = ['1', 'true', 'yes'].includes((process.env.BENCH_SFTP_COLD ?? '').toLowerCase())

async function sha256(path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const c of createReadStream(path, { highWaterMark: 4 << 20 })) h.update(c as Buffer)
  return h.digest('hex')
}

type Direction = 'download' | 'upload'

interface Sample {
  readonly run: number
  readonly server: string
  readonly direction: Direction
  readonly mbps: number
  readonly cpuPerGiB: number
  readonly clientCpuPerGiB: number
}

runBenchmark('sftp', async () => {
  const source = bigFile()
  const size = statSync(source).size
  const folder = tempDir('sftp-root')
  plant(source, join(folder, 'big.bin'))
  warm(source)
  const expectHash = env.quick ? await sha256(source) : null
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
  // BENCH_ONLY picks servers ("filegate") or cases ("upload filegate", "download").
  const chosen = targets.filter((t) => selected(`download ${t.name}`) || selected(`upload ${t.name}`))
  const directions = (t: SftpTarget) => (['download', 'upload'] as const).filter((d) => selected(`${d} ${t.name}`))

  const once = async (t: SftpTarget, direction: Direction, run: number): Promise<Sample> => {
    const landed = join(folder, `up-${t.name}.bin`)
    if (direction === 'download' && cold) writeFileSync('/proc/sys/vm/drop_caches', '1\n')
    await t.settle()
    const cpu0 = t.cpu()
    const client0 = reapedChildrenCpuSeconds()
    const r = await sftpBatch(t, key, direction === 'download' ? ['get big.bin /dev/null'] : [`put ${source} up-${t.name}.bin`], work)
    const clientCpu = reapedChildrenCpuSeconds() - client0
    await t.settle()
    const cpu = t.cpu() - cpu0
    if (direction === 'upload') {
      const got = statSync(landed, { throwIfNoEntry: false })?.size
      if (got !== size) throw new Error(`${t.name}: the upload left ${got ?? 'no file'} bytes instead of ${size}`)
      if (expectHash && (await sha256(landed)) !== expectHash) throw new Error(`${t.name}: the uploaded bytes differ from the file sent`)
      rmSync(landed)
    }
    const gib = size / GiB
    return { run, server: t.name, direction, mbps: size / r.wallS / 1e6, cpuPerGiB: cpu / gib, clientCpuPerGiB: clientCpu / gib }
  }

  progress(`warm-up: one download and one upload with each server (${CIPHER})`)
  for (const t of chosen) for (const d of directions(t)) await once(t, d, 0)
  const samples: Sample[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const direction of ['download', 'upload'] as const) {
      for (const t of chosen.filter((c) => directions(c).includes(direction))) {
        const s = await once(t, direction, run)
        samples.push(s)
        progress(`run ${run}/${env.runs}, ${direction} ${t.name}: ${fmt(s.mbps)} MB/s, ${fmt(s.cpuPerGiB)} server CPU s/GiB${direction === 'upload' ? ' (size verified)' : ''}`)
      }
    }
  }

  const med = (server: string, direction: Direction, k: 'mbps' | 'cpuPerGiB' | 'clientCpuPerGiB') =>
    median(samples.filter((s) => s.server === server && s.direction === direction).map((s) => s[k]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const direction of ['download', 'upload'] as const) {
    for (const t of chosen.filter((c) => directions(c).includes(direction))) {
      const n = t.name
      const mbps = ratio(med(n, direction, 'mbps'), med('openssh', direction, 'mbps'))
      const cpu = ratio(med(n, direction, 'cpuPerGiB'), med('openssh', direction, 'cpuPerGiB'))
      figures[`${direction} ${n}`] = { mbps: med(n, direction, 'mbps'), cpuPerGiB: med(n, direction, 'cpuPerGiB'), clientCpuPerGiB: med(n, direction, 'clientCpuPerGiB') }
      if (n !== 'openssh') {
        ratios[`${direction} ${n}/openssh MB/s`] = mbps
        ratios[`${direction} ${n}/openssh CPU per GiB`] = cpu
      }
      rows.push([direction, n, fmt(med(n, direction, 'mbps')), fmt(med(n, direction, 'cpuPerGiB')), fmt(med(n, direction, 'clientCpuPerGiB')), fmtRatio(mbps), fmtRatio(cpu)])
    }
  }
  publish({
    name: 'sftp',
    settings: { sizeMiB: env.sizeMb, cipher: CIPHER, client: 'OpenSSH sftp -b', runs: env.runs, workers: env.workers, pageCache: cold ? 'dropped before each download' : 'warm' },
    figures,
    ratios,
    runs: samples,
    skipped,
    table: table(['transfer', 'server', 'MB/s', 'server CPU s/GiB', 'sftp CPU s/GiB', 'MB/s vs OpenSSH', 'CPU vs OpenSSH'], rows),
  })
})

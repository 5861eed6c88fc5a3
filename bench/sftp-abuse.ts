/**
 * @module bench/sftp-abuse
 * The SFTP door under the attacks of issue 23's High findings, with the default caps,
 * while another user (a logged-in ssh2 client from another address) stats a file and
 * reads 64 KiB, one request after the other. Cases, each on a fresh filegate (the
 * compiled CLI, its own process):
 * - idle: the user alone (the reference);
 * - banners: 2,000 connections from 10 addresses that send an SSH banner and nothing
 *   more, reopened as soon as they are closed (pre-auth caps, key exchange grace);
 * - window: a client that opens a 1 GiB SSH window, stops reading its socket and asks
 *   300 MiB of READs (the per-connection send budget);
 * - handles: connections opening 30 read handles with reads in flight, cut, again and
 *   again (read-ahead streams released with their connection).
 * Figures: the user's p50/p99 (ms) and failures during the attack; the server's RSS
 * growth (peak minus before) and its RSS 10 s after the attack ended; its descriptors at
 * the peak. The attacker runs in bench/clients/sftp-abuse.ts.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ssh2, { type SFTPWrapper } from 'ssh2'
import type { AbuseOptions } from './clients/sftp-abuse.js'
import { runBenchmark } from './lib/bench.js'
import { MiB, ROOT, env } from './lib/env.js'
import { run } from './lib/proc.js'
import { fmt, median, progress, publish, table } from './lib/report.js'
import { type SftpTarget, clientKey, startFilegateSftp } from './lib/sftp-servers.js'
import { tempDir } from './lib/servers.js'

interface Case {
  readonly name: string
  readonly attack: Omit<AbuseOptions, 'port' | 'user' | 'password' | 'seconds'> | null
}

const CASES: readonly Case[] = [
  { name: 'idle (reference)', attack: null },
  { name: 'banners', attack: { mode: 'banners', count: 2000, addresses: 10 } },
  { name: 'window', attack: { mode: 'window', file: '/big.bin', reads: 1200 } },
  { name: 'handles', attack: { mode: 'handles' } },
]

const percentile = (xs: readonly number[], p: number): number => {
  const v = [...xs].sort((a, b) => a - b)
  return v.length === 0 ? Number.NaN : v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!
}

const descriptors = (pid: number): number => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length
  } catch {
    return Number.NaN
  }
}

async function victim(target: SftpTarget): Promise<{ sftp: SFTPWrapper; end: () => void }> {
  const client = new ssh2.Client()
  client.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.connect({ host: '127.0.0.1', port: target.port, username: target.user, password: target.password!, readyTimeout: 60_000 })
  })
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))))
  return { sftp, end: () => client.end() }
}

/** The user's loop: stat, then read 64 KiB, timed each; until `stop` resolves. */
async function userLoop(sftp: SFTPWrapper, stop: Promise<void>): Promise<{ ms: number[]; failures: number }> {
  let done = false
  void stop.then(() => (done = true))
  const ms: number[] = []
  let failures = 0
  const buf = Buffer.alloc(64 * 1024)
  while (!done) {
    const t0 = performance.now()
    try {
      await new Promise<void>((resolve, reject) => sftp.stat('small.bin', (err) => (err ? reject(err) : resolve())))
      await new Promise<void>((resolve, reject) =>
        sftp.open('small.bin', 'r', (err, h) => {
          if (err) return reject(err)
          sftp.read(h, buf, 0, buf.length, 0, (e) => sftp.close(h, () => (e ? reject(e) : resolve())))
        }),
      )
      ms.push(performance.now() - t0)
    } catch {
      failures++
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return { ms, failures }
}

runBenchmark('sftp-abuse', async () => {
  const seconds = env.quick ? 6 : 20
  const folder = tempDir('sftp-abuse-root')
  writeFileSync(join(folder, 'small.bin'), randomBytes(64 * 1024))
  writeFileSync(join(folder, 'big.bin'), randomBytes(16 * MiB))
  for (let i = 0; i < 30; i++) writeFileSync(join(folder, `f${i}.bin`), randomBytes(MiB))
  const key = await clientKey(tempDir('sftp-abuse-client'))
  const samples: Record<string, unknown>[] = []
  for (let r = 1; r <= env.runs; r++) {
    for (const c of CASES) {
      const target = await startFilegateSftp(folder, key, env.workers)
      if ('skipped' in target) throw new Error(target.skipped)
      try {
        const user = await victim(target)
        const before = target.memory().rss
        let peak = before
        let fds = descriptors(target.pid)
        const sampler = setInterval(() => {
          peak = Math.max(peak, target.memory().rss)
          fds = Math.max(fds, descriptors(target.pid))
        }, 250)
        let attacker: Promise<string> = Promise.resolve('{}')
        if (c.attack) {
          const opts: AbuseOptions = { ...c.attack, port: target.port, user: target.user, password: target.password!, seconds }
          attacker = run(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'clients', 'sftp-abuse.ts'), JSON.stringify(opts)], { cwd: ROOT }).then((f) => f.stdout.trim().split('\n').pop() ?? '{}')
        }
        const stop = new Promise<void>((resolve) => setTimeout(resolve, seconds * 1000))
        const [loop, out] = await Promise.all([userLoop(user.sftp, stop), attacker])
        clearInterval(sampler)
        await new Promise((res) => setTimeout(res, 10_000))
        const after = target.memory().rss
        user.end()
        const result = JSON.parse(out) as Record<string, unknown>
        const sample = {
          case: c.name,
          run: r,
          p50Ms: percentile(loop.ms, 50),
          p99Ms: percentile(loop.ms, 99),
          ops: loop.ms.length,
          failures: loop.failures,
          rssGrowthMiB: (peak - before) / MiB,
          rssAfterMiB: (after - before) / MiB,
          fdsPeak: fds,
          attacker: result,
        }
        samples.push(sample)
        progress(`run ${r}/${env.runs}, ${c.name}: p50 ${fmt(sample.p50Ms)} ms, p99 ${fmt(sample.p99Ms)} ms, ${loop.failures} failed of ${loop.ms.length + loop.failures}, RSS +${fmt(sample.rssGrowthMiB)} MiB (10 s after: +${fmt(sample.rssAfterMiB)}), fds ${fds}, attacker ${out}`)
        if (result.type === 'error') throw new Error(`the ${c.name} attacker failed: ${String(result.error)}`)
      } finally {
        await target.stop()
      }
    }
  }
  const med = (name: string, k: string) => median(samples.filter((s) => s.case === name).map((s) => s[k] as number))
  const rows = CASES.map((c) => [c.name, fmt(med(c.name, 'p50Ms')), fmt(med(c.name, 'p99Ms')), fmt(med(c.name, 'failures')), fmt(med(c.name, 'rssGrowthMiB')), fmt(med(c.name, 'rssAfterMiB')), fmt(med(c.name, 'fdsPeak'))])
  const figures = Object.fromEntries(CASES.map((c) => [c.name, { p50Ms: med(c.name, 'p50Ms'), p99Ms: med(c.name, 'p99Ms'), failures: med(c.name, 'failures'), rssGrowthMiB: med(c.name, 'rssGrowthMiB'), rssAfterMiB: med(c.name, 'rssAfterMiB'), fdsPeak: med(c.name, 'fdsPeak') }]))
  publish({
    name: 'sftp-abuse',
    settings: { workers: env.workers, seconds, runs: env.runs },
    figures,
    ratios: {},
    runs: samples,
    skipped: {},
    table: table(['case', 'user p50 ms', 'user p99 ms', 'user failures', 'server RSS growth MiB', 'RSS 10 s after MiB', 'server fds (peak)'], rows),
  })
})

/**
 * @module bench/slow-clients
 * The slow-client attack (test/helpers/slow-clients.ts): 300 connections that ask for a
 * shared 16 MiB file and never read it, 140 uploads that send their headers and one
 * byte, while a logged-in user lists a folder and reads a 4 KiB file one request after
 * the other. Three cases against filegate's own process (the compiled CLI):
 * - idle: the user alone (the reference);
 * - attack, default settings: downloads from one address, uploads from another (the
 *   limits per address answer the excess with 429);
 * - attack, all admitted: the limits raised and the connections spread over ten
 *   addresses each, so that all 440 become live transfers.
 * Figures: the user's p50/p99 latency and the server's RSS growth (peak minus before).
 */
import type { ChildProcess } from 'node:child_process'
import { type SlowClientResult, runSlowClients } from '../test/helpers/slow-clients.js'
import { spawnFilegate } from '../test/helpers/spawn-filegate.js'
import { runBenchmark } from './lib/bench.js'
import { distDir } from './lib/build.js'
import { env } from './lib/env.js'
import { onCleanup, stop } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { tempDir } from './lib/servers.js'

interface Case {
  readonly name: string
  readonly env: Record<string, string>
  readonly downloads: number
  readonly uploads: number
  readonly addresses: number
}

const RAISED = { FILEGATE_TRANSFERS_PER_ADDRESS: '100000', FILEGATE_TRANSFERS_PER_CREDENTIAL: '100000' }
const CASES: readonly Case[] = [
  { name: 'idle (reference)', env: {}, downloads: 0, uploads: 0, addresses: 1 },
  { name: 'attack, default settings', env: {}, downloads: 300, uploads: 140, addresses: 1 },
  { name: 'attack, all admitted', env: RAISED, downloads: 300, uploads: 140, addresses: 10 },
]

async function startServer(extra: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const { url, child } = await spawnFilegate({ dataDir: tempDir('slow'), workers: env.workers, env: extra, dist: distDir() })
  onCleanup(() => stop(child))
  return { url, child }
}

runBenchmark('slow-clients', async () => {
  const seconds = env.quick ? 3 : 8
  const samples: (SlowClientResult & { case: string; run: number })[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const c of CASES) {
      const { url, child } = await startServer(c.env)
      const r = await runSlowClients({ url, pid: child.pid!, downloads: c.downloads, uploads: c.uploads, addresses: c.addresses, seconds })
      await stop(child)
      samples.push({ ...r, case: c.name, run })
      progress(
        `run ${run}/${env.runs}, ${c.name}: p50 ${fmt(r.p50Ms)} ms, p99 ${fmt(r.p99Ms)} ms, ${r.failures} failed of ${r.requests}, ` +
          `RSS +${fmt(r.rssGrowthMiB)} MiB, downloads ${JSON.stringify(r.downloadStatus)}, uploads ${JSON.stringify(r.uploadStatus)}, live transfers ${r.serverTransfers}`,
      )
    }
  }
  const med = (name: string, key: 'p50Ms' | 'p99Ms' | 'rssGrowthMiB' | 'failures') => median(samples.filter((s) => s.case === name).map((s) => s[key]))
  const idle = CASES[0]!.name
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows = CASES.map((c) => {
    const last = samples.filter((s) => s.case === c.name).pop()!
    figures[c.name] = { p50Ms: med(c.name, 'p50Ms'), p99Ms: med(c.name, 'p99Ms'), rssGrowthMiB: med(c.name, 'rssGrowthMiB'), failures: med(c.name, 'failures') }
    if (c.name !== idle) ratios[`p99 ${c.name} / idle`] = ratio(med(c.name, 'p99Ms'), med(idle, 'p99Ms'))
    const admitted = c.downloads === 0 ? '–' : `${last.downloadStatus['200'] ?? 0} + ${(last.serverTransfers ?? 0) - (last.downloadStatus['200'] ?? 0)} (429: ${(last.downloadStatus['429'] ?? 0) + (last.uploadStatus['429'] ?? 0)})`
    return [
      c.name,
      admitted,
      fmt(med(c.name, 'p50Ms')),
      fmt(med(c.name, 'p99Ms')),
      c.name === idle ? '1x' : fmtRatio(ratios[`p99 ${c.name} / idle`] ?? null),
      fmt(med(c.name, 'failures')),
      fmt(med(c.name, 'rssGrowthMiB')),
    ]
  })
  publish({
    name: 'slow-clients',
    settings: { workers: env.workers, seconds, runs: env.runs, downloads: 300, uploads: 140, fileMiB: 16 },
    figures,
    ratios,
    runs: samples,
    skipped: {},
    table: table(['case', 'live downloads + uploads (refused)', 'user p50 ms', 'user p99 ms', 'p99 vs idle', 'failed requests', 'server RSS growth MiB'], rows),
  })
})

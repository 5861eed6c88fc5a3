/**
 * @module bench/lib/env
 * The suite's knobs, read once from the environment. `BENCH_QUICK=1` (what
 * `npm run bench:quick` sets) shrinks every size and duration so the whole suite
 * runs in under two minutes: it checks that the benchmarks still work, its figures
 * mean little.
 */
import { cpus } from 'node:os'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'

function num(name: string, dflt: number, min = 0): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return dflt
  const v = Number(raw)
  if (!Number.isFinite(v) || v < min) throw new Error(`${name} must be a number >= ${min} (got "${raw}")`)
  return v
}

const flag = (name: string): boolean => ['1', 'true', 'yes'].includes((process.env[name] ?? '').toLowerCase())

export const QUICK = flag('BENCH_QUICK')

/** The repository's root folder. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export const env = {
  quick: QUICK,
  /** Size of the big file (download, upload) and of the mixed zip folder, in MiB. */
  sizeMb: num('BENCH_SIZE_MB', QUICK ? 64 : 1024, 1),
  /** Seconds per autocannon measurement (small), and per pool-hop measurement / 5. */
  durationS: num('BENCH_DURATION_S', QUICK ? 2 : 10, 1),
  /** filegate worker threads (and the pool-hop pool's). */
  workers: num('BENCH_WORKERS', 2, 1),
  /** Repetitions of each measurement; figures are medians. */
  runs: num('BENCH_RUNS', QUICK ? 1 : 3, 1),
  /** Concurrent clients of the "many clients" download. */
  clients: num('BENCH_CLIENTS', 8, 1),
  /** autocannon connections. */
  connections: num('BENCH_CONNECTIONS', 100, 1),
  /** Files in the small-files zip folder. */
  smallFiles: num('BENCH_SMALL_FILES', QUICK ? 1000 : 10_000, 1),
  /** Keep filegate's one-log-line-per-request on (off by default: the references do not log). */
  logRequests: flag('BENCH_LOG_REQUESTS'),
  /**
   * The engine comparison (small, http-download): also measure filegate with its HTTP
   * engine forced to node:http ("filegate-node"). BENCH_NODE_ENGINE=0 turns it off.
   */
  nodeEngine: (process.env.BENCH_NODE_ENGINE ?? '1') !== '0',
  /** Only the cases (or servers) whose name contains one of these, comma-separated, e.g. to profile one. */
  only: (process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''),
  /** Start filegate (and the node reference) with --cpu-prof; profiles go next to the results. */
  cpuProf: flag('BENCH_CPU_PROF'),
  /** Never run apt-get, even as root. */
  noInstall: flag('BENCH_NO_INSTALL'),
  /** Do not rebuild dist/ (use what is there). */
  skipBuild: flag('BENCH_SKIP_BUILD'),
  /** Generated inputs, reused across runs. */
  cacheDir: process.env.BENCH_CACHE_DIR || join(tmpdir(), 'filegate-bench-cache'),
  resultsDir: join(ROOT, 'bench', 'results'),
  cores: cpus().length,
}

export const MiB = 1024 * 1024
export const GiB = 1024 * MiB

/** Whether a case (by name) is selected by BENCH_ONLY. */
export const selected = (name: string): boolean => env.only.length === 0 || env.only.some((o) => name.includes(o))

/**
 * @module bench/pool-hop
 * What the worker-pool design costs: the same operation on the local driver called
 * in this thread (createLocalDriver) vs through the pool (RemoteDriver over a
 * WorkerPool of BENCH_WORKERS threads: a pool task, typed messages, and for reads
 * a MessageChannel with credits and transferred buffers). In-process, no HTTP, on
 * the compiled code (a copy of dist/, see lib/build.ts).
 *
 * Operations, each the same work on both sides (what workers/entry.ts does for the op):
 * stat of a file; list of a 50-entry folder (stat + list + sort); read of a 4 KiB
 * file and of a 64 MiB file (stat + read every chunk).
 * Figures: µs per op one at a time (latency; "hop" is the difference), CPU µs per op
 * (all threads of this process), ops/s with 32 in flight (throughput; 4 for the big
 * read), and MB/s for the big read.
 *
 * BENCH_BASELINE_DIST=<another build's dist/> adds a third side, the same pool of that
 * build (say, main's), measured in turn with the others in the same process: on a busy
 * machine, before/after figures are only comparable that way.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Driver, OpContext } from '../core/driver.js'
import type * as ClientModule from '../workers/client.js'
import type * as LocalModule from '../workers/drivers/local.js'
import type * as OpsModule from '../workers/ops.js'
import type * as PoolModule from '../workers/pool.js'
import { runBenchmark } from './lib/bench.js'
import { distDir } from './lib/build.js'
import { MiB, env, selected } from './lib/env.js'
import { bigFile, plant, smallInputs, warm } from './lib/files.js'
import { onCleanup } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { tempDir } from './lib/servers.js'

const dist = <T>(rel: string): Promise<T> => import(pathToFileURL(join(distDir(), rel)).href) as Promise<T>

/** A fresh context per op, as each HTTP request has: RemoteDriver listens on its signal. */
const ctx = (): OpContext => ({ signal: new AbortController().signal, requestId: 'bench' })

async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0
  for await (const c of body) n += c.byteLength
  return n
}

interface Op {
  readonly name: string
  /** Bytes per op, for MB/s (big read only). */
  readonly bytes?: number
  readonly concurrency: number
  readonly run: (d: Driver) => Promise<unknown>
}

interface Figures {
  readonly usPerOp: number
  readonly cpuUsPerOp: number
  readonly opsPerS: number
}

/** Runs `op` for `seconds`, `concurrency` at a time: ops/s and CPU per op. */
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
  const wall = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  return { opsPerS: count / wall, cpuUsPerOp: (cpu.user + cpu.system) / count }
}

async function measure(d: Driver, op: Op, seconds: number): Promise<Figures> {
  const seq = await timed(seconds, 1, () => op.run(d))
  const par = await timed(seconds, op.concurrency, () => op.run(d))
  return { usPerOp: 1e6 / seq.opsPerS, cpuUsPerOp: seq.cpuUsPerOp, opsPerS: par.opsPerS }
}

runBenchmark('pool-hop', async () => {
  const { createLocalDriver } = await dist<typeof LocalModule>('workers/drivers/local.js')
  const { WorkerPool } = await dist<typeof PoolModule>('workers/pool.js')
  const { RemoteDriver } = await dist<typeof ClientModule>('workers/client.js')
  const { listDir } = await dist<typeof OpsModule>('workers/ops.js')

  const root = tempDir('pool-hop')
  const { dir50, file4k } = smallInputs()
  const big = bigFile(64)
  plant(dir50, join(root, 'dir50'))
  plant(file4k, join(root, 'file4k.txt'))
  plant(big, join(root, 'big.bin'))
  warm(root)

  const local = await createLocalDriver({ root })
  const pool = new WorkerPool({ workers: env.workers, tasksPerWorker: 64, maxQueue: 1024 })
  onCleanup(() => pool.close())
  const remote = new RemoteDriver(pool, { type: 'local', root }, local.features)
  const drivers: [string, Driver][] = [
    ['in-thread', local],
    ['pool', remote],
  ]
  const baselineDist = process.env.BENCH_BASELINE_DIST
  if (baselineDist) {
    const from = <T>(rel: string): Promise<T> => import(pathToFileURL(join(baselineDist, rel)).href) as Promise<T>
    const base = await from<typeof PoolModule>('workers/pool.js')
    const baseClient = await from<typeof ClientModule>('workers/client.js')
    const basePool = new base.WorkerPool({ workers: env.workers, tasksPerWorker: 64, maxQueue: 1024 })
    onCleanup(() => basePool.close())
    drivers.push(['baseline pool', new baseClient.RemoteDriver(basePool, { type: 'local', root }, local.features)])
  }

  const bigBytes = 64 * MiB
  const readAll = async (d: Driver, path: string, expect: number) => {
    const c = ctx()
    await d.stat(c, path)
    const n = await drain(d.read(c, path))
    if (n !== expect) throw new Error(`${d.kind}: read ${n} bytes of ${path}, expected ${expect}`)
  }
  const allOps: Op[] = [
    { name: 'stat', concurrency: 32, run: (d) => d.stat(ctx(), '/file4k.txt') },
    {
      name: 'list 50 entries',
      concurrency: 32,
      run: async (d) => {
        // The pool's list op is ops.listDir in the worker; the RemoteDriver yields its one page.
        let entries: readonly unknown[] = []
        if (d === local) entries = await listDir(ctx(), d, '/dir50')
        else for await (const page of d.list(ctx(), '/dir50')) entries = [...entries, ...page]
        if (entries.length !== 50) throw new Error(`${d.kind}: listed ${entries.length} entries, expected 50`)
      },
    },
    { name: 'read 4 KiB', concurrency: 32, run: (d) => readAll(d, '/file4k.txt', 4096) },
    { name: 'read 64 MiB', bytes: bigBytes, concurrency: 4, run: (d) => readAll(d, '/big.bin', bigBytes) },
  ]
  const ops = allOps.filter((op) => selected(op.name))

  const seconds = Math.max(0.3, env.durationS / 5)
  progress(`warm-up: each op for ${seconds} s on each side`)
  for (const op of ops) for (const [, d] of drivers) await timed(seconds, op.concurrency, () => op.run(d))

  const samples: (Figures & { op: string; side: string; run: number })[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const op of ops) {
      for (const [side, d] of drivers) {
        const f = await measure(d, op, seconds)
        samples.push({ ...f, op: op.name, side, run })
        progress(`run ${run}/${env.runs}, ${op.name}, ${side}: ${fmt(f.usPerOp)} µs/op, ${fmt(f.cpuUsPerOp)} CPU µs/op, ${fmt(f.opsPerS)} ops/s at ${op.concurrency} in flight`)
      }
    }
  }

  const med = (op: string, side: string, key: keyof Figures) => median(samples.filter((s) => s.op === op && s.side === side).map((s) => s[key]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const baselineRows: string[][] = []
  const rows = ops.map((op) => {
    if (baselineDist) {
      const [a, b, c] = ['in-thread', 'pool', 'baseline pool'].map((side) => (k: keyof Figures) => med(op.name, side, k))
      figures[`${op.name}, baseline`] = { usPerOp: c!('usPerOp'), cpuUsPerOp: c!('cpuUsPerOp'), opsPerS: c!('opsPerS') }
      baselineRows.push([
        op.name,
        fmt(c!('usPerOp') - a!('usPerOp')),
        fmt(b!('usPerOp') - a!('usPerOp')),
        fmt(c!('cpuUsPerOp') - a!('cpuUsPerOp')),
        fmt(b!('cpuUsPerOp') - a!('cpuUsPerOp')),
        fmt(c!('opsPerS')),
        fmt(b!('opsPerS')),
      ])
    }
    const [a, b] = [(k: keyof Figures) => med(op.name, 'in-thread', k), (k: keyof Figures) => med(op.name, 'pool', k)]
    const mbps = (us: number) => (op.bytes ? op.bytes / (us / 1e6) / 1e6 : null)
    figures[op.name] = {
      inThread: { usPerOp: a('usPerOp'), cpuUsPerOp: a('cpuUsPerOp'), opsPerS: a('opsPerS'), mbps: mbps(a('usPerOp')) },
      pool: { usPerOp: b('usPerOp'), cpuUsPerOp: b('cpuUsPerOp'), opsPerS: b('opsPerS'), mbps: mbps(b('usPerOp')) },
      concurrency: op.concurrency,
    }
    ratios[`pool/in-thread µs per op, ${op.name}`] = ratio(b('usPerOp'), a('usPerOp'))
    ratios[`pool/in-thread ops/s in flight, ${op.name}`] = ratio(b('opsPerS'), a('opsPerS'))
    return [
      op.name,
      fmt(a('usPerOp')),
      fmt(b('usPerOp')),
      fmt(b('usPerOp') - a('usPerOp')),
      fmt(a('cpuUsPerOp')),
      fmt(b('cpuUsPerOp')),
      `${fmt(a('opsPerS'))} (${op.concurrency})`,
      fmt(b('opsPerS')),
      fmtRatio(ratio(b('opsPerS'), a('opsPerS'))),
      op.bytes ? `${fmt(mbps(a('usPerOp')))} → ${fmt(mbps(b('usPerOp')))}` : '–',
    ]
  })
  publish({
    name: 'pool-hop',
    settings: { workers: env.workers, secondsPerMeasure: seconds, runs: env.runs },
    figures,
    ratios,
    runs: samples,
    skipped: {},
    table:
      table(
        ['op', 'in-thread µs/op', 'pool µs/op', 'hop µs', 'in-thread CPU µs/op', 'pool CPU µs/op', 'in-thread ops/s (in flight)', 'pool ops/s', 'pool/in-thread ops/s', 'MB/s one at a time'],
        rows,
      ) +
      (baselineRows.length === 0
        ? ''
        : `\n\nAgainst the baseline build (${baselineDist}), same process, in turn:\n\n` +
          table(['op', 'baseline hop µs', 'hop µs', 'baseline hop CPU µs', 'hop CPU µs', 'baseline pool ops/s', 'pool ops/s'], baselineRows)),
  })
})

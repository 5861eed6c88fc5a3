/**
 * @module bench/local-driver
 * What containment at the moment of use costs the local driver (docs/local-storage-security.md):
 * the same operations, in this process, on
 * - `local`: this checkout's driver (compiled, a copy of dist/);
 * - `baseline`: another checkout's compiled driver, when BENCH_BASELINE names its folder
 *   (e.g. `git worktree add /tmp/base <commit>`, `npm ci`, `npx tsc -p .` there), for a
 *   before/after in the same run;
 * - `node fs`: plain fs/promises calls doing the same work with no containment at all.
 * Measured in rounds that interleave the sides, so that a busy machine weighs on all alike.
 *
 * Operations: stat of a file at the root and five folders deep; list of a 50-entry folder
 * (every entry stated, as ls does); read of a 4 KiB file (stat + read, as cat does).
 * Figures: ops/s with 32 in flight, CPU µs per op (all threads of this process, the
 * libuv pool included), and each side's ratio to `local`.
 */
import * as fs from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Driver, OpContext } from '../core/driver.js'
import type * as LocalModule from '../workers/drivers/local.js'
import { runBenchmark } from './lib/bench.js'
import { distDir } from './lib/build.js'
import { env, selected } from './lib/env.js'
import { plant, smallInputs, warm } from './lib/files.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { tempDir } from './lib/servers.js'

const ctx = (): OpContext => ({ signal: new AbortController().signal, requestId: 'bench' })
const IN_FLIGHT = 32
const DEEP = '/a/b/c/d/e/file4k.txt'

/** One side: how it does each operation. */
interface Side {
  readonly name: string
  readonly stat: (path: string) => Promise<unknown>
  readonly list: (dir: string) => Promise<number>
  readonly read: (path: string) => Promise<number>
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0
  for await (const c of body) n += c.byteLength
  return n
}

function driverSide(name: string, d: Driver): Side {
  return {
    name,
    stat: (p) => d.stat(ctx(), p),
    list: async (dir) => {
      let n = 0
      for await (const page of d.list(ctx(), dir)) n += page.length
      return n
    },
    read: async (p) => {
      const c = ctx()
      await d.stat(c, p)
      return drain(d.read(c, p))
    },
  }
}

function nodeSide(root: string): Side {
  const abs = (p: string) => join(root, p)
  return {
    name: 'node fs',
    stat: (p) => fs.stat(abs(p)),
    list: async (dir) => {
      const names = await fs.readdir(abs(dir))
      await Promise.all(names.map((n) => fs.lstat(join(abs(dir), n))))
      return names.length
    },
    read: async (p) => {
      await fs.stat(abs(p))
      return (await fs.readFile(abs(p))).length
    },
  }
}

interface Op {
  readonly name: string
  readonly run: (s: Side) => Promise<unknown>
}

const expect = (what: string, got: number, want: number): void => {
  if (got !== want) throw new Error(`${what}: ${got}, expected ${want}`)
}

const OPS: Op[] = [
  { name: 'stat', run: (s) => s.stat('/file4k.txt') },
  { name: 'stat, 5 folders deep', run: (s) => s.stat(DEEP) },
  { name: 'list 50 entries', run: async (s) => expect(`${s.name} list`, await s.list('/dir50'), 50) },
  { name: 'read 4 KiB', run: async (s) => expect(`${s.name} read`, await s.read('/file4k.txt'), 4096) },
]

async function timed(seconds: number, op: () => Promise<unknown>): Promise<{ opsPerS: number; cpuUsPerOp: number }> {
  let count = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await op()
        count++
      }
    }),
  )
  const cpu = process.cpuUsage(cpu0)
  return { opsPerS: count / ((performance.now() - t0) / 1000), cpuUsPerOp: (cpu.user + cpu.system) / count }
}

runBenchmark('local-driver', async () => {
  const load = (dir: string) => import(pathToFileURL(join(dir, 'workers', 'drivers', 'local.js')).href) as Promise<typeof LocalModule>
  const root = tempDir('local-driver')
  const { dir50, file4k } = smallInputs()
  plant(dir50, join(root, 'dir50'))
  plant(file4k, join(root, 'file4k.txt'))
  plant(file4k, join(root, DEEP))
  warm(root)

  const sides: Side[] = [driverSide('local', await (await load(distDir())).createLocalDriver({ root }))]
  const baseline = process.env.BENCH_BASELINE
  if (baseline) sides.push(driverSide('baseline', await (await load(join(baseline, 'dist'))).createLocalDriver({ root })))
  sides.push(nodeSide(root))
  const ops = OPS.filter((op) => selected(op.name))
  for (const op of ops) for (const s of sides) await op.run(s) // a wrong answer fails here, before any figure

  const seconds = Math.max(0.3, env.durationS / 5)
  progress(`sides: ${sides.map((s) => s.name).join(', ')}; warm-up: each op for ${seconds} s on each side`)
  for (const op of ops) for (const s of sides) await timed(seconds, () => op.run(s))

  const samples: { op: string; side: string; run: number; opsPerS: number; cpuUsPerOp: number }[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const op of ops) {
      // Alternate the order, so that no side always runs right after the same one.
      for (const s of run % 2 ? sides : [...sides].reverse()) {
        const f = await timed(seconds, () => op.run(s))
        samples.push({ ...f, op: op.name, side: s.name, run })
        progress(`run ${run}/${env.runs}, ${op.name}, ${s.name}: ${fmt(f.opsPerS)} ops/s, ${fmt(f.cpuUsPerOp)} CPU µs/op`)
      }
    }
  }

  const med = (op: string, side: string, key: 'opsPerS' | 'cpuUsPerOp') => median(samples.filter((s) => s.op === op && s.side === side).map((s) => s[key]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const op of ops) {
    for (const s of sides) {
      const ops_ = med(op.name, s.name, 'opsPerS')
      const cpu = med(op.name, s.name, 'cpuUsPerOp')
      figures[`${s.name}/${op.name}`] = { opsPerS: ops_, cpuUsPerOp: cpu }
      const r = ratio(ops_, med(op.name, 'local', 'opsPerS'))
      const rc = ratio(cpu, med(op.name, 'local', 'cpuUsPerOp'))
      if (s.name !== 'local') {
        ratios[`${s.name}/local ops/s, ${op.name}`] = r
        ratios[`${s.name}/local CPU per op, ${op.name}`] = rc
      }
      rows.push([op.name, s.name, fmt(ops_), fmt(cpu), fmtRatio(r), fmtRatio(rc)])
    }
  }
  publish({
    name: 'local-driver',
    settings: { inFlight: IN_FLIGHT, secondsPerMeasure: seconds, runs: env.runs, baseline: baseline ?? null },
    figures,
    ratios,
    runs: samples,
    skipped: baseline ? {} : { baseline: 'BENCH_BASELINE not set' },
    table: table(['op', 'side', `ops/s (${IN_FLIGHT} in flight)`, 'CPU µs/op', 'ops/s vs local', 'CPU vs local'], rows),
  })
})

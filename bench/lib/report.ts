/**
 * @module bench/lib/report
 * Progress lines, medians, the results table and the JSON results file
 * (`bench/results/<name>-<timestamp>.json`, with the machine, Node version and
 * commit, so figures can be compared across runs and machines).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { join } from 'node:path'
import { ROOT, env } from './env.js'

/** A progress line, timestamped from the benchmark's start. */
const t0 = performance.now()
export function progress(msg: string): void {
  const s = ((performance.now() - t0) / 1000).toFixed(1).padStart(6)
  console.log(`[${s}s] ${msg}`)
}

export function median(xs: readonly number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return Number.NaN
  const m = v.length >> 1
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2
}

/** A number for a table cell: 3 significant digits, thousands kept whole. */
export function fmt(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–'
  if (Math.abs(x) >= 10 ** digits) return Math.round(x).toLocaleString('en-US')
  return Number(x.toPrecision(digits)).toString()
}

/** A ratio cell: "0.62x". */
export function ratio(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a == null || b == null || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null
  return a / b
}
export const fmtRatio = (r: number | null): string => (r === null ? '–' : `${fmt(r)}x`)

/** A Markdown table, columns padded so it also reads well in a terminal. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`
  const sep = `|${widths.map((w, i) => (i === 0 ? ` ${'-'.repeat(w)} ` : ` ${'-'.repeat(w - 1)}: `)).join('|')}|`
  return [line(headers), sep, ...rows.map(line)].join('\n')
}

export interface Machine {
  readonly cpu: string
  readonly cores: number
  readonly mhz: number
  readonly memGiB: number
  readonly kernel: string
  readonly node: string
  readonly commit: string
}

let machineCache: Machine | null = null
export function machine(): Machine {
  if (machineCache) return machineCache
  const c = cpus()
  machineCache = {
    cpu: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    mhz: c[0]?.speed ?? 0,
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    node: process.version,
    commit: commit(),
  }
  return machineCache
}

/** Short commit hash, plus "+ uncommitted" when the work tree differs from it. */
function commit(): string {
  try {
    const hash = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    return dirty ? `${hash} + uncommitted` : hash
  } catch {
    return 'unknown (not a git checkout)'
  }
}

export function machineLine(): string {
  const m = machine()
  return `${m.cpu}, ${m.cores} cores, ${m.memGiB} GiB RAM, Linux ${m.kernel}, Node ${m.node}, commit ${m.commit}`
}

export interface Results {
  readonly name: string
  /** Settings the figures depend on. */
  readonly settings: Record<string, unknown>
  /** Median figures, by row. */
  readonly figures: Record<string, unknown>
  readonly ratios: Record<string, number | null>
  /** Every measurement, for whoever wants more than medians. */
  readonly runs: readonly unknown[]
  /** Columns left out, with the reason. */
  readonly skipped: Record<string, string>
  readonly table: string
}

/** Prints the table and writes the JSON file; returns its path. */
export function publish(r: Results): string {
  console.log(`\n## ${r.name}${env.quick ? ' (quick: small sizes, figures only show that it works)' : ''}\n`)
  console.log(machineLine())
  console.log()
  console.log(r.table)
  for (const [col, why] of Object.entries(r.skipped)) console.log(`\n(${col} left out: ${why})`)
  mkdirSync(env.resultsDir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const file = join(env.resultsDir, `${r.name}-${stamp}.json`)
  const doc = { ...r, quick: env.quick, at: new Date().toISOString(), machine: { ...machine(), cpus: cpus().map((c) => c.model), totalmem: totalmem(), loadavg: loadavg() } }
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`)
  console.log(`\nresults: ${file}`)
  return file
}

/**
 * Helpers of the backend benchmarks (bench/backend-*.ts): they run the test servers
 * of test/servers/ in-process and time filegate against each protocol's own client.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { median } from './report.js'

const exec = promisify(execFile)

/** The test helpers want a tap Test for their teardowns; here they run at `cleanup()`. */
const cleanups: (() => unknown)[] = []
export const fakeTest = { teardown: (fn: () => unknown) => void cleanups.push(fn) } as unknown as Test

export function onCleanup(fn: () => unknown): void {
  cleanups.push(fn)
}

/** Runs the teardowns, last registered first. */
export async function cleanup(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await Promise.resolve(fn()).catch(() => {})
}

export const mbps = (bytes: number, ms: number): number => bytes / (ms / 1000) / 1e6

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

/** curl, failing unless the answer is 200. */
export async function curl(args: string[]): Promise<string> {
  const { stdout } = await exec('curl', ['-sS', '--noproxy', '*', '-w', '\n%{http_code}', ...args], { maxBuffer: 1 << 20 })
  const code = stdout.trim().split('\n').at(-1)
  if (code !== '200') throw new Error(`curl ${args.join(' ')}: HTTP ${code}: ${stdout.slice(0, 300)}`)
  return stdout
}

/** POST /api/session → the token. */
export async function session(url: string, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify(body) })
  const json = (await res.json()) as { result?: { authorization: string } }
  if (!json.result) throw new Error(`session failed: ${JSON.stringify(json)}`)
  return json.result.authorization
}

/**
 * Times every case `runs` times, interleaved so that drift on a noisy machine hits every
 * case alike, after one warm-up round; prints a Markdown table of the medians in MB/s.
 */
export async function runCases(all: Readonly<Record<string, () => Promise<unknown>>>, bytes: number, runs: number, header: string): Promise<void> {
  // BENCH_ONLY (bench/README.md): only the cases whose name contains one of its words.
  const only = (process.env.BENCH_ONLY ?? '').split(',').map((w) => w.trim()).filter((w) => w !== '')
  const cases = only.length === 0 ? all : Object.fromEntries(Object.entries(all).filter(([name]) => only.some((w) => name.includes(w))))
  for (const fn of Object.values(cases)) await fn()
  const samples: Record<string, number[]> = {}
  const width = Math.max(...Object.keys(cases).map((n) => n.length))
  for (let r = 1; r <= runs; r++) {
    for (const [name, fn] of Object.entries(cases)) {
      const v = mbps(bytes, await timed(fn))
      ;(samples[name] ??= []).push(v)
      console.error(`run ${r}/${runs}  ${name.padEnd(width)} ${v.toFixed(0)} MB/s`)
    }
  }
  console.log(`\n${header}, median of ${runs} (MB/s = 10^6 bytes/s)\n`)
  console.log('| case | MB/s |\n|---|---:|')
  for (const [name, xs] of Object.entries(samples)) console.log(`| ${name} | ${median(xs).toFixed(0)} |`)
}

/** Runs a benchmark's main, then its cleanups; a failure sets the exit code. */
export function runMain(main: () => Promise<void>): void {
  main()
    .catch((err: unknown) => {
      console.error(err)
      process.exitCode = 1
    })
    .finally(cleanup)
}

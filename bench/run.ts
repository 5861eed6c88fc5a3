/**
 * @module bench/run
 * The suite's entry point:
 *
 *   npm run bench                 every benchmark, full size
 *   npm run bench -- small zip    the named ones
 *   npm run bench:quick           every benchmark, small and short (CI: checks they still work)
 *
 * Each benchmark runs as its own process (which starts and stops its own servers
 * and clients); this one only builds dist/ once (and takes the copy they all run,
 * see lib/build.ts), runs them in turn, and ends with a
 * summary: the tables, and a Markdown copy in bench/results/summary-<time>.md. The
 * exit code is non-zero when a benchmark broke, never because a figure is slow.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { prepareDist } from './lib/build.js'
import { ROOT, env } from './lib/env.js'
import { machineLine } from './lib/report.js'

const BENCHMARKS = ['http-download', 'http-upload', 'small', 'zip', 'pool-hop', 'local-driver', 'slow-clients', 'sftp', 'sftp-sessions', 'sftp-abuse', 's3', 's3-auth', 'mcp', 'mcp-flood', 'cluster', 'soak'] as const

function usage(): never {
  console.log(`usage: npm run bench [-- NAME...]   |   npm run bench:quick [-- NAME...]
benchmarks: ${BENCHMARKS.join(', ')}
knobs: BENCH_SIZE_MB BENCH_DURATION_S BENCH_WORKERS BENCH_RUNS BENCH_CLIENTS BENCH_CONNECTIONS
       BENCH_SMALL_FILES BENCH_CACHE_DIR BENCH_LOG_REQUESTS BENCH_CPU_PROF BENCH_NO_INSTALL BENCH_SKIP_BUILD
       BENCH_NODE_ENGINE BENCH_SFTP_SESSIONS BENCH_SFTP_ADDRESSES BENCH_SFTP_CLIENT_PROCS BENCH_SFTP_COLD BENCH_SFTP_CLIENT_ARGS
       BENCH_MCP_CALLS BENCH_MCP_FLOOD_ENTRIES BENCH_MCP_FLOOD_RAISED BENCH_SOAK_SECONDS BENCH_SOAK_PEAK_SECONDS BENCH_SOAK_ENGINE
(see bench/README.md)`)
  process.exit(2)
}

const args = process.argv.slice(2)
const quick = args.includes('--quick') || env.quick
const names = args.filter((a) => a !== '--quick')
if (names.some((n) => n === '-h' || n === '--help')) usage()
for (const n of names) {
  if (!(BENCHMARKS as readonly string[]).includes(n)) {
    console.error(`unknown benchmark "${n}"`)
    usage()
  }
}
const selected = names.length > 0 ? names : [...BENCHMARKS]

let current: ReturnType<typeof spawn> | null = null
let interrupted = false
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    // Ctrl-C reaches the benchmark itself (same process group); a SIGTERM is passed on.
    interrupted = true
    if (sig === 'SIGTERM') current?.kill('SIGTERM')
  })
}

function runOne(name: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', `${name}.ts`)], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, BENCH_QUICK: quick ? '1' : '0' },
    })
    current = child
    child.once('error', () => resolve(1))
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)))
  })
}

/** The results file a benchmark wrote since `since`. */
function latestResult(name: string, since: number): { file: string; table: string; ratios: Record<string, number | null>; skipped: Record<string, string> } | null {
  let files: string[] = []
  try {
    files = readdirSync(env.resultsDir).filter((f) => f.startsWith(`${name}-2`) && f.endsWith('.json'))
  } catch {
    return null
  }
  const fresh = files.map((f) => join(env.resultsDir, f)).filter((f) => statSync(f).mtimeMs >= since)
  const file = fresh.sort().pop()
  if (!file) return null
  return { file, ...(JSON.parse(readFileSync(file, 'utf8')) as { table: string; ratios: Record<string, number | null>; skipped: Record<string, string> }) }
}

async function main(): Promise<void> {
  const started = Date.now()
  console.log(`filegate bench${quick ? ' (quick)' : ''}: ${selected.join(', ')}`)
  await prepareDist()
  const outcome: { name: string; code: number; seconds: number }[] = []
  for (const name of selected) {
    if (interrupted) break
    console.log(`\n======== ${name} ========`)
    const t0 = Date.now()
    const code = await runOne(name)
    outcome.push({ name, code, seconds: (Date.now() - t0) / 1000 })
  }

  const md: string[] = [`# filegate bench${quick ? ' (quick)' : ''}, ${new Date().toISOString()}`, '', machineLine(), '']
  for (const o of outcome) {
    const r = latestResult(o.name, started)
    md.push(`## ${o.name}${o.code === 0 ? '' : ' — FAILED'}`, '')
    if (r && o.code === 0) {
      md.push(r.table, '')
      for (const [col, why] of Object.entries(r.skipped)) md.push(`(${col} left out: ${why})`, '')
    }
  }
  mkdirSync(env.resultsDir, { recursive: true })
  const summary = join(env.resultsDir, `summary-${new Date().toISOString().replace(/[:.]/g, '-')}.md`)
  writeFileSync(summary, `${md.join('\n')}\n`)

  console.log('\n======== summary ========')
  for (const o of outcome) {
    const status = o.code === 0 ? 'ok         ' : o.code === 130 || o.code === 143 ? 'interrupted' : 'FAILED     '
    console.log(`${status} ${o.name.padEnd(14)} ${o.seconds.toFixed(1)} s`)
  }
  console.log(`total ${((Date.now() - started) / 1000).toFixed(1)} s; tables in ${summary}`)
  const failed = outcome.filter((o) => o.code !== 0).length
  if (interrupted) process.exit(130)
  process.exit(failed > 0 ? 1 : 0)
}

main().catch((err: unknown) => {
  console.error(`bench: ${(err as Error)?.stack ?? String(err)}`)
  process.exit(1)
})

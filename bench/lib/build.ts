/**
 * @module bench/lib/build
 * The servers under test run compiled code (what `npm start` runs), built from the
 * current sources: dist/ is rebuilt with `tsc -p .` when missing or older than any
 * source file (BENCH_SKIP_BUILD=1 uses it as it is). The benchmarks then run a private
 * copy of it, so that a rebuild meanwhile (someone running `npm test` on the same
 * checkout) cannot swap files under a running server, and every benchmark of one
 * `npm run bench` measures the same code.
 */
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, env } from './env.js'
import { run } from './proc.js'
import { progress } from './report.js'

const SOURCES = ['core', 'workers', 'front', 'gateways']

function newestSource(dir: string): number {
  let newest = 0
  if (!existsSync(dir)) return 0
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name)
    if (d.isDirectory()) newest = Math.max(newest, newestSource(p))
    else if (d.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs)
  }
  return newest
}

async function ensureBuilt(): Promise<void> {
  const main = join(ROOT, 'dist', 'front', 'main.js')
  const built = existsSync(main) ? statSync(main).mtimeMs : 0
  if (env.skipBuild && built) return
  const sources = Math.max(statSync(join(ROOT, 'tsconfig.json')).mtimeMs, ...SOURCES.map((s) => newestSource(join(ROOT, s))))
  if (built >= sources) return
  progress(built ? 'dist/ is older than the sources: building (tsc -p .)' : 'dist/ is missing: building (tsc -p .)')
  const r = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')], { cwd: ROOT })
  // The rest of `npm run build`: the web app's static files into dist/.
  await run(process.execPath, [join(ROOT, 'scripts', 'copy-web.mjs')], { cwd: ROOT })
  if (r.code === 0) return
  // tsc still emits on type errors; whether that code runs is for the benchmarks to find out.
  if (!existsSync(main)) throw new Error(`the build failed:\n${r.stdout}${r.stderr}`)
  progress(`warning: tsc reported errors (benchmarking what it emitted anyway):\n${(r.stdout + r.stderr).trim().slice(0, 3000)}`)
}

/**
 * The compiled code the benchmarks run: BENCH_DIST when a parent (bench/run.ts) already
 * prepared it, else a fresh build copied to bench/results/.dist-<pid>/ (inside the
 * repository, so its imports still find node_modules/), removed at exit.
 */
export async function prepareDist(): Promise<string> {
  const given = process.env.BENCH_DIST
  if (given && existsSync(join(given, 'front', 'main.js'))) return given
  await ensureBuilt()
  const snap = join(env.resultsDir, `.dist-${process.pid}`)
  cpSync(join(ROOT, 'dist'), snap, { recursive: true })
  process.on('exit', () => rmSync(snap, { recursive: true, force: true }))
  process.env.BENCH_DIST = snap
  return snap
}

/** The compiled code's folder (after prepareDist). */
export function distDir(): string {
  const d = process.env.BENCH_DIST
  if (!d) throw new Error('prepareDist() was not called')
  return d
}

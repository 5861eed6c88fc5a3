/**
 * @module bench/lib/build
 * The servers under test run from dist/ (what `npm start` runs), so dist/ must be
 * built from the current sources: rebuilt with `tsc -p .` when missing or older
 * than any source file (BENCH_SKIP_BUILD=1 uses it as it is).
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, env } from './env.js'
import { progress } from './report.js'
import { runOk } from './proc.js'

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

export const MAIN_JS = join(ROOT, 'dist', 'front', 'main.js')

export async function ensureBuilt(): Promise<void> {
  if (env.skipBuild) return
  const built = existsSync(MAIN_JS) ? statSync(MAIN_JS).mtimeMs : 0
  const sources = Math.max(statSync(join(ROOT, 'tsconfig.json')).mtimeMs, ...SOURCES.map((s) => newestSource(join(ROOT, s))))
  if (built >= sources) return
  progress(built ? 'dist/ is older than the sources: building (tsc -p .)' : 'dist/ is missing: building (tsc -p .)')
  await runOk(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')], { cwd: ROOT })
}

/**
 * @module bench/profile-summary
 * Where the time goes, from V8 CPU profiles (`node --cpu-prof`; the bench writes them
 * with BENCH_CPU_PROF=1 into bench/results/profiles/<bench>-<server>-<pid>/, one file
 * per thread):
 *
 *   node --import tsx bench/profile-summary.ts DIR_OR_FILE... [--top N]
 *
 * For each profile: busy time (everything but idle), the top functions by self time
 * and the top source files by self time, as shares of the busy time.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

const args = process.argv.slice(2)
const topIdx = args.indexOf('--top')
const top = topIdx >= 0 ? Number(args[topIdx + 1]) : 15
const inputs = args.filter((a, i) => a !== '--top' && (topIdx < 0 || i !== topIdx + 1))
if (inputs.length === 0) {
  console.error('usage: node --import tsx bench/profile-summary.ts DIR_OR_FILE... [--top N]')
  process.exit(2)
}

const files = inputs.flatMap((p) =>
  statSync(p).isDirectory()
    ? readdirSync(p)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(p, f))
    : [p],
)

/** Short location: node internals and packages by name, our files relative to the repo. */
function where(url: string): string {
  if (url === '') return '(native/V8)'
  const nm = url.lastIndexOf('node_modules/')
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length)
  const repo = url.search(/\/(dist|core|workers|front|gateways|bench)\//)
  if (repo >= 0) return url.slice(repo + 1)
  return url.replace(/^file:\/\//, '')
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)'])

export function summarise(file: string): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0))
  let idle = 0
  let busy = 0
  const fn = new Map<string, number>()
  const mod = new Map<string, number>()
  for (const [id, us] of self) {
    const n = byId.get(id)!
    const name = n.callFrame.functionName || '(anonymous)'
    if (name === '(idle)') {
      idle += us
      continue
    }
    busy += us
    const loc = SPECIAL.has(name) ? '' : ` ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
    fn.set(`${name}${loc}`, (fn.get(`${name}${loc}`) ?? 0) + us)
    const m = SPECIAL.has(name) ? name : where(n.callFrame.url).replace(/:\d+$/, '')
    mod.set(m, (mod.get(m) ?? 0) + us)
  }
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`
  const lines = [`${basename(file)}: busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`]
  lines.push('  top functions (self time, share of busy):')
  for (const [k, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`    ${pct(us)}  ${k}`)
  lines.push('  top files:')
  for (const [k, us] of [...mod].sort((a, b) => b[1] - a[1]).slice(0, Math.min(top, 10))) lines.push(`    ${pct(us)}  ${k}`)
  return lines.join('\n')
}

for (const f of files) console.log(`${summarise(f)}\n`)

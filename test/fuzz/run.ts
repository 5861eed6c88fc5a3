/**
 * `npm run fuzz`: every door's properties (test/fuzz/{http,sftp,s3,mcp}.ts) against one
 * world (test/fuzz/world.ts), FUZZ_CASES cases in all (100,000 by default) shared by
 * door and property, in batches taken in turn; after each batch the service must be
 * alive and the root is emptied. FUZZ_SEED replays a run (printed at the start);
 * FUZZ_STATS=1 also prints what the cases reached (statuses, error codes). Prints
 * `cases, failures` per door and property and a total; exits 1 on any failure, with
 * each counterexample. Not a tap test (its name does not end in .test.ts).
 */
import { hostname } from 'node:os'
import fc from 'fast-check'
import { type Door, type Property, outcomes } from './door.js'
import { httpDoor } from './http.js'
import { alive, report } from './invariants.js'
import { mcpDoor } from './mcp.js'
import { closeConnections } from './raw-http.js'
import { s3Door } from './s3.js'
import { sftpDoor } from './sftp.js'
import { startWorld } from './world.js'

const total = Number(process.env.FUZZ_CASES ?? 100_000)
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const BATCH = 500
/** Each door's share of the cases. */
const SHARES = { http: 0.35, sftp: 0.25, s3: 0.25, mcp: 0.15 } as const

console.log(`filegate fuzz: ${total} cases, FUZZ_SEED=${seed} (node ${process.version}, ${hostname()})`)
const started = Date.now()
let done = 0
const w = await startWorld()
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`\n${signal}: stopping after ${done} cases`)
    void w.close().finally(() => process.exit(130))
  })
}
const doors: Record<keyof typeof SHARES, Door> = {
  http: await httpDoor(w),
  sftp: await sftpDoor(w),
  s3: await s3Door(w),
  mcp: await mcpDoor(w),
}

interface Plan {
  readonly door: string
  readonly p: Property
  readonly seed: number
  planned: number
  cases: number
  failures: number
  batches: number
}
const plans: Plan[] = []
for (const [door, share] of Object.entries(SHARES) as [keyof typeof SHARES, number][]) {
  const props = doors[door].properties
  const weights = props.reduce((n, p) => n + p.weight, 0)
  for (const p of props) plans.push({ door, p, seed: seed + plans.length * 7919, planned: Math.max(1, Math.round((total * share * p.weight) / weights)), cases: 0, failures: 0, batches: 0 })
}

const counterexamples: string[] = []
while (plans.some((x) => x.cases < x.planned)) {
  for (const x of plans) {
    const n = Math.min(BATCH, x.planned - x.cases)
    if (n <= 0) continue
    const d = await fc.check(x.p.property, { seed: x.seed + x.batches++, numRuns: n, endOnFailure: true })
    const ran = d.failed ? d.numRuns : n
    x.cases += d.failed ? n : ran // a failing batch stops early: its remaining cases are not run again
    done += ran
    if (d.failed) {
      x.failures++
      counterexamples.push(`${x.door} / ${x.p.name} (FUZZ_SEED=${seed}, batch seed ${x.seed + x.batches - 1}):\n  ${report(d)}`)
      console.log(`FAILED ${x.door} / ${x.p.name}: ${report(d)}`)
    }
    try {
      await alive(w)
      await doors[x.door as keyof typeof SHARES].alive?.()
    } catch (e) {
      x.failures++
      counterexamples.push(`${x.door} / ${x.p.name}: the service is not alive after a batch: ${(e as Error).message}`)
      console.log(`FAILED ${x.door} / ${x.p.name}: not alive after a batch: ${(e as Error).message}`)
    }
    w.clean()
  }
  process.stderr.write(`  ${done} cases, ${Math.round((Date.now() - started) / 1000)} s\n`)
}

const seconds = (Date.now() - started) / 1000
console.log('\ndoor / property                 cases  failures')
for (const x of plans) console.log(`${`${x.door} / ${x.p.name}`.padEnd(30)} ${String(x.cases).padStart(7)}  ${String(x.failures).padStart(8)}`)
const failures = plans.reduce((n, x) => n + x.failures, 0)
console.log(`${'total'.padEnd(30)} ${String(done).padStart(7)}  ${String(failures).padStart(8)}   (${seconds.toFixed(0)} s, ${(seconds * 1000 / Math.max(1, done)).toFixed(1)} ms a case, ${w.swaps()} symlink swaps)`)
if (process.env.FUZZ_STATS) for (const [k, v] of [...outcomes].sort()) console.log(`  ${k}: ${v}`)
if (counterexamples.length) console.log(`\ncounterexamples:\n${counterexamples.join('\n\n')}`)

for (const door of Object.values(doors)) await door.close?.()
closeConnections()
await w.close()
process.exit(failures ? 1 : 0)

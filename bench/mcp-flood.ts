/**
 * @module bench/mcp-flood
 * The MCP flood of issue "No door can be taken down" (item 2), against filegate's CLI:
 * one login (a local connection holding a folder of BENCH_MCP_FLOOD_ENTRIES entries,
 * default 200,000; quick: 20,000) sends two JSON-RPC batches of 100 `find` calls on that
 * folder, then keeps 16 sessions calling `find` on it for the run's duration, while
 * another user (a tmp login) calls `ls` over MCP and the HTTP API one after the other.
 * Cases: idle (the other user alone: the reference) and attack (default limits). With
 * BENCH_MCP_FLOOD_RAISED=1 a third case raises `mcp.calls_per_login` and `mcp.max_batch`
 * out of the way, to show what the limits hold back (slow: minutes on 200,000 entries).
 * Figures: the other user's p50/p99 and failures, the attacker's calls answered and
 * refused, the batches' HTTP statuses, the server's RSS growth (peak minus before).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { rssMiB } from '../test/helpers/slow-clients.js'
import { INITIALIZE, MCP_HEADERS, mcpTransport } from '../test/gateways/mcp/client.js'
import { runBenchmark } from './lib/bench.js'
import { env } from './lib/env.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { startFilegate, tempDir, tmpSession } from './lib/servers.js'

const ENTRIES = Number(process.env.BENCH_MCP_FLOOD_ENTRIES ?? (env.quick ? 20_000 : 200_000))
const SECONDS = env.quick ? 5 : 30
const ATTACKERS = 16

const percentile = (xs: readonly number[], p: number): number => {
  if (xs.length === 0) return NaN
  const v = [...xs].sort((a, b) => a - b)
  return v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!
}

interface Sample {
  readonly case: string
  readonly run: number
  readonly userMs: number[]
  readonly userFailures: number
  readonly answered: number
  readonly refused: number
  readonly otherErrors: number
  readonly batchStatus: number[]
  readonly rssGrowthMiB: number
}

async function oneCase(root: string, name: string, extraEnv: Record<string, string>, attack: boolean, run: number): Promise<Sample> {
  const server = await startFilegate(tempDir('mcp-flood'), env.workers, 'auto', {
    env: { FILEGATE_CONNECTIONS: JSON.stringify([{ label: 'disk', type: 'local', path: root, public: true }]), ...extraEnv },
  })
  const pid = server.pid
  const login = await fetch(`${server.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
  const attacker = ((await login.json()) as { result: { authorization: string } }).result.authorization
  const user = await tmpSession(server.url, 'user')
  const auth = { authorization: `Bearer ${user}` }
  for (let i = 0; i < 50; i++) await fetch(`${server.url}/api/files/cat?path=/mine/f${i}.txt`, { method: 'POST', headers: auth, body: 'x' })
  const userClient = new Client({ name: 'bench-user', version: '1' })
  await userClient.connect(mcpTransport(server.url, user, 'streamable'))

  const rssBefore = rssMiB(pid)
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB(pid))), 100)
  const deadline = Date.now() + SECONDS * 1000
  // The other user starts at once and goes on for the whole case, whatever the attack does to the server.
  const userMs: number[] = []
  let userFailures = 0
  const userLoop = (async () => {
    for (let i = 0; Date.now() < deadline; i++) {
      const t0 = performance.now()
      try {
        if (i % 2 === 0) {
          const r = await userClient.callTool({ name: 'ls', arguments: { path: '/mine' } }, undefined, { timeout: 120_000 })
          if ((r as { isError?: boolean }).isError) throw new Error('ls failed')
        } else {
          const r = await fetch(`${server.url}/api/files/ls?path=/mine/`, { headers: auth, signal: AbortSignal.timeout(120_000) })
          if (((await r.json()) as { results?: unknown[] }).results?.length !== 50) throw new Error('http ls failed')
        }
        userMs.push(performance.now() - t0)
      } catch {
        userFailures++
      }
    }
  })()
  let answered = 0
  let refused = 0
  let otherErrors = 0
  const batchStatus: number[] = []
  const attackers: Promise<void>[] = []
  const clients: Client[] = []
  if (attack) {
    // Two batches of 100 find calls, as the attack sent them.
    const init = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${attacker}` }, body: JSON.stringify(INITIALIZE) })
    await init.text()
    const sid = init.headers.get('mcp-session-id')!
    const batch = Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'find', arguments: { path: '/big', pattern: '*never*' } } }))
    for (let b = 0; b < 2; b++) {
      attackers.push(
        fetch(`${server.url}/mcp`, {
          method: 'POST',
          headers: { ...MCP_HEADERS, authorization: `Bearer ${attacker}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
          body: JSON.stringify(batch),
        }).then(async (r) => {
          batchStatus.push(r.status)
          await r.text()
        }),
      )
    }
    for (let a = 0; a < ATTACKERS; a++) {
      const c = new Client({ name: 'bench-attacker', version: '1' })
      await c.connect(mcpTransport(server.url, attacker, 'streamable'))
      clients.push(c)
      attackers.push(
        (async () => {
          while (Date.now() < deadline) {
            try {
              await c.callTool({ name: 'find', arguments: { path: '/big', pattern: '*never*' } }, undefined, { timeout: 600_000 })
              answered++
            } catch (err) {
              if (/tool calls running|at most \d+ running/.test(String(err))) refused++
              else otherErrors++
              await new Promise((r) => setTimeout(r, 50))
            }
          }
        })(),
      )
    }
  }
  await userLoop
  await Promise.all(attackers)
  clearInterval(sampler)
  rssPeak = Math.max(rssPeak, rssMiB(pid))
  for (const c of [userClient, ...clients]) await c.close().catch(() => {})
  await server.stop()
  const s = { case: name, run, userMs, userFailures, answered, refused, otherErrors, batchStatus, rssGrowthMiB: rssPeak - rssBefore }
  progress(
    `run ${run}, ${name}: user p50 ${fmt(median(userMs))} ms, p99 ${fmt(percentile(userMs, 99))} ms, ${userFailures} failed; ` +
      `attacker ${answered} answered, ${refused} refused, ${otherErrors} other errors; batches ${JSON.stringify(batchStatus)}; RSS +${fmt(s.rssGrowthMiB)} MiB`,
  )
  return s
}

runBenchmark('mcp-flood', async () => {
  const root = tempDir('mcp-flood-root')
  mkdirSync(join(root, 'big'), { recursive: true })
  progress(`making a folder of ${ENTRIES} entries`)
  for (let i = 0; i < ENTRIES; i++) writeFileSync(join(root, 'big', `entry-${i}`), '')
  const cases: [string, Record<string, string>, boolean][] = [
    ['idle (reference)', {}, false],
    ['attack, default limits', {}, true],
  ]
  if (process.env.BENCH_MCP_FLOOD_RAISED === '1') cases.push(['attack, limits raised', { FILEGATE_MCP_CALLS_PER_LOGIN: '10000', FILEGATE_MCP_MAX_BATCH: '10000' }, true])
  const samples: Sample[] = []
  for (let run = 1; run <= env.runs; run++) for (const [name, e, attack] of cases) samples.push(await oneCase(root, name, e, attack, run))

  const of = (name: string) => samples.filter((s) => s.case === name)
  const p99 = (name: string) => median(of(name).map((s) => percentile(s.userMs, 99)))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows = cases.map(([name]) => {
    const xs = of(name)
    const f = {
      userP50Ms: median(xs.map((s) => median(s.userMs))),
      userP99Ms: p99(name),
      userFailures: median(xs.map((s) => s.userFailures)),
      attackerAnswered: median(xs.map((s) => s.answered)),
      attackerRefused: median(xs.map((s) => s.refused)),
      batchStatus: xs.at(-1)!.batchStatus,
      rssGrowthMiB: median(xs.map((s) => s.rssGrowthMiB)),
    }
    figures[name] = f
    if (name !== cases[0]![0]) ratios[`user p99 ${name} / idle`] = ratio(f.userP99Ms, p99(cases[0]![0]))
    return [
      name,
      fmt(f.userP50Ms),
      fmt(f.userP99Ms),
      name === cases[0]![0] ? '1x' : fmtRatio(ratios[`user p99 ${name} / idle`] ?? null),
      fmt(f.userFailures),
      `${fmt(f.attackerAnswered)} / ${fmt(f.attackerRefused)}`,
      f.batchStatus.join(', ') || '–',
      fmt(f.rssGrowthMiB),
    ]
  })
  publish({
    name: 'mcp-flood',
    settings: { entries: ENTRIES, seconds: SECONDS, attackers: ATTACKERS, runs: env.runs, workers: env.workers },
    figures,
    ratios,
    runs: samples.map((s) => ({ ...s, userMs: undefined, userP50Ms: median(s.userMs), userP99Ms: percentile(s.userMs, 99) })),
    skipped: {},
    table: table(['case', 'user p50 ms', 'user p99 ms', 'p99 vs idle', 'user failures', 'attacker finds answered / refused', 'batches of 100 (HTTP)', 'server RSS growth MiB'], rows),
  })
})

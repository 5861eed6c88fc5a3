/**
 * @module bench/small
 * Small requests under load: autocannon (its own process) with BENCH_CONNECTIONS
 * (100) connections for BENCH_DURATION_S seconds per case against
 * - filegate: `ls` of a 50-entry folder, `cat` of a 4 KiB file, POST /api/session
 *   (tmp), each through the worker pool where the contract puts it;
 * - the same filegate on its node:http engine ("filegate-node", the engine's cost;
 *   BENCH_NODE_ENGINE=0 leaves it out), on the same data directory and token;
 * - a plain node:http server doing the same fs work (readdir + stat → JSON,
 *   readFile, a random token in JSON).
 * Figures: requests/s, latency p50/p99 (ms), server CPU µs per request, and the
 * client's CPU share (autocannon on the same 2 cores can become the limit).
 */
import { join } from 'node:path'
import { cannon } from './lib/autocannon.js'
import { runBenchmark } from './lib/bench.js'
import { env, selected } from './lib/env.js'
import { plant, smallInputs, warm } from './lib/files.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { type Server, startFilegate, startNodeRef, tempDir, tmpSession } from './lib/servers.js'

interface Case {
  readonly name: string
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly headers: string[]
  readonly body?: string
  /** Checks one response before the load starts, so a broken endpoint fails loudly. */
  readonly check: (status: number, body: string) => string | null
}

interface Sample {
  readonly server: string
  readonly case: string
  readonly run: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly cpuUsPerReq: number
  readonly clientCpuShare: number
}

const ok = (status: number, body: string): string | null => (status === 200 && body.includes('"status":"ok"') ? null : `HTTP ${status}: ${body.slice(0, 300)}`)

function cases(kind: 'filegate' | 'node', token: string): Case[] {
  const auth = kind === 'filegate' ? [`Authorization: Bearer ${token}`] : []
  const json = ['Content-Type: application/json']
  const session = JSON.stringify({ type: 'tmp', userID: 'bench' })
  const entries = (status: number, body: string) => ok(status, body) ?? ((JSON.parse(body) as { results: unknown[] }).results.length === 50 ? null : 'not 50 entries')
  const bytes4k = (status: number, body: string) => (status === 200 && body.length === 4096 ? null : `HTTP ${status}, ${body.length} bytes`)
  const filegate: Case[] = [
    { name: 'ls 50 entries', method: 'GET', path: '/api/files/ls?path=/dir50/', headers: auth, check: entries },
    { name: 'cat 4 KiB', method: 'GET', path: '/api/files/cat?path=/file4k.txt', headers: auth, check: bytes4k },
    { name: 'session', method: 'POST', path: '/api/session', headers: json, body: session, check: ok },
  ]
  const node: Case[] = [
    { name: 'ls 50 entries', method: 'GET', path: '/ls?path=dir50', headers: [], check: entries },
    { name: 'cat 4 KiB', method: 'GET', path: '/cat?path=file4k.txt', headers: [], check: bytes4k },
    { name: 'session', method: 'POST', path: '/session', headers: json, body: session, check: ok },
  ]
  const all = kind === 'filegate' ? filegate : node
  return all.filter((c) => selected(c.name))
}

async function sanity(url: string, c: Case): Promise<void> {
  const headers = Object.fromEntries(c.headers.map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 1).trim()]))
  const res = await fetch(url + c.path, { method: c.method, headers, ...(c.body === undefined ? {} : { body: c.body }) })
  const problem = c.check(res.status, await res.text())
  if (problem) throw new Error(`${c.method} ${url}${c.path}: ${problem}`)
}

runBenchmark('small', async () => {
  const { dir50, file4k } = smallInputs()
  warm(join(dir50, '..'))
  const data = tempDir('small')
  plant(dir50, join(data, 'tmp', 'bench', 'dir50'))
  plant(file4k, join(data, 'tmp', 'bench', 'file4k.txt'))
  const filegate = await startFilegate(data)
  const token = await tmpSession(filegate.url, 'bench')
  const targets: { server: Server; cases: Case[] }[] = [{ server: filegate, cases: cases('filegate', token) }]
  if (env.nodeEngine) targets.push({ server: await startFilegate(data, env.workers, 'node'), cases: cases('filegate', token) })
  const node = await startNodeRef(join(dir50, '..'))
  targets.push({ server: node, cases: cases('node', token) })
  for (const t of targets) for (const c of t.cases) await sanity(t.server.url, c)

  progress(`warm-up: 1 s of load per case and server`)
  for (const t of targets) for (const c of t.cases) await cannon(t.server.url + c.path, c, 1)

  const samples: Sample[] = []
  const names = targets[0]!.cases.map((c) => c.name)
  for (let run = 1; run <= env.runs; run++) {
    for (const name of names) {
      for (const t of targets) {
        const c = t.cases.find((x) => x.name === name)!
        const cpu0 = t.server.cpu()
        const { result: r, clientCpuS } = await cannon(t.server.url + c.path, c, env.durationS)
        const cpu = t.server.cpu() - cpu0
        if (r.non2xx > 0) throw new Error(`${t.server.name} ${name}: ${r.non2xx} of ${r.requests.total} answers were not 2xx`)
        if (r.requests.total === 0) throw new Error(`${t.server.name} ${name}: no request completed`)
        if (r.errors > 0 || r.timeouts > 0) progress(`  note: ${r.errors} errors, ${r.timeouts} timeouts (connections cut at the end count here)`)
        const s: Sample = {
          server: t.server.name,
          case: name,
          run,
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          cpuUsPerReq: (cpu / r.requests.total) * 1e6,
          clientCpuShare: clientCpuS / r.duration,
        }
        samples.push(s)
        progress(`run ${run}/${env.runs}, ${name}, ${s.server}: ${fmt(s.rps)} req/s, p50 ${s.p50} ms, p99 ${s.p99} ms, ${fmt(s.cpuUsPerReq)} CPU µs/req`)
      }
    }
  }

  type Key = 'rps' | 'p50' | 'p99' | 'cpuUsPerReq' | 'clientCpuShare'
  const med = (server: string, name: string, key: Key) => median(samples.filter((s) => s.server === server && s.case === name).map((s) => s[key]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const name of names) {
    for (const t of targets) {
      const n = t.server.name
      figures[`${n}/${name}`] = Object.fromEntries((['rps', 'p50', 'p99', 'cpuUsPerReq', 'clientCpuShare'] as Key[]).map((k) => [k, med(n, name, k)]))
      const rpsRatio = n !== 'node' ? ratio(med(n, name, 'rps'), med('node', name, 'rps')) : 1
      const cpuRatio = n !== 'node' ? ratio(med(n, name, 'cpuUsPerReq'), med('node', name, 'cpuUsPerReq')) : 1
      if (n !== 'node') {
        ratios[`${n}/node req/s, ${name}`] = rpsRatio
        ratios[`${n}/node CPU per request, ${name}`] = cpuRatio
      }
      if (n === 'filegate-node') ratios[`filegate-node/filegate req/s, ${name}`] = ratio(med(n, name, 'rps'), med('filegate', name, 'rps'))
      rows.push([
        name,
        n,
        fmt(med(n, name, 'rps')),
        fmt(med(n, name, 'p50')),
        fmt(med(n, name, 'p99')),
        fmt(med(n, name, 'cpuUsPerReq')),
        `${Math.round(med(n, name, 'clientCpuShare') * 100)}%`,
        fmtRatio(rpsRatio),
        fmtRatio(cpuRatio),
      ])
    }
  }
  publish({
    name: 'small',
    settings: { connections: env.connections, durationS: env.durationS, runs: env.runs, workers: env.workers, logRequests: env.logRequests },
    figures,
    ratios,
    runs: samples,
    skipped: {},
    table: table(['request', 'server', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'autocannon CPU', 'req/s vs node', 'CPU vs node'], rows),
  })
})

/**
 * @module bench/cluster
 * filegate with 1, 2 and 3 nodes behind the load balancers of deploy/ (nginx for HTTP,
 * HAProxy for SFTP), on PostgreSQL and one shared folder (test/helpers/cluster.ts, the
 * cluster test's set-up), under the same client load each time:
 * - HTTP download: BENCH_CLIENTS (8) concurrent curl GETs of one file through nginx;
 * - small requests: autocannon, BENCH_CONNECTIONS (100) connections, `cat` of 4 KiB through nginx;
 * - SFTP download and upload: 3 concurrent OpenSSH `sftp -b` clients through HAProxy.
 * The reference in the same run is one node reached directly, without a balancer (what
 * the balancer costs). Figures: MB/s or req/s, and the CPU the nodes used, as a share of
 * one core (on one machine the nodes, the balancers and the clients share its cores).
 * Quick mode (bench:quick): 16 MiB and 8 MiB files, one run, no warm-up.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { cannon } from './lib/autocannon.js'
import { cleanup as stopCluster, fakeTest } from './lib/backend.js'
import { runBenchmark } from './lib/bench.js'
import { distDir } from './lib/build.js'
import { download, requireCurl } from './lib/curl.js'
import { MiB, env } from './lib/env.js'
import { bigFile, plant, smallInputs } from './lib/files.js'
import { cpuSeconds, onCleanup } from './lib/proc.js'
import { fmt, median, progress, publish, table } from './lib/report.js'
import { tempDir } from './lib/servers.js'
import { type SftpTarget, clientKey, sftpBatch } from './lib/sftp-servers.js'
import { ADMIN_PASSWORD, type Cluster, filesSession, startCluster } from '../test/helpers/cluster.js'

const HTTP_MB = env.quick ? 16 : 256
const SFTP_MB = env.quick ? 8 : 64
const SFTP_CLIENTS = 3

interface Sample {
  readonly setup: string
  readonly case: string
  readonly run: number
  /** MB/s, or req/s for small requests. */
  readonly value: number
  /** CPU seconds of all nodes per wall second (1 = one core busy). */
  readonly nodesCpu: number
}

/** The nodes' CPU seconds so far. */
const nodesCpu = (c: Cluster): number => c.nodes.reduce((sum, n) => sum + cpuSeconds(n.proc.child.pid!), 0)

async function measure(c: Cluster, fn: () => Promise<number>): Promise<{ value: number; nodesCpu: number }> {
  const cpu0 = nodesCpu(c)
  const t0 = performance.now()
  const value = await fn()
  return { value, nodesCpu: (nodesCpu(c) - cpu0) / ((performance.now() - t0) / 1000) }
}

async function adminCall(url: string, path: string, body: unknown, token?: string): Promise<Record<string, unknown>> {
  const res = await fetch(url + path, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {}, body: JSON.stringify(body) })
  const json = (await res.json()) as Record<string, unknown>
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

runBenchmark('cluster', async () => {
  await requireCurl()
  const big = bigFile(HTTP_MB)
  const upload = bigFile(SFTP_MB)
  const { file4k } = smallInputs()
  const work = tempDir('cluster')
  const key = await clientKey(work)
  onCleanup(stopCluster)
  const samples: Sample[] = []
  const cases = ['HTTP download', 'small requests (cat 4 KiB)', 'SFTP download', 'SFTP upload']

  for (const n of [1, 2, 3]) {
    progress(`starting PostgreSQL, ${n} node(s) of ${env.workers} worker threads, nginx and HAProxy`)
    const c = await startCluster(fakeTest, { nodes: n, workers: env.workers, dist: distDir() })
    plant(big, join(c.root, 'big.bin'))
    plant(upload, join(c.root, 'upload.bin'))
    plant(file4k, join(c.root, 'file4k.txt'))
    const token = await filesSession(c.http)
    const admin = (await adminCall(c.nodes[0]!.url, '/admin/api/session', { password: ADMIN_PASSWORD })) as { result: { authorization: string } }
    await adminCall(c.nodes[0]!.url, '/admin/api/users', { name: 'bench', authorized_keys: [key.publicLine], connection: 'files', root: '/' }, admin.result.authorization)
    const auth = [`Authorization: Bearer ${token}`]
    const sftp: SftpTarget = {
      name: 'filegate',
      port: c.sftpPort,
      pid: c.nodes[0]!.proc.child.pid!,
      user: 'bench',
      password: null,
      cpu: () => nodesCpu(c),
      settle: async () => {},
      memory: () => ({ rss: 0, peak: 0 }),
      stop: async () => {},
    }
    const sftpClients = (lines: (i: number) => string[]) =>
      Promise.all(
        Array.from({ length: SFTP_CLIENTS }, (_, i) => {
          const dir = join(work, `client-${i}`)
          mkdirSync(dir, { recursive: true })
          return sftpBatch(sftp, key, lines(i), dir)
        }),
      )
    const setups: { name: string; url: string }[] = [{ name: `${n} node${n > 1 ? 's' : ''}, balanced`, url: c.http }]
    if (n === 1) setups.unshift({ name: '1 node, no balancer', url: c.nodes[0]!.url })
    const run: Record<string, (url: string) => Promise<number>> = {
      'HTTP download': async (url) => {
        const r = await download(`${url}/api/files/cat?path=/big.bin`, auth, env.clients, HTTP_MB * MiB)
        return r.bytes / r.wallS / 1e6
      },
      'small requests (cat 4 KiB)': async (url) => {
        const { result } = await cannon(`${url}/api/files/cat?path=/file4k.txt`, { method: 'GET', headers: auth }, env.durationS)
        if (result.non2xx > 0 || result.requests.total === 0) throw new Error(`small requests: ${result.non2xx} of ${result.requests.total} answers were not 2xx`)
        return result.requests.average
      },
      'SFTP download': async () => {
        const t0 = performance.now()
        await sftpClients(() => ['get /upload.bin /dev/null'])
        return (SFTP_CLIENTS * SFTP_MB * MiB) / ((performance.now() - t0) / 1000) / 1e6
      },
      'SFTP upload': async () => {
        const t0 = performance.now()
        await sftpClients((i) => [`put ${upload} /up-${i}.bin`])
        const mbps = (SFTP_CLIENTS * SFTP_MB * MiB) / ((performance.now() - t0) / 1000) / 1e6
        for (let i = 0; i < SFTP_CLIENTS; i++) rmSync(join(c.root, `up-${i}.bin`))
        return mbps
      },
    }
    if (!env.quick) {
      progress('warm-up: each case once')
      for (const s of setups) for (const name of cases) if (!name.startsWith('SFTP') || s.url === c.http) await run[name]!(s.url)
    }
    for (let r = 1; r <= env.runs; r++) {
      for (const s of setups) {
        for (const name of cases) {
          if (name.startsWith('SFTP') && s.url !== c.http) continue
          const m = await measure(c, () => run[name]!(s.url))
          samples.push({ setup: s.name, case: name, run: r, ...m })
          progress(`run ${r}/${env.runs}, ${s.name}, ${name}: ${fmt(m.value)} ${name.startsWith('small') ? 'req/s' : 'MB/s'}, nodes' CPU ${fmt(m.nodesCpu)} cores`)
        }
      }
    }
    await stopCluster()
  }

  const setups = [...new Set(samples.map((s) => s.setup))]
  const med = (setup: string, name: string, k: 'value' | 'nodesCpu') => median(samples.filter((s) => s.setup === setup && s.case === name).map((s) => s[k]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const name of cases) {
    const one = med('1 node, balanced', name, 'value')
    for (const setup of setups) {
      if (!samples.some((s) => s.setup === setup && s.case === name)) continue
      const v = med(setup, name, 'value')
      figures[`${setup}/${name}`] = { value: v, nodesCpu: med(setup, name, 'nodesCpu') }
      const vsOne = one > 0 ? v / one : null
      if (setup !== '1 node, balanced') ratios[`${setup} vs 1 node, ${name}`] = vsOne
      rows.push([name, setup, `${fmt(v)} ${name.startsWith('small') ? 'req/s' : 'MB/s'}`, fmt(med(setup, name, 'nodesCpu')), vsOne === null ? '–' : `${fmt(vsOne)}x`])
    }
  }
  publish({
    name: 'cluster',
    settings: { httpMb: HTTP_MB, httpClients: env.clients, connections: env.connections, durationS: env.durationS, sftpMb: SFTP_MB, sftpClients: SFTP_CLIENTS, workersPerNode: env.workers, runs: env.runs },
    figures,
    ratios,
    runs: samples,
    skipped: {},
    table: table(['load', 'setup', 'throughput', "nodes' CPU (cores)", 'vs 1 node balanced'], rows),
  })
})

/**
 * @module bench/http-download
 * One big file (BENCH_SIZE_MB, default 1 GiB of random bytes, served from the page
 * cache) downloaded by 1 and by BENCH_CLIENTS (8) concurrent curl clients from:
 * - filegate: GET /api/files/cat through the worker pool, tmp session, the file
 *   planted in <data_dir>/tmp/bench/;
 * - the same filegate on its node:http engine ("filegate-node", the engine's cost;
 *   BENCH_NODE_ENGINE=0 leaves it out);
 * - nginx (Debian nginx-light) with sendfile;
 * - a plain node server: fs.createReadStream (1 MiB highWaterMark) piped into http.
 * Figures: MB/s (10^6 bytes/s, all clients together), the server's CPU seconds
 * per GiB sent (utime+stime from /proc; nginx: master + workers), and for filegate
 * its main thread's share of the process's CPU during the download.
 */
import { basename, join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { download, requireCurl } from './lib/curl.js'
import { GiB, env, selected } from './lib/env.js'
import { bigFile, plant, warm } from './lib/files.js'
import { mainThreadMeter } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { type Server, startFilegate, startNginx, startNodeRef, tempDir, tmpSession } from './lib/servers.js'

interface Target {
  readonly server: Server
  readonly url: string
  readonly headers: string[]
}

interface Sample {
  readonly server: string
  readonly clients: number
  readonly run: number
  readonly mbps: number
  readonly cpuPerGiB: number
  readonly clientCpuPerGiB: number
  /** The main thread's CPU ÷ the process's CPU (filegate; NaN for the references). */
  readonly mainShare: number
}

async function measure(t: Target, clients: number, size: number): Promise<Omit<Sample, 'run'>> {
  const cpu0 = t.server.cpu()
  const main = t.server.name.startsWith('filegate') ? mainThreadMeter(t.server.pid) : null
  const r = await download(t.url, t.headers, clients, size)
  const mainShare = main?.().share ?? Number.NaN
  const cpu = t.server.cpu() - cpu0
  const gib = r.bytes / GiB
  return { server: t.server.name, clients, mbps: r.bytes / r.wallS / 1e6, cpuPerGiB: cpu / gib, clientCpuPerGiB: r.clientCpuS / gib, mainShare }
}

runBenchmark('http-download', async () => {
  await requireCurl()
  const file = bigFile()
  const size = env.sizeMb * 1024 * 1024
  warm(file)

  const data = tempDir('download')
  plant(file, join(data, 'tmp', 'bench', 'big.bin'))
  const filegate = await startFilegate(data)
  const token = await tmpSession(filegate.url, 'bench')
  const targets: Target[] = [{ server: filegate, url: `${filegate.url}/api/files/cat?path=/big.bin`, headers: [`Authorization: Bearer ${token}`] }]
  if (env.nodeEngine) {
    const onNode = await startFilegate(data, env.workers, 'node')
    targets.push({ server: onNode, url: `${onNode.url}/api/files/cat?path=/big.bin`, headers: [`Authorization: Bearer ${token}`] })
  }
  const skipped: Record<string, string> = {}
  const nginx = await startNginx(join(file, '..'))
  if ('skipped' in nginx) skipped.nginx = nginx.skipped
  else targets.push({ server: nginx, url: `${nginx.url}/${basename(file)}`, headers: [] })
  const node = await startNodeRef(join(file, '..'))
  targets.push({ server: node, url: `${node.url}/file?path=${basename(file)}`, headers: [] })

  progress('warm-up: one download from each server')
  for (const t of targets) await download(t.url, t.headers, 1, size)

  const samples: Sample[] = []
  const clientCounts = [...new Set([1, env.clients])]
  const measured = targets.filter((t) => selected(t.server.name))
  for (let run = 1; run <= env.runs; run++) {
    for (const clients of clientCounts) {
      // Servers interleaved within a run, so drift on a noisy machine hits all of them alike.
      for (const t of measured) {
        const s = { ...(await measure(t, clients, size)), run }
        samples.push(s)
        const share = Number.isNaN(s.mainShare) ? '' : `, main thread ${fmt(s.mainShare, 2)} of its CPU`
        progress(`run ${run}/${env.runs}, ${clients} client(s), ${s.server}: ${fmt(s.mbps)} MB/s, ${fmt(s.cpuPerGiB)} CPU s/GiB${share}`)
      }
    }
  }

  const med = (server: string, clients: number, key: 'mbps' | 'cpuPerGiB' | 'clientCpuPerGiB' | 'mainShare') =>
    median(samples.filter((s) => s.server === server && s.clients === clients).map((s) => s[key]))
  const figures: Record<string, unknown> = {}
  const ratios: Record<string, number | null> = {}
  const rows: string[][] = []
  for (const clients of clientCounts) {
    for (const t of measured) {
      const name = t.server.name
      const mbps = med(name, clients, 'mbps')
      const cpu = med(name, clients, 'cpuPerGiB')
      const share = med(name, clients, 'mainShare')
      figures[`${name}/${clients}`] = { mbps, cpuPerGiB: cpu, clientCpuPerGiB: med(name, clients, 'clientCpuPerGiB'), ...(name.startsWith('filegate') ? { mainThreadShare: share } : {}) }
      const vs = (other: string) => ({ mbps: ratio(mbps, med(other, clients, 'mbps')), cpu: ratio(cpu, med(other, clients, 'cpuPerGiB')) })
      const vNginx = 'nginx' in skipped ? { mbps: null, cpu: null } : vs('nginx')
      const vNode = vs('node')
      if (name.startsWith('filegate')) {
        ratios[`${name}/nginx MB/s, ${clients} client(s)`] = vNginx.mbps
        ratios[`${name}/node MB/s, ${clients} client(s)`] = vNode.mbps
        ratios[`${name}/nginx CPU per GiB, ${clients} client(s)`] = vNginx.cpu
        ratios[`${name}/node CPU per GiB, ${clients} client(s)`] = vNode.cpu
      }
      if (name === 'filegate-node') {
        ratios[`filegate-node/filegate MB/s, ${clients} client(s)`] = ratio(mbps, med('filegate', clients, 'mbps'))
        ratios[`filegate-node/filegate CPU per GiB, ${clients} client(s)`] = ratio(cpu, med('filegate', clients, 'cpuPerGiB'))
      }
      rows.push([
        name,
        String(clients),
        fmt(mbps),
        fmt(cpu),
        fmt(med(name, clients, 'clientCpuPerGiB')),
        name === 'nginx' ? '1x' : fmtRatio(vNginx.mbps),
        name === 'node' ? '1x' : fmtRatio(vNode.mbps),
        name === 'nginx' ? '1x' : fmtRatio(vNginx.cpu),
        name === 'node' ? '1x' : fmtRatio(vNode.cpu),
        fmt(share, 2),
      ])
    }
  }
  publish({
    name: 'http-download',
    settings: { sizeMiB: env.sizeMb, clients: clientCounts, runs: env.runs, workers: env.workers },
    figures,
    ratios,
    runs: samples,
    skipped,
    table: table(
      ['server', 'clients', 'MB/s', 'server CPU s/GiB', 'curl CPU s/GiB', 'MB/s vs nginx', 'MB/s vs node', 'CPU vs nginx', 'CPU vs node', 'main-thread CPU share'],
      rows,
    ),
  })
})

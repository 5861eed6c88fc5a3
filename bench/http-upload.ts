/**
 * @module bench/http-upload
 * One big file (BENCH_SIZE_MB, default 1 GiB) uploaded with a chunked POST (curl -T
 * with Transfer-Encoding: chunked, as its figures have always been taken; a
 * Content-Length of any size is read as well) into:
 * - filegate: POST /api/files/cat (atomic: temp file, then rename) through the pool;
 * - a plain node server piping the request into fs.createWriteStream.
 * Figures: MB/s and server CPU seconds per GiB received. Each upload's size is
 * checked on disk afterwards (and its SHA-256 in quick mode), then the file is removed.
 */
import { createHash } from 'node:crypto'
import { createReadStream, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { requireCurl, uploadChunked } from './lib/curl.js'
import { GiB, env } from './lib/env.js'
import { bigFile, warm } from './lib/files.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { type Server, startFilegate, startNodeRef, tempDir, tmpSession } from './lib/servers.js'

interface Target {
  readonly server: Server
  readonly url: string
  readonly headers: string[]
  /** Where the upload lands on disk. */
  readonly landed: string
}

async function sha256(path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const c of createReadStream(path, { highWaterMark: 4 << 20 })) h.update(c as Buffer)
  return h.digest('hex')
}

runBenchmark('http-upload', async () => {
  await requireCurl()
  const file = bigFile()
  const size = statSync(file).size
  warm(file)
  const expectHash = env.quick ? await sha256(file) : null

  const data = tempDir('upload')
  const filegate = await startFilegate(data)
  const token = await tmpSession(filegate.url, 'bench')
  const refRoot = tempDir('upload-ref')
  const node = await startNodeRef(refRoot)
  const targets: Target[] = [
    { server: filegate, url: `${filegate.url}/api/files/cat?path=/up.bin`, headers: [`Authorization: Bearer ${token}`], landed: join(data, 'tmp', 'bench', 'up.bin') },
    { server: node, url: `${node.url}/upload?path=up.bin`, headers: [], landed: join(refRoot, 'up.bin') },
  ]

  const once = async (t: Target) => {
    const cpu0 = t.server.cpu()
    const r = await uploadChunked(t.url, file, t.headers)
    const cpu = t.server.cpu() - cpu0
    const got = statSync(t.landed, { throwIfNoEntry: false })?.size
    if (got !== size) throw new Error(`${t.server.name}: the upload left ${got ?? 'no file'} bytes instead of ${size} (reply: ${r.reply})`)
    if (expectHash && (await sha256(t.landed)) !== expectHash) throw new Error(`${t.server.name}: the uploaded bytes differ from the file sent`)
    rmSync(t.landed)
    return { server: t.server.name, mbps: size / r.wallS / 1e6, cpuPerGiB: cpu / (size / GiB), clientCpuPerGiB: r.clientCpuS / (size / GiB) }
  }

  progress('warm-up: one upload to each server')
  for (const t of targets) await once(t)
  const samples: (Awaited<ReturnType<typeof once>> & { run: number })[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const t of targets) {
      const s = { ...(await once(t)), run }
      samples.push(s)
      progress(`run ${run}/${env.runs}, ${s.server}: ${fmt(s.mbps)} MB/s, ${fmt(s.cpuPerGiB)} CPU s/GiB (size verified)`)
    }
  }

  const med = (server: string, key: 'mbps' | 'cpuPerGiB' | 'clientCpuPerGiB') => median(samples.filter((s) => s.server === server).map((s) => s[key]))
  const figures: Record<string, unknown> = {}
  for (const t of targets) figures[t.server.name] = { mbps: med(t.server.name, 'mbps'), cpuPerGiB: med(t.server.name, 'cpuPerGiB'), clientCpuPerGiB: med(t.server.name, 'clientCpuPerGiB') }
  const ratios = {
    'filegate/node MB/s': ratio(med('filegate', 'mbps'), med('node', 'mbps')),
    'filegate/node CPU per GiB': ratio(med('filegate', 'cpuPerGiB'), med('node', 'cpuPerGiB')),
  }
  const rows = targets.map((t) => {
    const n = t.server.name
    return [
      n,
      fmt(med(n, 'mbps')),
      fmt(med(n, 'cpuPerGiB')),
      fmt(med(n, 'clientCpuPerGiB')),
      n === 'node' ? '1x' : fmtRatio(ratios['filegate/node MB/s']),
      n === 'node' ? '1x' : fmtRatio(ratios['filegate/node CPU per GiB']),
    ]
  })
  publish({
    name: 'http-upload',
    settings: { sizeMiB: env.sizeMb, encoding: 'chunked', runs: env.runs, workers: env.workers },
    figures,
    ratios,
    runs: samples,
    skipped: {},
    table: table(['server', 'MB/s', 'server CPU s/GiB', 'curl CPU s/GiB', 'MB/s vs node', 'CPU vs node'], rows),
  })
})

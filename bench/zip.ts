/**
 * @module bench/zip
 * Zip downloads (GET /api/files/zip through the pool, to curl → /dev/null) of
 * - a folder of BENCH_SIZE_MB (1 GiB) of mixed files, mostly incompressible media,
 *   with compression=store, vs `zip -r -q -0` on the same folder;
 * - a folder of BENCH_SMALL_FILES (10,000) small files with the default compression
 *   (deflate level 1 for text, store for media), vs `zip -r -q -1`;
 * and, as the ceiling, filegate's own single-file download of a file as big as the
 * mixed folder, measured in the same run. The zip tool writes its archive to stdout
 * → /dev/null, like filegate streams it. Every filegate archive is then downloaded
 * to a file once and checked with `unzip -tq` and its file count.
 * Figures: MB/s of input (file bytes zipped per second), files/s, archive size, CPU
 * seconds per GiB of input (filegate: the server process; zip: the zip process).
 */
import { closeSync, openSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { runBenchmark } from './lib/bench.js'
import { download, requireCurl } from './lib/curl.js'
import { ensureCommand } from './lib/debian.js'
import { GiB, env, selected } from './lib/env.js'
import { bigFile, mixedFolder, plant, smallFolder, treeStats, warm } from './lib/files.js'
import { reapedChildrenCpuSeconds, run, runOk } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { startFilegate, tempDir, tmpSession } from './lib/servers.js'

interface Sample {
  readonly row: string
  readonly run: number
  readonly mbps: number
  readonly filesPerS: number
  readonly archiveBytes: number
  readonly cpuPerGiB: number
}

/** `zip -r -q -<level> - <name>` in `parent`, archive to /dev/null; wall and the zip process's CPU seconds. */
async function zipCli(zipPath: string, folder: string, level: number): Promise<{ wallS: number; cpuS: number; archiveBytes: number }> {
  const devnull = openSync('/dev/null', 'w')
  try {
    const c0 = reapedChildrenCpuSeconds()
    const r = await run(zipPath, ['-r', '-q', `-${level}`, '-', basename(folder)], { cwd: dirname(folder), stdio: ['ignore', devnull, 'pipe'] })
    const cpuS = reapedChildrenCpuSeconds() - c0
    if (r.code !== 0) throw new Error(`zip failed (${r.code ?? r.signal}): ${r.stderr}`)
    return { wallS: r.wallS, cpuS, archiveBytes: Number.NaN }
  } finally {
    closeSync(devnull)
  }
}

/** The archive size `zip` produces (once, outside the timed runs). */
async function zipCliSize(zipPath: string, folder: string, level: number): Promise<number> {
  const r = await runOk('sh', ['-c', `"$1" -r -q "-$2" - "$3" | wc -c`, 'sh', zipPath, String(level), basename(folder)], { cwd: dirname(folder) })
  return Number(r.stdout.trim())
}

runBenchmark('zip', async () => {
  await requireCurl()
  const mixed = mixedFolder()
  const small = smallFolder()
  const big = bigFile()
  const mixedStats = treeStats(mixed)
  const smallStats = treeStats(small)
  progress(`warming the page cache (${fmt((mixedStats.bytes + smallStats.bytes) / 1e6)} MB of inputs)`)
  warm(mixed)
  warm(small)
  warm(big)

  const data = tempDir('zip')
  const home = join(data, 'tmp', 'bench')
  plant(mixed, join(home, 'mixed'))
  plant(small, join(home, 'small'))
  plant(big, join(home, 'big.bin'))
  const filegate = await startFilegate(data)
  const token = await tmpSession(filegate.url, 'bench')
  const auth = [`Authorization: Bearer ${token}`]
  const zipUrl = (folder: string, store: boolean) => `${filegate.url}/api/files/zip?path=/${folder}/${store ? '&compression=store' : ''}`
  const zipTool = await ensureCommand('zip', 'zip')
  const skipped: Record<string, string> = {}
  if (!zipTool.ok) skipped['zip CLI'] = zipTool.reason

  type Measure = () => Promise<{ wallS: number; cpuS: number; archiveBytes: number }>
  const viaFilegate =
    (url: string): Measure =>
    async () => {
      const cpu0 = filegate.cpu()
      const r = await download(url, auth, 1, null)
      return { wallS: r.wallS, cpuS: filegate.cpu() - cpu0, archiveBytes: r.bytes }
    }
  const bigSize = statSync(big).size
  const allRows: { row: string; input: { files: number; bytes: number }; measure: Measure }[] = [
    { row: 'single file download (filegate, no zip)', input: { files: 1, bytes: bigSize }, measure: viaFilegate(`${filegate.url}/api/files/cat?path=/big.bin`) },
    { row: 'mixed, store: filegate', input: mixedStats, measure: viaFilegate(zipUrl('mixed', true)) },
  ]
  if (zipTool.ok) allRows.push({ row: 'mixed, store: zip -0', input: mixedStats, measure: () => zipCli(zipTool.path, mixed, 0) })
  allRows.push({ row: 'small files, default: filegate', input: smallStats, measure: viaFilegate(zipUrl('small', false)) })
  if (zipTool.ok) allRows.push({ row: 'small files: zip -1', input: smallStats, measure: () => zipCli(zipTool.path, small, 1) })
  const rows = allRows.filter((r) => selected(r.row))

  progress('warm-up: each case once')
  for (const r of rows) await r.measure()
  const samples: Sample[] = []
  for (let run = 1; run <= env.runs; run++) {
    for (const r of rows) {
      const m = await r.measure()
      const s: Sample = {
        row: r.row,
        run,
        mbps: r.input.bytes / m.wallS / 1e6,
        filesPerS: r.input.files / m.wallS,
        archiveBytes: m.archiveBytes,
        cpuPerGiB: m.cpuS / (r.input.bytes / GiB),
      }
      samples.push(s)
      progress(`run ${run}/${env.runs}, ${r.row}: ${fmt(s.mbps)} MB/s, ${fmt(s.filesPerS)} files/s, ${fmt(s.cpuPerGiB)} CPU s/GiB`)
    }
  }

  // Archive sizes of the zip tool, and the check of filegate's archives.
  const cliSizes: Record<string, number> = {}
  if (zipTool.ok) {
    cliSizes['mixed, store: zip -0'] = await zipCliSize(zipTool.path, mixed, 0)
    cliSizes['small files: zip -1'] = await zipCliSize(zipTool.path, small, 1)
  }
  const unzip = await ensureCommand('unzip', 'unzip')
  if (unzip.ok) {
    for (const [folder, store, stats] of [['mixed', true, mixedStats], ['small', false, smallStats]] as const) {
      const file = join(tempDir('zip-check'), `${folder}.zip`)
      await download(zipUrl(folder, store), auth, 1, null, file)
      await runOk(unzip.path, ['-tq', file])
      const names = (await runOk(unzip.path, ['-Z1', file])).stdout.split('\n').filter((l) => l !== '' && !l.endsWith('/'))
      if (names.length !== stats.files) throw new Error(`the ${folder} archive holds ${names.length} files, the folder ${stats.files}`)
      rmSync(file)
      progress(`checked: the ${folder} archive passes unzip -tq and holds all ${stats.files} files`)
    }
  } else {
    skipped['archive check'] = unzip.reason
  }

  type Key = 'mbps' | 'filesPerS' | 'archiveBytes' | 'cpuPerGiB'
  const med = (row: string, key: Key) => median(samples.filter((s) => s.row === row).map((s) => s[key]))
  const single = med(allRows[0]!.row, 'mbps')
  const figures: Record<string, unknown> = {}
  for (const r of rows) {
    figures[r.row] = { mbps: med(r.row, 'mbps'), filesPerS: med(r.row, 'filesPerS'), archiveBytes: cliSizes[r.row] ?? med(r.row, 'archiveBytes'), cpuPerGiB: med(r.row, 'cpuPerGiB'), inputFiles: r.input.files, inputBytes: r.input.bytes }
  }
  const ratios: Record<string, number | null> = {
    'filegate zip store / zip -0 MB/s': zipTool.ok ? ratio(med('mixed, store: filegate', 'mbps'), med('mixed, store: zip -0', 'mbps')) : null,
    'filegate zip store / single-file download MB/s': ratio(med('mixed, store: filegate', 'mbps'), single),
    'filegate small files / zip -1 files/s': zipTool.ok ? ratio(med('small files, default: filegate', 'filesPerS'), med('small files: zip -1', 'filesPerS')) : null,
    'filegate zip store / zip -0 CPU per GiB': zipTool.ok ? ratio(med('mixed, store: filegate', 'cpuPerGiB'), med('mixed, store: zip -0', 'cpuPerGiB')) : null,
    'filegate small files / zip -1 CPU per GiB': zipTool.ok ? ratio(med('small files, default: filegate', 'cpuPerGiB'), med('small files: zip -1', 'cpuPerGiB')) : null,
  }
  const vsCli = (row: string): string => {
    if (row === 'mixed, store: filegate') return fmtRatio(ratios['filegate zip store / zip -0 MB/s'] ?? null)
    if (row === 'small files, default: filegate') return fmtRatio(ratios['filegate small files / zip -1 files/s'] ?? null)
    return row.includes('zip -') ? '1x' : '–'
  }
  publish({
    name: 'zip',
    settings: { mixedMiB: env.sizeMb, mixedFiles: mixedStats.files, smallFiles: smallStats.files, smallBytes: smallStats.bytes, runs: env.runs, workers: env.workers },
    figures,
    ratios,
    runs: samples,
    skipped,
    table: table(
      ['case', 'files', 'input MB', 'MB/s', 'files/s', 'archive MB', 'CPU s/GiB', 'vs zip CLI', 'MB/s vs single file'],
      rows.map((r) => [
        r.row,
        fmt(r.input.files),
        fmt(r.input.bytes / 1e6),
        fmt(med(r.row, 'mbps')),
        fmt(med(r.row, 'filesPerS')),
        fmt((cliSizes[r.row] ?? med(r.row, 'archiveBytes')) / 1e6),
        fmt(med(r.row, 'cpuPerGiB')),
        vsCli(r.row),
        fmtRatio(ratio(med(r.row, 'mbps'), single)),
      ]),
    ),
  })
})

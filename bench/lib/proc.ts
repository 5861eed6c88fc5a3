/**
 * @module bench/lib/proc
 * Child processes of a benchmark: every one is tracked and stopped by its pid when
 * the benchmark ends, fails or is interrupted (Ctrl-C), and CPU time is read from
 * /proc so a server's cost can be measured from outside it (per process, and per
 * thread for the main thread's share).
 */
import { type ChildProcess, type SpawnOptions, execFileSync, spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { createInterface } from 'node:readline'

const live = new Set<ChildProcess>()
const cleanups: (() => Promise<void> | void)[] = []
let exiting = false

/** True once Ctrl-C (or SIGTERM, or an uncaught error) started the shutdown. */
export const isExiting = (): boolean => exiting

/** Runs `fn` (e.g. removing a temp dir) when the benchmark ends, in reverse order of registration. */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn)
}

/** Stops every child still running (TERM, then KILL after `graceMs`) and runs the cleanups. */
export async function cleanup(graceMs = 3000): Promise<void> {
  await Promise.all([...live].map((c) => stop(c, graceMs)))
  while (cleanups.length > 0) {
    const fn = cleanups.pop()!
    try {
      await fn()
    } catch (err) {
      console.error(`cleanup failed: ${String(err)}`)
    }
  }
}

/** Children stopped on purpose: their exit is not news. */
export const stopped = new WeakSet<ChildProcess>()

/** Stops one child by its pid and waits for it to exit. */
export async function stop(child: ChildProcess, graceMs = 3000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  stopped.add(child)
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill(signal)
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(t)
}

/**
 * Installs the handlers that make a benchmark stop what it started: on Ctrl-C,
 * SIGTERM, an uncaught error, and (synchronously, as a last resort) on exit.
 */
export function installExitHandlers(): void {
  const bail = (code: number, why: string) => {
    if (exiting) return
    exiting = true
    console.error(`\n${why}: stopping the servers and clients this benchmark started...`)
    void cleanup(2000).finally(() => process.exit(code))
  }
  process.on('SIGINT', () => bail(130, 'interrupted'))
  process.on('SIGTERM', () => bail(143, 'terminated'))
  process.on('uncaughtException', (err) => {
    console.error(err)
    bail(1, 'uncaught error')
  })
  process.on('unhandledRejection', (err) => {
    console.error(err)
    bail(1, 'unhandled rejection')
  })
  process.on('exit', () => {
    for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  })
}

/** Spawns a tracked child. Its output is kept (last lines) for error messages unless `stdio` says otherwise. */
export function track(cmd: string, args: readonly string[], opts: SpawnOptions = {}): ChildProcess {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts })
  live.add(child)
  child.once('exit', () => live.delete(child))
  // A child that cannot start (ENOENT) must not crash the benchmark with an unhandled 'error'.
  child.once('error', () => live.delete(child))
  return child
}

/** Keeps the last `n` lines a stream printed; `onLine` sees each one. Drains the pipe so the child never blocks on it. */
export function tail(stream: NodeJS.ReadableStream | null, n = 40, onLine?: (line: string) => void): () => string {
  const lines: string[] = []
  if (stream) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) => {
      lines.push(l)
      if (lines.length > n) lines.shift()
      onLine?.(l)
    })
  }
  return () => lines.join('\n')
}

export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** Wall seconds from spawn to exit. */
  readonly wallS: number
}

/** Runs a command to completion (tracked, so Ctrl-C stops it too), collecting its output. */
export function run(cmd: string, args: readonly string[], opts: SpawnOptions & { maxOutput?: number } = {}): Promise<Finished> {
  const max = opts.maxOutput ?? 16 * 1024 * 1024
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = track(cmd, args, opts)
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      if (stdout.length < max) stdout += d
    })
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < max) stderr += d
    })
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr, wallS: (performance.now() - t0) / 1000 }))
  })
}

/** As `run`, but a non-zero exit is an error carrying the command's stderr. */
export async function runOk(cmd: string, args: readonly string[], opts: SpawnOptions = {}): Promise<Finished> {
  const r = await run(cmd, args, opts)
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.code ?? r.signal}): ${r.stderr.trim().slice(-2000)}`)
  return r
}

// CPU time ------------------------------------------------------------------

/** Clock ticks per second, read once at load (not during a measurement: getconf is a child too). */
const TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()
const clockTicks = (): number => TICKS

/**
 * Fields of /proc/<pid>/stat after the command name (which may contain spaces); with
 * `tid`, those of one of its threads (/proc/<pid>/task/<tid>/stat, the same layout).
 */
function statFields(pid: number | 'self', tid?: number): string[] | null {
  try {
    const s = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8')
    return s.slice(s.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/**
 * CPU seconds (user + system) a process has used, all its threads included
 * (utime/stime of /proc/<pid>/stat). 0 when it is gone.
 */
export function cpuSeconds(pid: number): number {
  const f = statFields(pid)
  // After the name: state(0) ppid(1) ... utime(11) stime(12).
  return f ? (Number(f[11]) + Number(f[12])) / clockTicks() : 0
}

/**
 * CPU seconds (user + system) one thread of a process has used: utime and stime (fields
 * 14 and 15) of /proc/<pid>/task/<tid>/stat. The main thread's tid is the pid. 0 when gone.
 */
export function threadCpuSeconds(pid: number, tid: number): number {
  const f = statFields(pid, tid)
  return f ? (Number(f[11]) + Number(f[12])) / clockTicks() : 0
}

/** What a process's main thread did over an interval, next to the whole process. */
export interface MainThreadShare {
  /** CPU seconds of the main thread (tid = pid). */
  readonly mainS: number
  /** CPU seconds of the whole process, all threads (those that ended meanwhile included). */
  readonly processS: number
  /** mainS / processS; NaN when the process used no CPU (less than a clock tick). */
  readonly share: number
}

/**
 * Starts measuring the main thread's share of a process's CPU: call the returned function
 * at the end of the interval. Sampled from /proc at both ends (clock ticks, 10 ms here),
 * so it is meant for intervals of a second or more.
 */
export function mainThreadMeter(pid: number): () => MainThreadShare {
  const main0 = threadCpuSeconds(pid, pid)
  const process0 = cpuSeconds(pid)
  return () => {
    const mainS = threadCpuSeconds(pid, pid) - main0
    const processS = cpuSeconds(pid) - process0
    return { mainS, processS, share: processS > 0 ? mainS / processS : Number.NaN }
  }
}

/** CPU seconds of a process and its direct children (nginx: master + workers). */
export function treeCpuSeconds(pid: number): number {
  let total = cpuSeconds(pid)
  for (const child of childrenOf(pid)) total += cpuSeconds(child)
  return total
}

/**
 * CPU seconds of a process plus those of its descendants that have exited and been
 * reaped (cutime + cstime): for a server that forks one process per connection
 * (sshd), the cost of finished connections, once each has been waited for.
 */
export function cpuSecondsWithReaped(pid: number): number {
  const f = statFields(pid)
  return f ? (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / clockTicks() : 0
}

/** Resident memory of a process in bytes (VmRSS), and its peak so far (VmHWM); 0 when it is gone. */
export function memory(pid: number): { rss: number; peak: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? 0) * 1024
    return { rss: kb('VmRSS'), peak: kb('VmHWM') }
  } catch {
    return { rss: 0, peak: 0 }
  }
}

/** The pids whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const f = statFields(Number(name))
    if (f && Number(f[1]) === pid) out.push(Number(name))
  }
  return out
}

/**
 * CPU seconds used by this process's children that have exited and been reaped
 * (cutime + cstime of /proc/self/stat): the difference around a client run is the
 * clients' CPU, as long as no server exits meanwhile.
 */
export function reapedChildrenCpuSeconds(): number {
  const f = statFields('self')
  return f ? (Number(f[13]) + Number(f[14])) / clockTicks() : 0
}

/** Whether a command is on the PATH (or an absolute path that exists). */
export function which(cmd: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v "$1"`, 'sh', cmd], { encoding: 'utf8' }).trim() || null
  } catch {
    return null
  }
}

/**
 * @module bench/sftp-sessions
 * Many SFTP sessions at once (BENCH_SFTP_SESSIONS, default 1,000; quick: 50), from
 * ssh2 clients in BENCH_SFTP_CLIENT_PROCS separate processes (bench/clients/sftp-sessions.ts):
 * - idle: every session connects, logs in, opens the sftp subsystem and stays open;
 *   the server's resident memory with all of them open minus before, per session;
 * - fetch: every session connects, logs in, lists its folder ("."), reads a 1 MiB
 *   file (SHA-256 checked) and disconnects, all started at once: errors (zero
 *   expected), p50/p99 of the per-session time, of the login time, logins/s (logins
 *   ÷ first start to last login) and the server's peak resident memory (VmHWM: the
 *   high-water mark of its RSS since it started, the idle phase included).
 * Against filegate's SFTP gateway, once with password logins (scrypt is paid on every
 * login) and once with key logins, and, as the reference, OpenSSH sshd + internal-sftp
 * (key login; sshd forks processes per session, so its memory is the PSS summed over
 * its process tree). Each case on a fresh server.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { Options, SessionResult } from './clients/sftp-sessions.js'
import { runBenchmark } from './lib/bench.js'
import { MiB, ROOT, env, selected } from './lib/env.js'
import { childrenOf, run, stop, tail, track } from './lib/proc.js'
import { fmt, fmtRatio, median, progress, publish, ratio, table } from './lib/report.js'
import { type SftpTarget, clientKey, startFilegateSftp, startOpenSsh } from './lib/sftp-servers.js'
import { tempDir } from './lib/servers.js'

const num = (name: string, dflt: number): number => {
  const v = Number(process.env[name] ?? dflt)
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a whole number >= 1`)
  return v
}
const SESSIONS = num('BENCH_SFTP_SESSIONS', env.quick ? 50 : 1000)
const PROCS = Math.min(SESSIONS, num('BENCH_SFTP_CLIENT_PROCS', env.quick ? 1 : 2))
/**
 * Client addresses (127.x.y.z) the sessions come from, round robin: by default one per
 * session, as many users would. (filegate checks the logins of one address a few at a
 * time and throttles per address: BENCH_SFTP_ADDRESSES=1 shows one host opening them all.)
 */
const ADDRESSES = Math.min(SESSIONS, num('BENCH_SFTP_ADDRESSES', SESSIONS))
const FILE_SIZE = MiB
/**
 * filegate's caps before login raised as the OpenSSH reference's (MaxStartups 2000): every
 * session starts at once, from one address when BENCH_SFTP_ADDRESSES=1 (the fair limits
 * on transfers raised then too). bench/sftp-abuse.ts measures the default caps.
 */
const RAISED = { sftp: { max_startups: '2000', max_startups_per_address: 2000 }, transfers_per_address: 100000, transfers_per_credential: 100000 }

const percentile = (xs: readonly number[], p: number): number => {
  const v = [...xs].sort((a, b) => a - b)
  return v.length === 0 ? Number.NaN : v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!
}

/** Proportional set size of a process and all its descendants, bytes (shared pages split among sharers). */
function treePss(pid: number): number {
  let total = 0
  const visit = (p: number) => {
    try {
      total += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0) * 1024
    } catch {
      // gone meanwhile
    }
    for (const c of childrenOf(p)) visit(c)
  }
  visit(pid)
  return total
}

/** Memory the target holds: filegate's RSS (one process); OpenSSH's PSS over its process tree. */
const held = (t: SftpTarget): number => (t.name === 'openssh' ? treePss(t.pid) : t.memory().rss)

/** Makes sure `pid` may open `need` files (prlimit raises the soft limit up to the hard one). */
async function raiseNofile(pid: number, need: number): Promise<void> {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))
  const soft = m?.[1] === 'unlimited' ? Infinity : Number(m?.[1] ?? 0)
  if (soft >= need) return
  const r = await run('prlimit', ['--pid', String(pid), `--nofile=${need}:${need}`])
  if (r.code !== 0) throw new Error(`${SESSIONS} sessions need ${need} open files but process ${pid} may open ${soft} and prlimit failed (raise ulimit -n): ${r.stderr.trim()}`)
}

interface Clients {
  /** Resolves with each process's first line of JSON output of type `type`. */
  next(type: string): Promise<Record<string, unknown>[]>
  send(line: string): void
  done(): Promise<void>
}

function startClients(t: SftpTarget, mode: Options['mode'], sessions: number, base: Omit<Options, 'sessions' | 'mode' | 'first' | 'addresses'>): Clients {
  const n = Math.min(PROCS, sessions)
  const counts = Array.from({ length: n }, (_, i) => Math.floor(sessions / n) + (i < sessions % n ? 1 : 0))
  const procs = counts.map((count, i) => {
    const first = counts.slice(0, i).reduce((a, b) => a + b, 0)
    const opts: Options = { ...base, sessions: count, mode, first, addresses: ADDRESSES }
    const child = track(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'clients', 'sftp-sessions.ts'), JSON.stringify(opts)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const err = tail(child.stderr, 20)
    const lines: Record<string, unknown>[] = []
    const waiting: (() => void)[] = []
    createInterface({ input: child.stdout! }).on('line', (l) => {
      lines.push(JSON.parse(l) as Record<string, unknown>)
      for (const w of waiting.splice(0)) w()
    })
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve()
        for (const w of waiting.splice(0)) w() // a `next` waiting on it fails now
      }),
    )
    const next = async (type: string): Promise<Record<string, unknown>> => {
      for (;;) {
        const i = lines.findIndex((l) => l.type === type)
        if (i >= 0) return lines.splice(i, 1)[0]!
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the ${t.name} session client exited (${child.exitCode ?? child.signalCode}) without "${type}": ${err()}`)
        await new Promise<void>((r) => waiting.push(r))
      }
    }
    return { child, next, exited }
  })
  return {
    next: (type) => Promise.all(procs.map((p) => p.next(type))),
    send: (line) => procs.forEach((p) => p.child.stdin!.write(`${line}\n`)),
    done: async () => {
      await Promise.all(procs.map((p) => p.exited))
      for (const p of procs) await stop(p.child)
    },
  }
}

const flat = (outs: Record<string, unknown>[]): SessionResult[] => outs.flatMap((o) => o.sessions as SessionResult[])
const errorsOf = (s: readonly SessionResult[]) => s.filter((x) => x.error !== null)
const firstErrors = (s: readonly SessionResult[]) => [...new Set(errorsOf(s).map((x) => x.error))].slice(0, 3).join('; ')

interface Figures {
  readonly server: string
  readonly sessions: number
  readonly errors: number
  readonly p50: number
  readonly p99: number
  readonly loginP50: number
  readonly loginP99: number
  readonly loginsPerS: number
  readonly wallS: number
  readonly peakMiB: number | null
  readonly idleOpen: number
  readonly idleErrors: number
  readonly idleKiBPerSession: number
  readonly idleBeforeMiB: number
  readonly idleAfterMiB: number
}

runBenchmark('sftp-sessions', async () => {
  const folder = tempDir('sftp-sessions-root')
  const content = randomBytes(FILE_SIZE)
  writeFileSync(join(folder, 'one-mib.bin'), content)
  for (let i = 0; i < 20; i++) writeFileSync(join(folder, `file-${i}.txt`), `file ${i}\n`)
  for (let i = 0; i < 5; i++) mkdirSync(join(folder, `folder-${i}`))
  const work = tempDir('sftp-sessions-client')
  const key = await clientKey(work)
  const fileBase = { file: 'one-mib.bin', size: FILE_SIZE, sha256: createHash('sha256').update(content).digest('hex') }

  // Each case on a fresh server (so its peak RSS is its own). filegate with a password (scrypt
  // on every login, what the issue asks) and with a key (the same login as OpenSSH's).
  const cases: { readonly label: string; readonly auth: 'password' | 'key'; readonly start: () => Promise<SftpTarget | { skipped: string }> }[] = [
    { label: 'filegate, password', auth: 'password', start: () => startFilegateSftp(folder, key, env.workers, RAISED) },
    { label: 'filegate, key', auth: 'key', start: () => startFilegateSftp(folder, key, env.workers, RAISED) },
    { label: 'openssh, key', auth: 'key', start: () => startOpenSsh(folder, key) },
  ]
  const skipped: Record<string, string> = {}
  const results: Figures[] = []
  for (const c of cases.filter((x) => selected(x.label))) {
    const started = await c.start()
    if ('skipped' in started) {
      skipped[c.label] = started.skipped
      continue
    }
    const t = started
    await raiseNofile(t.pid, SESSIONS * 2 + 1024)
    if (c.auth === 'password' && t.password === null) throw new Error(`${t.name} has no password login`)
    const base = {
      port: t.port,
      user: t.user,
      ...(c.auth === 'password' ? { password: t.password! } : { privateKey: key.privateKey }),
      ...fileBase,
    }
    progress(`${c.label}: warm-up, 5 sessions`)
    const warm = startClients(t, 'fetch', 5, base)
    const warmErr = errorsOf(flat(await warm.next('result')))
    await warm.done()
    if (warmErr.length > 0) throw new Error(`${c.label}: warm-up sessions failed: ${firstErrors(warmErr)}`)
    await t.settle()

    progress(`${c.label}: ${SESSIONS} idle sessions from ${PROCS} client process(es) and ${ADDRESSES} address(es)`)
    const before = held(t)
    const idle = startClients(t, 'idle', SESSIONS, base)
    const idleRes = flat(await idle.next('ready'))
    await new Promise((r) => setTimeout(r, 2000)) // let the last logins' garbage go
    const after = held(t)
    const idleOk = idleRes.length - errorsOf(idleRes).length
    idle.send('close')
    const closed = await idle.next('closed')
    await idle.done()
    const dropped = closed.reduce((a, c) => a + Number(c.dropped), 0)
    progress(`${c.label}: ${idleOk} idle sessions open (${errorsOf(idleRes).length} failed, ${dropped} dropped while idle): ${fmt((after - before) / MiB)} MiB more, ${fmt((after - before) / Math.max(1, idleOk) / 1024)} KiB each${errorsOf(idleRes).length ? `; errors: ${firstErrors(idleRes)}` : ''}`)
    await t.settle()

    progress(`${c.label}: ${SESSIONS} sessions at once, each logs in, lists its folder, reads 1 MiB, disconnects`)
    const t0 = Date.now()
    const fetch = startClients(t, 'fetch', SESSIONS, base)
    const fetchRes = flat(await fetch.next('result'))
    const wallS = (Date.now() - t0) / 1000
    // The kernel's high-water mark of the process's RSS, idle phase included (sshd: many processes, none telling).
    const peak = t.name === 'openssh' ? null : t.memory().peak
    await fetch.done()
    await t.settle()
    const ok = fetchRes.filter((s) => s.error === null)
    const logins = fetchRes.filter((s) => s.loggedInAt !== null)
    const loginSpanS = logins.length === 0 ? Number.NaN : (Math.max(...logins.map((s) => s.loggedInAt!)) - Math.min(...fetchRes.map((s) => s.startedAt))) / 1000
    const f: Figures = {
      server: c.label,
      sessions: SESSIONS,
      errors: fetchRes.length - ok.length,
      p50: percentile(ok.map((s) => s.totalMs!), 50),
      p99: percentile(ok.map((s) => s.totalMs!), 99),
      loginP50: percentile(logins.map((s) => s.loginMs!), 50),
      loginP99: percentile(logins.map((s) => s.loginMs!), 99),
      loginsPerS: logins.length / loginSpanS,
      wallS,
      peakMiB: peak === null ? null : peak / MiB,
      idleOpen: idleOk,
      idleErrors: idleRes.length - idleOk + dropped,
      idleKiBPerSession: (after - before) / Math.max(1, idleOk) / 1024,
      idleBeforeMiB: before / MiB,
      idleAfterMiB: after / MiB,
    }
    results.push(f)
    const phase = (i: number) => fmt(median(ok.map((s) => s.phasesMs![i]!)))
    progress(`${c.label}: medians of login ${phase(0)} ms, sftp subsystem ${phase(1)} ms, list ${phase(2)} ms, read 1 MiB ${phase(3)} ms, disconnect ${phase(4)} ms`)
    await t.stop()
    progress(`${c.label}: ${ok.length}/${SESSIONS} ok in ${fmt(wallS)} s, p50 ${fmt(f.p50)} ms, p99 ${fmt(f.p99)} ms, ${fmt(f.loginsPerS)} logins/s, peak ${fmt(f.peakMiB)} MiB${f.errors ? `; errors: ${firstErrors(fetchRes)}` : ''}`)
  }

  const ref = results.find((r) => r.server.startsWith('openssh'))
  const ratios: Record<string, number | null> = {}
  for (const r of results) {
    if (r === ref) continue
    ratios[`${r.server} vs ${ref?.server} p50`] = ratio(r.p50, ref?.p50)
    ratios[`${r.server} vs ${ref?.server} p99`] = ratio(r.p99, ref?.p99)
    ratios[`${r.server} vs ${ref?.server} KiB per idle session`] = ratio(r.idleKiBPerSession, ref?.idleKiBPerSession)
  }
  const rows = results.map((r) => [
    r.server,
    String(r.sessions),
    String(r.errors),
    fmt(r.p50),
    fmt(r.p99),
    fmt(r.loginP50),
    fmt(r.loginsPerS),
    fmt(r.peakMiB),
    `${r.idleOpen}/${r.sessions}`,
    fmt(r.idleKiBPerSession),
    r === ref ? '1x' : fmtRatio(ratio(r.p99, ref?.p99)),
  ])
  publish({
    name: 'sftp-sessions',
    settings: { sessions: SESSIONS, clientProcesses: PROCS, clientAddresses: ADDRESSES, fileBytes: FILE_SIZE, workers: env.workers, filegateAuth: 'password (scrypt)', opensshAuth: 'ed25519 key' },
    figures: Object.fromEntries(results.map((r) => [r.server, r])),
    ratios,
    runs: results,
    skipped,
    table: table(
      ['server', 'sessions', 'errors', 'p50 ms', 'p99 ms', 'login p50 ms', 'logins/s', 'peak RSS MiB', 'idle open', 'KiB per idle session', 'p99 vs OpenSSH'],
      rows,
    ),
  })
  const broken = results.filter((r) => r.errors > 0 || r.idleErrors > 0)
  if (broken.length > 0) throw new Error(`sessions failed: ${broken.map((r) => `${r.server}: ${r.errors} of ${r.sessions} fetch sessions, ${r.idleErrors} idle`).join('; ')}`)
})

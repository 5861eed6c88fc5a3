/**
 * @module bench/lib/soak-watch
 * What the soak (bench/soak.ts) watches of the filegate process from outside: its
 * resident memory (/proc/<pid>/status), its open file descriptors (/proc/<pid>/fd, and
 * what each points to, to name a leak), and its event-loop delay (p99 since the last
 * scrape, from prom-client's default figures on its own GET /metrics).
 */
import { get } from 'node:http'
import { readdirSync, readlinkSync } from 'node:fs'
import { memory } from './proc.js'

/** fd number → what it points to ("socket:[123]", "/path", "anon_inode:[eventfd]", ...). */
export function openFds(pid: number): Map<string, string> {
  const out = new Map<string, string>()
  let names: string[] = []
  try {
    names = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return out
  }
  for (const fd of names) {
    try {
      out.set(fd, readlinkSync(`/proc/${pid}/fd/${fd}`))
    } catch {
      // closed between the listing and the readlink
    }
  }
  return out
}

/** The kinds of descriptors, counted: "socket 12, file 8, pipe 4, anon 6". */
export function fdKinds(fds: Map<string, string>): string {
  const kinds = new Map<string, number>()
  for (const target of fds.values()) {
    const kind = target.startsWith('socket:') ? 'socket' : target.startsWith('pipe:') ? 'pipe' : target.startsWith('anon_inode:') ? 'anon' : target.startsWith('/dev/') ? 'dev' : 'file'
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
  }
  return [...kinds].sort().map(([k, n]) => `${k} ${n}`).join(', ')
}

/**
 * Waits until the process has at most `limit` descriptors open (connections the
 * clients closed take a moment to be closed on the server's side too), up to `ms`.
 * Returns the last listing.
 */
export async function fdsSettled(pid: number, limit: number, ms: number): Promise<Map<string, string>> {
  const deadline = Date.now() + ms
  for (;;) {
    const fds = openFds(pid)
    if (fds.size <= limit || Date.now() > deadline) return fds
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** The descriptors open now, once their count has not changed for `quietMs` (at most `ms`). */
export async function fdsStable(pid: number, quietMs = 3000, ms = 30_000): Promise<Map<string, string>> {
  const deadline = Date.now() + ms
  let last = openFds(pid)
  let since = Date.now()
  while (Date.now() - since < quietMs && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250))
    const now = openFds(pid)
    if (now.size !== last.size) since = Date.now()
    last = now
  }
  return last
}

/** GET /metrics on a connection of its own (closed after: not one of the server's descriptors later). */
function scrape(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get(`${url}/metrics`, { agent: false, timeout: 10_000 }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (d: string) => (text += d))
      res.once('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics: HTTP ${res.statusCode}`))))
      res.once('error', reject)
    })
    req.once('timeout', () => req.destroy(new Error('GET /metrics: no answer within 10 s')))
    req.once('error', reject)
  })
}

export interface Sample {
  /** Seconds since the soak started. */
  readonly t: number
  readonly rssMiB: number
  readonly fds: number
  /** Event-loop delay p99 over the interval, ms (null when /metrics has no such figure). */
  readonly lagP99Ms: number | null
  readonly ops: number
}

export async function sample(pid: number, url: string, t: number, ops: number): Promise<Sample> {
  const text = await scrape(url)
  const lag = /^nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(text)?.[1]
  return { t, rssMiB: memory(pid).rss / 2 ** 20, fds: openFds(pid).size, lagP99Ms: lag === undefined ? null : Number(lag) * 1000, ops }
}

/** Least-squares slope of y over x. */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const mx = points.reduce((s, p) => s + p.x, 0) / n
  const my = points.reduce((s, p) => s + p.y, 0) / n
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0)
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0)
  return den === 0 ? Number.NaN : num / den
}

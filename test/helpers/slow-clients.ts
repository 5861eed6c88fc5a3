/**
 * The slow-client attack, shared by test/front/slow-clients.test.ts and
 * bench/slow-clients.ts: many connections that ask for a shared file over 64 KiB and
 * read almost nothing of it, many uploads that send their headers and then a byte now
 * and then, and meanwhile a logged-in user listing and reading a small file. It reports
 * that user's latencies, what the attackers got, and the server's memory (RSS of its
 * process).
 *
 * The attackers trickle (slowloris) rather than go silent: a connection that makes no
 * progress at all is closed by the server's idle timeout (about 10 s), and on a busy
 * machine setting up hundreds of them takes longer than that, so silent ones would
 * start to go before the last arrived and "all of them at once" would depend on the
 * machine's load. Trickling, every one stays a live transfer for as long as the attack lasts.
 */
import { readFileSync } from 'node:fs'
import { type Socket, connect } from 'node:net'

export interface SlowClientOptions {
  /** http://127.0.0.1:port of a filegate whose process is `pid`. */
  readonly url: string
  readonly pid: number
  readonly downloads: number
  readonly uploads: number
  /**
   * Loopback addresses the stalled connections come from: downloads from 127.0.1.1,
   * 127.0.1.2..., uploads from 127.0.2.1, 127.0.2.2...
   */
  readonly addresses: number
  /** Seconds the logged-in user works while the attack holds. */
  readonly seconds: number
  /** Size of the shared file, bytes (over 64 KiB so that it streams). */
  readonly fileBytes?: number
  /**
   * How long one of the user's requests may take before it counts as failed (default 5 s).
   * The test raises it to a guard against hangs: on a busy machine a request is slow, not lost.
   */
  readonly requestTimeoutMs?: number
  /** How long to wait for the attack to be in place (every download answered, the uploads held; default 20 s). */
  readonly settleMs?: number
}

export interface SlowClientResult {
  /** The logged-in user's requests (ls, cat of 4 KiB and a streamed 1 MiB download in turn): count, failures, latencies in ms. */
  readonly requests: number
  readonly failures: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** HTTP status of each stalled download's head, by status ('none': no answer yet). */
  readonly downloadStatus: Record<string, number>
  /** Stalled uploads answered before the end (say, 429), by status; the rest are held. */
  readonly uploadStatus: Record<string, number>
  /** The most live transfers the server reported at once while the attack was set up (its /healthz), when it reports them. */
  readonly serverTransfers: number | null
  readonly rssBeforeMiB: number
  readonly rssPeakMiB: number
  readonly rssGrowthMiB: number
}

const MiB = 1024 * 1024
/** How often a stalled connection shows a sign of life: well inside the server's idle timeout (~10 s). */
const TRICKLE_MS = 2000

export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for process ${pid}`)
  return Number(m[1]) / 1024
}

async function json(res: Response): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>
  if (!res.ok) throw new Error(`${res.status}: ${JSON.stringify(body)}`)
  return body
}

async function session(url: string, userID: string): Promise<string> {
  const body = await json(await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID }) }))
  return (body.result as { authorization: string }).authorization
}

/**
 * A raw connection that sends `head` (+ `extra`), records the reply's status line, and
 * then trickles: every TRICKLE_MS it takes 1 KiB of the answer (a download) or sends
 * one more byte of its body (an upload, `extra` given), so it stays a live transfer the
 * server has no reason to drop, while almost nothing moves.
 */
function stalled(url: URL, localAddress: string, head: string, extra: string, status: Record<string, number>, sockets: Socket[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: url.hostname, port: Number(url.port), localAddress })
    sockets.push(s)
    const trickle = setInterval(() => {
      if (s.destroyed) return clearInterval(trickle)
      if (extra) s.write(extra)
      else s.read(1024)
    }, TRICKLE_MS)
    s.once('close', () => clearInterval(trickle))
    s.once('connect', () => {
      s.write(head + extra)
      resolve()
    })
    s.on('error', reject) // later errors (a refused upload's trickle meeting a closed socket) change nothing: settled once
    s.once('data', (chunk: Buffer) => {
      s.pause() // from here on read only what the trickle takes: the server's writes pile up against this client
      const code = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1', 0, 64))?.[1] ?? 'garbled'
      status[code] = (status[code] ?? 0) + 1
      status.none = (status.none ?? 0) - 1
    })
    status.none = (status.none ?? 0) + 1
  })
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.POSITIVE_INFINITY
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

export async function runSlowClients(o: SlowClientOptions): Promise<SlowClientResult> {
  const base = new URL(o.url)
  const size = o.fileBytes ?? 16 * MiB
  const owner = await session(o.url, 'owner')
  const auth = { authorization: `Bearer ${owner}` }
  await json(await fetch(`${o.url}/api/files/cat?path=/big.bin`, { method: 'POST', headers: auth, body: Buffer.alloc(size, 7) }))
  await json(await fetch(`${o.url}/api/files/cat?path=/docs/small.txt`, { method: 'POST', headers: auth, body: Buffer.alloc(4096, 1) }))
  await json(await fetch(`${o.url}/api/files/cat?path=/docs/medium.bin`, { method: 'POST', headers: auth, body: Buffer.alloc(MiB, 2) }))
  for (let i = 0; i < 20; i++) await json(await fetch(`${o.url}/api/files/touch?path=/docs/f${i}.txt`, { method: 'POST', headers: auth }))
  const share = await json(await fetch(`${o.url}/api/share`, { method: 'POST', headers: auth, body: JSON.stringify({ path: '/big.bin' }) }))
  const shareId = (share.result as { id: string }).id
  const uploader = await session(o.url, 'uploader')

  const timeoutMs = o.requestTimeoutMs ?? 5000
  const ls = async (): Promise<number> => {
    const t0 = performance.now()
    const res = await fetch(`${o.url}/api/files/ls?path=/docs/`, { headers: auth, signal: AbortSignal.timeout(timeoutMs) })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`ls: ${res.status}`)
    return performance.now() - t0
  }
  const cat = async (): Promise<number> => {
    const t0 = performance.now()
    const res = await fetch(`${o.url}/api/files/cat?path=/docs/small.txt`, { headers: auth, signal: AbortSignal.timeout(timeoutMs) })
    const n = (await res.arrayBuffer()).byteLength
    if (res.status !== 200 || n !== 4096) throw new Error(`cat: ${res.status}, ${n} bytes`)
    return performance.now() - t0
  }
  // A download too big to be answered inline: a live transfer of its own, beside the stalled ones.
  const download = async (): Promise<number> => {
    const t0 = performance.now()
    const res = await fetch(`${o.url}/api/files/cat?path=/docs/medium.bin`, { headers: auth, signal: AbortSignal.timeout(timeoutMs) })
    const n = (await res.arrayBuffer()).byteLength
    if (res.status !== 200 || n !== MiB) throw new Error(`download: ${res.status}, ${n} bytes`)
    return performance.now() - t0
  }
  const ops = [ls, cat, download]
  for (let i = 0; i < 30; i++) await Promise.all(ops.map((op) => op()))
  const rssBefore = rssMiB(o.pid)
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB(o.pid))), 100)

  const sockets: Socket[] = []
  const downloadStatus: Record<string, number> = {}
  const uploadStatus: Record<string, number> = {}
  const from = (net: number, i: number) => `127.0.${net}.${1 + (i % o.addresses)}`
  try {
    const host = `Host: ${base.host}\r\n`
    const dl = `GET /api/files/cat?share=${shareId}&path=/big.bin HTTP/1.1\r\n${host}\r\n`
    await Promise.all(Array.from({ length: o.downloads }, (_, i) => stalled(base, from(1, i), dl, '', downloadStatus, sockets)))
    await Promise.all(
      Array.from({ length: o.uploads }, (_, i) => {
        const up = `POST /api/files/cat?path=/up/${i}.bin HTTP/1.1\r\n${host}Authorization: Bearer ${uploader}\r\nContent-Length: ${100 * MiB}\r\n\r\n`
        return stalled(base, from(2, i), up, 'x', uploadStatus, sockets)
      }),
    )
    // Until every download has its answer's head and the server holds the uploads (or it
    // stops making progress): the attack is then in place.
    let transfers: number | null = null
    const deadline = Date.now() + (o.settleMs ?? 20_000)
    for (;;) {
      const h = await fetch(`${o.url}/healthz`, { signal: AbortSignal.timeout(timeoutMs) })
        .then((r) => r.json() as Promise<{ result?: { pool?: { transfers?: number } } }>)
        .catch(() => null)
      const now = h?.result?.pool?.transfers
      // The peak: connections idle for long (uWS closes them after about 10 s) may already
      // be gone when a busy machine has set up the last ones.
      if (typeof now === 'number') transfers = Math.max(transfers ?? 0, now)
      const refusedUploads = Object.entries(uploadStatus).reduce((n, [k, v]) => (k === 'none' ? n : n + v), 0)
      const downloadsAnswered = (downloadStatus.none ?? 0) === 0
      const liveDownloads = downloadStatus['200'] ?? 0
      if (downloadsAnswered && transfers !== null && transfers >= liveDownloads + o.uploads - refusedUploads) break
      if (Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 100))
    }

    const latencies: number[] = []
    let failures = 0
    const end = performance.now() + o.seconds * 1000
    for (let i = 0; performance.now() < end; i++) {
      try {
        latencies.push(await ops[i % ops.length]!())
      } catch {
        failures++
        latencies.push(timeoutMs)
      }
    }
    rssPeak = Math.max(rssPeak, rssMiB(o.pid))
    latencies.sort((a, b) => a - b)
    return {
      requests: latencies.length,
      failures,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: latencies[latencies.length - 1] ?? Number.POSITIVE_INFINITY,
      downloadStatus,
      uploadStatus,
      serverTransfers: transfers,
      rssBeforeMiB: rssBefore,
      rssPeakMiB: rssPeak,
      rssGrowthMiB: rssPeak - rssBefore,
    }
  } finally {
    clearInterval(sampler)
    for (const s of sockets) s.destroy()
  }
}

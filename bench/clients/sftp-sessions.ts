/**
 * @module bench/clients/sftp-sessions
 * The load generator of bench/sftp-sessions.ts, run as its own process (several of
 * them share the sessions): ssh2 clients that all start at once.
 *
 *   node --import tsx bench/clients/sftp-sessions.ts '<JSON Options>'
 *
 * mode "fetch": each session connects, logs in, lists its start folder "." (READDIR until EOF),
 *   reads FILE (32 KiB reads, 32 in flight), checks its SHA-256, closes it and
 *   disconnects; prints one line {"type":"result","sessions":[...]} and exits.
 * mode "idle": each session connects, logs in, opens the sftp subsystem and resolves
 *   "."; once all are open (or failed) prints {"type":"ready",...}; then waits for a
 *   line "close" on stdin, disconnects them all, prints {"type":"closed"} and exits.
 * Durations are milliseconds; `startedAt`/`loggedInAt` are epoch milliseconds (comparable across processes).
 */
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'
import ssh2 from 'ssh2'

export interface Options {
  readonly port: number
  readonly user: string
  readonly password?: string
  readonly privateKey?: string
  readonly sessions: number
  readonly mode: 'fetch' | 'idle'
  readonly file: string
  readonly size: number
  readonly sha256: string
  /** This process's first session, counted over all the processes. */
  readonly first: number
  /** Distinct client addresses (127.x.y.z) the sessions are spread over, round robin. */
  readonly addresses: number
}

export interface SessionResult {
  /** Start (connect) → disconnected, ms; null when it failed. */
  readonly totalMs: number | null
  /** Start → logged in (handshake + authentication), ms. */
  readonly loginMs: number | null
  /** Login end, epoch ms (for logins/s). */
  readonly loggedInAt: number | null
  readonly startedAt: number
  /** fetch mode: ms spent logging in, opening the sftp subsystem, listing, reading, disconnecting. */
  readonly phasesMs?: readonly [number, number, number, number, number]
  readonly error: string | null
}

const opts = JSON.parse(process.argv[2] ?? '{}') as Options
const READ = 32 * 1024
/** Milliseconds since the epoch, sub-millisecond: comparable across the client processes. */
const now = (): number => performance.timeOrigin + performance.now()
const IN_FLIGHT = 32

/** The loopback address session `i` connects from: each looks like a user of its own, as many users would. */
function clientAddress(i: number): string {
  const a = (opts.first + i) % opts.addresses
  return `127.${1 + Math.floor(a / 62_500)}.${(Math.floor(a / 250) % 250) + 1}.${(a % 250) + 1}`
}

function connect(i: number, onLogin: (at: number) => void): Promise<{ client: ssh2.Client; sftp: ssh2.SFTPWrapper }> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client()
    // Before the sftp subsystem is open, an error or close fails the session; after, the calls' own callbacks do.
    client.on('error', reject)
    client.once('close', () => reject(new Error('connection closed before the sftp subsystem opened')))
    client.once('ready', () => {
      onLogin(now())
      client.sftp((err, sftp) => (err ? reject(err) : resolve({ client, sftp })))
    })
    client.connect({
      host: '127.0.0.1',
      port: opts.port,
      localAddress: clientAddress(i),
      username: opts.user,
      ...(opts.password !== undefined ? { password: opts.password } : { privateKey: opts.privateKey ?? '' }),
      // A thousand logins at once queue behind each other (scrypt, key exchanges): be patient.
      readyTimeout: 300_000,
      keepaliveInterval: 0,
    })
  })
}

const p = <T>(fn: (cb: (err: Error | null | undefined, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))

async function listAll(sftp: ssh2.SFTPWrapper, path: string): Promise<number> {
  const handle = await p<Buffer>((cb) => sftp.opendir(path, cb))
  let n = 0
  for (;;) {
    const page = await new Promise<ssh2.FileEntry[] | null>((resolve, reject) =>
      sftp.readdir(handle, (err, list) => {
        if (err && (err as { code?: number }).code === ssh2.utils.sftp.STATUS_CODE.EOF) resolve(null)
        else if (err) reject(err)
        else resolve(list)
      }),
    )
    if (page === null || page.length === 0) break
    n += page.length
  }
  await p<void>((cb) => sftp.close(handle, cb))
  return n
}

async function fetchFile(sftp: ssh2.SFTPWrapper): Promise<void> {
  const handle = await p<Buffer>((cb) => sftp.open(opts.file, 'r', cb))
  const out = Buffer.alloc(opts.size)
  let next = 0
  const worker = async () => {
    while (next < opts.size) {
      const at = next
      next += READ
      const len = Math.min(READ, opts.size - at)
      const got = await new Promise<number>((resolve, reject) => sftp.read(handle, out, at, len, at, (err, n) => (err ? reject(err) : resolve(n))))
      if (got !== len) throw new Error(`short read at ${at}: ${got} of ${len} bytes`)
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  await p<void>((cb) => sftp.close(handle, cb))
  if (createHash('sha256').update(out).digest('hex') !== opts.sha256) throw new Error('the file read differs from the file served')
}

function ended(client: ssh2.Client): Promise<void> {
  return new Promise((resolve) => {
    client.once('close', () => resolve())
    client.end()
  })
}

async function fetchSession(i: number): Promise<SessionResult> {
  const startedAt = now()
  let loggedInAt: number | null = null
  try {
    const { client, sftp } = await connect(i, (at) => (loggedInAt = at))
    const opened = now()
    if ((await listAll(sftp, '.')) === 0) throw new Error('the start folder lists nothing')
    const listed = now()
    await fetchFile(sftp)
    const read = now()
    await ended(client)
    const end = now()
    return { totalMs: end - startedAt, loginMs: loggedInAt! - startedAt, loggedInAt, startedAt, phasesMs: [loggedInAt! - startedAt, opened - loggedInAt!, listed - opened, read - listed, end - read], error: null }
  } catch (err) {
    return { totalMs: null, loginMs: loggedInAt === null ? null : loggedInAt - startedAt, loggedInAt, startedAt, error: (err as Error).message }
  }
}

async function main(): Promise<void> {
  if (opts.mode === 'fetch') {
    const sessions = await Promise.all(Array.from({ length: opts.sessions }, (_, i) => fetchSession(i)))
    process.stdout.write(`${JSON.stringify({ type: 'result', sessions })}\n`)
    return
  }
  const open = new Set<ssh2.Client>()
  let closing = false
  let dropped = 0
  const sessions = await Promise.all(
    Array.from({ length: opts.sessions }, async (_, i): Promise<SessionResult> => {
      const startedAt = now()
      let loggedInAt: number | null = null
      try {
        const { client, sftp } = await connect(i, (at) => (loggedInAt = at))
        await p<string>((cb) => sftp.realpath('.', cb))
        // A session the server drops while idle counts as an error.
        client.once('close', () => {
          open.delete(client)
          if (!closing) dropped++
        })
        open.add(client)
        return { totalMs: now() - startedAt, loginMs: loggedInAt! - startedAt, loggedInAt, startedAt, error: null }
      } catch (err) {
        return { totalMs: null, loginMs: null, loggedInAt, startedAt, error: (err as Error).message }
      }
    }),
  )
  process.stdout.write(`${JSON.stringify({ type: 'ready', sessions })}\n`)
  for await (const line of createInterface({ input: process.stdin })) if (line.trim() === 'close') break
  closing = true
  const stillOpen = open.size
  await Promise.all([...open].map(ended))
  process.stdout.write(`${JSON.stringify({ type: 'closed', dropped, stillOpen })}\n`)
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)

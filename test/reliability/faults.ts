/**
 * The backend fault matrix (docs/reliability.md, "Backend faults"): one real filegate
 * whose connection `faulty` reaches a real server through a fault proxy
 * (test/helpers/fault-proxy.ts), and a healthy local connection `ok`. Every door (HTTP
 * API, SFTP, S3 and MCP gateways) is driven through every fault:
 * - the server killed mid-download, mid-upload, mid-zip (HTTP), mid-listing: the proxy
 *   freezes the stream after some bytes (wherever the transfer is) and the server is
 *   stopped with its connections, then started again;
 * - the server stopped (connection refused), then restarted;
 * - no answer: the proxy's blackhole, for new requests and mid-download;
 * - every connection cut.
 * Each time: the request fails within a bound, in its door's shape; a concurrent request
 * on the other connection succeeds; the target keeps its old content; no temporary
 * object stays on the backend; the backend connections (sessions) stay within the
 * pool's size; the next request through the same door works, without restarting filegate.
 *
 * The server's own fault tests in test/drivers (sessions across a restart) are the
 * single-driver versions of these cases.
 */
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.js'
import { serverDir } from '../servers/process.js'
import type { FaultBackend } from './backends.js'
import { type Door, type DoorName, MiB, type Outcome, httpDoor, mcpDoor, s3Door, sftpDoor } from './doors.js'

/** `backend_timeout_seconds` of the filegate under test. */
const TIMEOUT_S = 2
/** No request may take longer than this, whatever the fault: a few times the backend timeout (S3 retries a silent request 3 times), with room for a loaded machine. */
const BOUND_MS = 20_000
/**
 * The most connections to the server that may stay open: one driver serves all four
 * doors (same connection, same root) on the one worker thread, with 4 pooled sessions
 * (S3: keep-alive sockets, which must not pile up either).
 */
const MAX_SESSIONS = 4
const OLD = 'old content'
const BIG = 512 * MiB
const MANY = 600

export type Fault =
  | 'killed mid-download'
  | 'killed mid-upload'
  | 'killed mid-zip'
  | 'killed mid-listing'
  | 'stopped (refused)'
  | 'restarted'
  | 'no answer'
  | 'stalled mid-download'
  | 'connections cut'

/** A case the matrix leaves out, with the reason (reported in docs/reliability.md). */
export type Skips = Partial<Record<Fault, { doors: readonly DoorName[]; why: string }>>

interface Setup {
  readonly backend: FaultBackend
  readonly proxy: FaultProxy
  readonly doors: readonly Door[]
  /** A request on the healthy connection. */
  okRequest(): Promise<Outcome>
}

/**
 * The backend with `start` doing nothing while it runs (a case whose fault never landed
 * heals as well), and `stop` dropping every connection at the proxy too: a connection
 * the server forked in the instant it was killed would survive it, which a machine
 * going down never lets happen.
 */
function once(b: FaultBackend, proxy: FaultProxy): FaultBackend {
  let running = true
  return {
    ...b,
    async stop() {
      running = false
      await b.stop()
      proxy.dropAll()
    },
    async start() {
      if (running) return
      await b.start()
      running = true
    },
  }
}

async function setup(t: Test, server: FaultBackend): Promise<Setup> {
  const proxy = await startFaultProxy(t, server.port)
  const backend = once(server, proxy)
  const disk = serverDir(t, 'faults-ok')
  const { app, url } = await startTestServer(t, {
    sftp: { port: 0 },
    s3: { port: 0 },
    admin_password: ADMIN_PASSWORD,
    backend_timeout_seconds: TIMEOUT_S,
    transfer_buffer_bytes: 2 * MiB,
    connections: [backend.connection(proxy.port), { label: 'ok', type: 'local', path: disk }],
  })
  const admin = api(url, await adminToken(url))
  const user = `fault${randomBytes(3).toString('hex')}`
  const password = `${user}-password`
  let res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: user, password, connection: 'faulty', root: '/' }) })
  if (res.status !== 200) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
  res = await admin('POST', `/admin/api/users/${user}/s3-keys`)
  const k = ((await res.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const session = async (label: string): Promise<string> => {
    const r = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label }) })
    const j = (await r.json()) as { result?: { authorization: string } }
    if (!j.result) throw new Error(`session on ${label}: ${JSON.stringify(j)}`)
    return j.result.authorization
  }
  const token = await session('faulty')
  const ok = httpDoor(url, await session('ok'))
  await backend.put('b/old.txt', OLD)
  await backend.putBig('b/big.bin', BIG)
  await backend.putMany('b/many', MANY)
  const gateway = (name: string) => app.gateways.find((g) => g.name === name)!
  const doors = [
    httpDoor(url, token),
    await sftpDoor(t, { port: gateway('sftp').port!, user, password }),
    s3Door(t, `http://127.0.0.1:${gateway('s3').port}`, { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }),
    await mcpDoor(t, url, token),
  ]
  await ok.put('/hello.txt', 1000)
  return { backend, proxy, doors, okRequest: () => ok.get('/hello.txt') }
}

/** The operation's outcome, or a failed "stuck" one when it takes longer than the bound. */
async function bounded(p: Promise<Outcome>): Promise<Outcome & { ms: number }> {
  const started = Date.now()
  let timer: NodeJS.Timeout | undefined
  const stuck = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve({ ok: false, error: `stuck for ${BOUND_MS} ms`, shaped: false }), BOUND_MS)))
  const out = await Promise.race([p.catch((err: unknown) => ({ ok: false, error: `threw ${String(err)}`, shaped: false })), stuck])
  clearTimeout(timer)
  return { ...out, ms: Date.now() - started }
}

async function waitFor(what: () => Promise<boolean>, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await what()) return true
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** What one case does to its door, and how the fault lands. */
interface Plan {
  /** The operation under fault, reporting its client's bytes to `progress`; null when the door has none (zip: HTTP only). */
  op(d: Door, progress: (bytes: number) => void): (() => Promise<Outcome>) | null
  /**
   * The fault lands as well once the client has moved this many bytes: for transfers
   * that bypass the proxy (FTP's data connections) and gateways that take the whole
   * body before writing it.
   */
  readonly clientBytes?: number
  /** Brings the fault; resolves once it landed. */
  inject(s: Setup): Promise<void>
  /** What follows the fault once it landed (the server going down), awaited before the checks. */
  follow?(s: Setup): Promise<void>
  /** The fault lands while the operation runs (armed before it starts), not before it. */
  readonly midway: boolean
  /** Undoes it: the server back, the proxy passing. */
  heal(s: Setup): Promise<void>
  /** The operation succeeds (the fault was before it, and healed). */
  readonly expectOk?: boolean
  /** The upload target, whose old content must stay. */
  readonly target?: string
}

const restart = async (s: Setup): Promise<void> => {
  s.proxy.mode = 'pass'
  await s.backend.start()
}
const pass = async (s: Setup): Promise<void> => void (s.proxy.mode = 'pass')

/** The proxy freezes the stream after `bytes` in `dir`, then the server goes down with its connections. */
const killAfter = (dir: 'up' | 'down', bytes: number, op: Plan['op'], clientBytes?: number, target?: string): Plan => ({
  op,
  ...(clientBytes ? { clientBytes } : {}),
  midway: true,
  inject: (s) => s.proxy.trip(dir, bytes),
  async follow(s) {
    await s.backend.stop()
    s.proxy.mode = 'pass' // new connections are refused, as with nothing listening
  },
  heal: restart,
  ...(target ? { target } : {}),
})

const PLANS: Record<Fault, Plan> = {
  'killed mid-download': killAfter('down', 256 * 1024, (d, p) => () => d.get('/b/big.bin', p), MiB),
  'killed mid-upload': killAfter('up', 512 * 1024, (d, p) => () => d.put('/b/old.txt', 8 * MiB, p), 2 * MiB, 'b/old.txt'),
  'killed mid-zip': killAfter('down', 256 * 1024, (d, p) => (d.zip ? () => d.zip!('/b/', p) : null), MiB),
  'killed mid-listing': killAfter('down', 8 * 1024, (d) => () => d.ls('/b/many/')),
  'stopped (refused)': { op: (d) => () => d.ls('/b/'), midway: false, inject: (s) => s.backend.stop(), heal: restart },
  // The server went down and came back between two requests: the pooled sessions are dead, the request works.
  restarted: {
    op: (d) => () => d.get('/b/old.txt'),
    midway: false,
    expectOk: true,
    async inject(s) {
      await s.backend.stop()
      await s.backend.start()
    },
    heal: pass,
  },
  'no answer': { op: (d) => () => d.ls('/b/'), midway: false, inject: async (s) => void (s.proxy.mode = 'blackhole'), heal: pass },
  'stalled mid-download': { op: (d) => () => d.get('/b/big.bin'), midway: true, inject: (s) => s.proxy.trip('down', 256 * 1024), heal: pass },
  'connections cut': { op: (d) => () => d.ls('/b/'), midway: false, inject: async (s) => void (s.proxy.mode = 'cut'), heal: pass },
}

export const FAULTS = Object.keys(PLANS) as Fault[]

/** Counts of what the matrix did, for the report. */
export interface Tally {
  cases: number
  assertions: number
}

/**
 * Runs every fault through every door on `makeBackend`'s server; `skips` names the
 * cases that cannot happen on it (said in the test output).
 */
export async function runFaultMatrix(t: Test, makeBackend: (t: Test) => Promise<FaultBackend>, skips: Skips = {}): Promise<Tally> {
  const s = await setup(t, await makeBackend(t))
  const baseline = s.proxy.open()
  /** FILEGATE_FAULTS=<regular expression>: only the cases whose name matches (to rerun one). */
  const only = process.env.FILEGATE_FAULTS ? new RegExp(process.env.FILEGATE_FAULTS) : null
  const tally: Tally = { cases: 0, assertions: 0 }
  for (const fault of FAULTS) {
    const plan = PLANS[fault]
    for (const door of s.doors) {
      let moved = (_bytes: number): void => {}
      const op = plan.op(door, (n) => moved(n))
      if (op === null) continue
      const name = `${s.backend.name} × ${door.name} × ${fault}`
      if (only && !only.test(name)) continue
      if (skips[fault]?.doors.includes(door.name)) {
        t.comment(`${s.backend.name} × ${door.name} × ${fault}: left out (${skips[fault]!.why})`)
        continue
      }
      await t.test(name, async (t) => {
        tally.cases++
        const clientLanded = new Promise<void>((resolve) => {
          moved = (n) => void (plan.clientBytes !== undefined && n >= plan.clientBytes && resolve())
        })
        tally.assertions += await runCase(t, s, door, plan, op, clientLanded, Math.max(baseline, MAX_SESSIONS))
      })
    }
  }
  t.comment(`${s.backend.name}: ${tally.cases} fault cases, ${tally.assertions} assertions`)
  return tally
}

/** One case; answers how many checks it made. */
async function runCase(t: Test, s: Setup, door: Door, plan: Plan, op: () => Promise<Outcome>, clientLanded: Promise<void>, maxOpen: number): Promise<number> {
  let checks = 0
  const check = (ok: boolean, what: string): void => {
    checks++
    t.ok(ok, what)
  }
  const injected = Promise.race([plan.inject(s), clientLanded]).then(() => true)
  if (!plan.midway) await injected
  const result = bounded(op())
  const landed = plan.midway ? await Promise.race([injected, result.then(() => false)]) : true
  s.proxy.cancelTrips()
  const followed = landed ? plan.follow?.(s) : undefined
  // While this request fails, another on the healthy connection goes through.
  const other = await bounded(s.okRequest())
  const out = await result
  await followed
  check(landed, `the fault lands while the request runs${landed ? '' : ` (the request ended first: ${out.error ?? `ok, ${out.count}`})`}`)
  if (plan.expectOk) check(out.ok, `the request works (${out.error ?? 'ok'}, ${out.ms} ms)`)
  else {
    check(!out.ok, `the request fails (${out.ms} ms${out.ok ? `, ok with ${out.count}` : ''})`)
    check(out.shaped === true, `in the door's own shape: ${out.error}`)
  }
  check(out.ms < BOUND_MS, `it ends within ${BOUND_MS} ms (${out.ms} ms)`)
  check(other.ok, `a concurrent request on another connection succeeds (${other.error ?? 'ok'})`)
  await plan.heal(s)
  if (plan.target) {
    const now = await s.backend.read(plan.target)
    check(now !== null && now.toString() === OLD, `the target keeps its old content, on the server (${now === null ? 'absent' : `${now.length} bytes`})`)
  }
  const next = await bounded(door.ls('/b/'))
  check(next.ok, `the next request through the same door works (${next.error ?? 'ok'})`)
  let left: string[] = []
  check(await waitFor(async () => (left = await s.backend.temps()).length === 0), `no temporary object left on the server (${left.join(', ') || 'none'})`)
  check(await waitFor(async () => s.proxy.open() <= maxOpen), `backend sessions within the pool's size (${s.proxy.open()} open, at most ${maxOpen})`)
  return checks
}

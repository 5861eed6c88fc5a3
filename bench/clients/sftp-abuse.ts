/**
 * @module bench/clients/sftp-abuse
 * The attacker of bench/sftp-abuse.ts, run as its own process:
 *
 *   node --import tsx bench/clients/sftp-abuse.ts '<JSON Options>'
 *
 * mode "banners": COUNT connections spread over ADDRESSES loopback addresses
 *   (127.0.2.x), each sending an SSH banner and nothing more, opened as fast as they
 *   are closed, for SECONDS (test/gateways/sftp/preauth.test.ts's attack, at scale);
 * mode "window": logs in, opens FILE, opens a 1 GiB SSH window, stops reading its
 *   socket and sends READS reads of 255 KiB; holds for SECONDS
 *   (test/gateways/sftp/memory.test.ts);
 * mode "handles": rounds of one connection opening up to 30 read handles of the
 *   files f<i>.bin with two reads each in flight, then cut, for SECONDS.
 * Prints one line {"type":"result", ...} and exits.
 */
import { type Socket, connect } from 'node:net'
import { RawSftp } from '../../test/gateways/sftp/raw-sftp.js'

export interface AbuseOptions {
  readonly mode: 'banners' | 'window' | 'handles'
  readonly port: number
  readonly user: string
  readonly password: string
  readonly seconds: number
  readonly count?: number
  readonly addresses?: number
  readonly file?: string
  readonly reads?: number
}

const o = JSON.parse(process.argv[2]!) as AbuseOptions
const login = { port: o.port, user: o.user, password: o.password }
const none = { teardown: () => {} }
const until = Date.now() + o.seconds * 1000

async function banners(): Promise<Record<string, number>> {
  let opened = 0
  let refused = 0
  const open = new Set<Socket>()
  const one = (i: number): void => {
    if (Date.now() >= until) return
    opened++
    const s = connect({ host: '127.0.0.1', port: o.port, localAddress: `127.0.2.${1 + (i % (o.addresses ?? 10))}` })
    let greeted = false
    s.on('error', () => {})
    s.once('data', () => {
      greeted = true
      s.write('SSH-2.0-abuse\r\n')
    })
    open.add(s)
    s.once('close', () => {
      open.delete(s)
      if (!greeted) refused++
      setTimeout(() => one(i), 10) // the flood keeps its count
    })
  }
  for (let i = 0; i < (o.count ?? 2000); i++) one(i)
  let held = 0
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500))
    held = Math.max(held, open.size)
  }
  for (const s of open) s.destroy()
  return { opened, refused, heldPeak: held }
}

async function window(): Promise<Record<string, number>> {
  const c = await RawSftp.open(none, login)
  const h = await c.openRead(o.file!)
  if (!Buffer.isBuffer(h)) throw new Error(`open: ${h.message}`)
  c.openWindow(1024 * 1024 * 1024)
  c.stopReading()
  for (let i = 0; i < (o.reads ?? 1200); i++) void c.read(h, (i * 255 * 1024) % (16 * 1024 * 1024), 255 * 1024)
  await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now())))
  c.cut()
  return { asked: (o.reads ?? 1200) * 255 * 1024 }
}

async function handles(): Promise<Record<string, number>> {
  let rounds = 0
  let opened = 0
  let refused = 0
  while (Date.now() < until) {
    const c = await RawSftp.open(none, login)
    for (let i = 0; i < 30; i++) {
      const h = await c.openRead(`/f${i}.bin`)
      if (!Buffer.isBuffer(h)) {
        refused++
        continue
      }
      opened++
      void c.read(h, 0, 32 * 1024)
      void c.read(h, 512 * 1024, 32 * 1024)
    }
    c.cut()
    rounds++
  }
  return { rounds, opened, refused }
}

const run = { banners, window, handles }[o.mode]
run().then(
  (r) => {
    process.stdout.write(`${JSON.stringify({ type: 'result', ...r })}\n`)
    process.exit(0)
  },
  (err: unknown) => {
    process.stdout.write(`${JSON.stringify({ type: 'error', error: String(err) })}\n`)
    process.exit(1)
  },
)

/**
 * An SFTP client that misbehaves on purpose, over ssh2's client: the `sftp` subsystem
 * taken as a raw channel, packets written by hand, so a test can keep thousands of
 * requests in flight, open a huge SSH window and stop reading the socket, or cut the
 * connection under requests in flight.
 */
import type { Test } from 'tap'
import ssh2, { type ClientChannel } from 'ssh2'
import type { Login } from './clients.js'
const { Client } = ssh2

export const PKT = { INIT: 1, OPEN: 3, CLOSE: 4, READ: 5, STATUS: 101, HANDLE: 102, DATA: 103 } as const

export interface Reply {
  readonly type: number
  readonly id: number
  readonly body: Buffer
}

export class RawSftp {
  readonly client: InstanceType<typeof Client>
  readonly channel: ClientChannel
  #buf: Buffer = Buffer.alloc(0)
  #nextId = 1
  readonly #waiting = new Map<number, (r: Reply) => void>()
  /** Replies received, by type. */
  readonly received = new Map<number, number>()

  private constructor(client: InstanceType<typeof Client>, channel: ClientChannel) {
    this.client = client
    this.channel = channel
    channel.on('data', (chunk: Buffer) => this.#onData(chunk))
  }

  static async open(t: Pick<Test, 'teardown'>, l: Login): Promise<RawSftp> {
    const client = new Client()
    t.teardown(() => client.end())
    client.on('error', () => {})
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve).once('error', reject)
      client.connect({ host: '127.0.0.1', port: l.port, username: l.user, password: l.password, readyTimeout: 20_000 })
    })
    const channel = await new Promise<ClientChannel>((resolve, reject) => client.subsys('sftp', (err, ch) => (err ? reject(err) : resolve(ch))))
    const s = new RawSftp(client, channel)
    const init = Buffer.alloc(9)
    init.writeUInt32BE(5, 0)
    init[4] = PKT.INIT
    init.writeUInt32BE(3, 5)
    channel.write(init)
    await s.#reply(0) // VERSION carries no request id: taken as id 0
    return s
  }

  /** Opens `path` for reading: its handle, or the STATUS reply's message. */
  async openRead(path: string): Promise<Buffer | { status: number; message: string }> {
    const r = await this.request(PKT.OPEN, [str(path), u32(1), u32(0)])
    if (r.type === PKT.HANDLE) return r.body.subarray(4, 4 + r.body.readUInt32BE(0))
    return statusOf(r)
  }

  /** Sends a request; resolves with its reply. */
  request(type: number, fields: readonly Buffer[]): Promise<Reply> {
    const id = this.#nextId++
    const body = Buffer.concat(fields)
    const head = Buffer.alloc(9)
    head.writeUInt32BE(5 + body.length, 0)
    head[4] = type
    head.writeUInt32BE(id, 5)
    this.channel.write(Buffer.concat([head, body]))
    return this.#reply(id)
  }

  read(handle: Buffer, offset: number, length: number): Promise<Reply> {
    const off = Buffer.alloc(8)
    off.writeBigUInt64BE(BigInt(offset))
    return this.request(PKT.READ, [bytes(handle), off, u32(length)])
  }

  /**
   * Opens the server's SSH window of this channel wide (the client says it can take
   * `amount` more bytes), whatever it really reads.
   */
  openWindow(amount: number): void {
    const c = this.client as unknown as { _protocol: { channelWindowAdjust(id: number, n: number): void } }
    c._protocol.channelWindowAdjust((this.channel as unknown as { outgoing: { id: number } }).outgoing.id, amount)
  }

  /** Stops reading the TCP socket: what the server sends piles up on its side. */
  stopReading(): void {
    ;(this.client as unknown as { _sock: { pause(): void } })._sock.pause()
  }

  /** Cuts the TCP connection (no SSH goodbye). */
  cut(): void {
    ;(this.client as unknown as { _sock: { destroy(): void } })._sock.destroy()
  }

  #reply(id: number): Promise<Reply> {
    return new Promise((resolve) => this.#waiting.set(id, resolve))
  }

  #onData(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk])
    while (this.#buf.length >= 4) {
      const len = this.#buf.readUInt32BE(0)
      if (this.#buf.length < 4 + len) return
      const p = this.#buf.subarray(4, 4 + len)
      this.#buf = this.#buf.subarray(4 + len)
      const type = p[0]!
      const id = type === 2 ? 0 : p.readUInt32BE(1) // VERSION (2) has no id
      this.received.set(type, (this.received.get(type) ?? 0) + 1)
      const w = this.#waiting.get(id)
      this.#waiting.delete(id)
      w?.({ type, id, body: Buffer.from(p.subarray(type === 2 ? 1 : 5)) })
    }
  }
}

export function statusOf(r: Reply): { status: number; message: string } {
  if (r.type !== PKT.STATUS) return { status: -r.type, message: '' }
  const n = r.body.readUInt32BE(4)
  return { status: r.body.readUInt32BE(0), message: r.body.subarray(8, 8 + n).toString() }
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const bytes = (b: Buffer): Buffer => Buffer.concat([u32(b.length), b])
const str = (s: string): Buffer => bytes(Buffer.from(s))

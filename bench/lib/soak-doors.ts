/**
 * @module bench/lib/soak-doors
 * The clients of the soak (bench/soak.ts), one per door of one filegate, all over the
 * same bucket folder of a local connection, and the fixed mix of operations they run:
 * - HTTP API: node:http with a keep-alive agent of its own (closed at the end, so the
 *   server's sockets can be counted), a session token of the local connection;
 * - SFTP gateway: ssh2 clients (key login), a few long-lived sessions, plus one
 *   operation that logs in, lists and disconnects (login churn);
 * - S3 gateway: the same node:http agent, requests signed by @smithy/signature-v4
 *   (UNSIGNED-PAYLOAD), ListObjectsV2 / GET / PUT / HEAD.
 * Every operation checks what it got (status, size, bytes of downloads, size of
 * uploads on disk): a wrong answer is an error, as a failed request is.
 */
import { Agent, request } from 'node:http'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { SignatureV4 } from '@smithy/signature-v4'
import ssh2 from 'ssh2'
import { Sha256 } from '../../gateways/s3/auth/sigv4.js'

/** The bucket (a folder at the top of the gateway user's root, and of the HTTP session's). */
export const BUCKET = 'soak'
/** Files the listings see. */
export const LIST_FILES = 200
/** Upload targets rotate over this many names per operation, so the disk does not grow. */
const UPLOAD_NAMES = 16

export interface Payloads {
  /** 4 KiB */
  readonly small: Buffer
  /** 1 MiB */
  readonly big: Buffer
}

export interface DoorConfig {
  /** The folder the local connection serves (the gateway user's and the session's root). */
  readonly folder: string
  readonly httpUrl: string
  readonly token: string
  readonly sftpPort: number
  readonly sftpUser: string
  readonly privateKey: string
  readonly s3Port: number
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly payloads: Payloads
  /** Long-lived SFTP sessions the SFTP operations share. */
  readonly sftpSessions: number
}

export interface Op {
  readonly name: string
  /** Body bytes moved when it succeeds (both directions). */
  readonly bytes: number
  run(): Promise<void>
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Buffer
}

/** One request on `agent`; the whole answer in memory (the mix moves 1 MiB at most). */
function call(agent: Agent, url: string, method: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    // A failure says whether the connection was a reused one, and after how long: a reset
    // on a reused connection at once is the server closing it while it was idle.
    const fail = (err: Error) => reject(new Error(`${err.message} (${req.reusedSocket ? 'reused' : 'new'} connection, after ${Math.round(performance.now() - t0)} ms)`))
    const req = request(url, { method, agent, headers: body ? { ...headers, 'content-length': String(body.length) } : headers, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.once('error', fail)
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    // A reused connection keeps the agent's idle timeout (Node's agent does not reset it): set ours.
    req.once('socket', (socket) => socket.setTimeout(60_000))
    req.once('timeout', () => req.destroy(new Error(`${method} ${url}: no answer within 60 s`)))
    req.once('error', fail)
    req.end(body)
  })
}

function expect(ok: boolean, what: string, a?: Answer): void {
  if (!ok) throw new Error(`${what}${a ? `: HTTP ${a.status} ${a.body.subarray(0, 200).toString()}` : ''}`)
}

const sameBytes = (got: Buffer, want: Buffer, what: string) => expect(got.equals(want), `${what}: got ${got.length} bytes, not the ${want.length} expected`)

/** The size an upload left on disk (after the request answered, the target is complete). */
function landed(folder: string, key: string, size: number, what: string): void {
  const got = statSync(join(folder, key), { throwIfNoEntry: false })?.size
  expect(got === size, `${what}: ${key} has ${got ?? 'no'} bytes on disk, not ${size}`)
}

type Sftp = ssh2.SFTPWrapper

function sftpConnect(cfg: DoorConfig): Promise<{ client: ssh2.Client; sftp: Sftp }> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client()
    const fail = (err: Error) => {
      client.end()
      reject(err)
    }
    client.once('error', fail)
    client.once('ready', () => client.sftp((err, sftp) => (err ? fail(err) : resolve({ client, sftp }))))
    client.connect({ host: '127.0.0.1', port: cfg.sftpPort, username: cfg.sftpUser, privateKey: cfg.privateKey, readyTimeout: 60_000, keepaliveInterval: 0 })
  })
}

const sftpCall = <T>(fn: (cb: (err: Error | null | undefined, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))

/** The three doors' clients; `close()` ends every connection they hold. */
export class Doors {
  readonly #cfg: DoorConfig
  /**
   * Node's agent follows the server's `Keep-Alive: timeout=N` (retiring an idle
   * connection a second before) only when it has a timeout of its own: without one it
   * keeps idle connections until the server closes them, and a request sent on one at
   * that moment is reset.
   */
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 64, timeout: 60_000 })
  readonly #signer: SignatureV4
  #sessions: { client: ssh2.Client; sftp: Sftp }[] = []
  #next = 0
  readonly #uploads = new Map<string, number>()

  constructor(cfg: DoorConfig) {
    this.#cfg = cfg
    this.#signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey }, sha256: Sha256, uriEscapePath: false })
  }

  /** Opens the long-lived SFTP sessions. */
  async open(): Promise<void> {
    this.#sessions = await Promise.all(Array.from({ length: this.#cfg.sftpSessions }, () => sftpConnect(this.#cfg)))
    for (const s of this.#sessions) {
      // A session that drops is an error of the operations that use it; keep the process alive meanwhile.
      s.client.on('error', () => {})
    }
  }

  /** Ends every connection of every door (so the server's descriptors can be counted). */
  async close(): Promise<void> {
    const ended = this.#sessions.map((s) => new Promise<void>((r) => (s.client.once('close', () => r()), s.client.end())))
    this.#sessions = []
    this.#agent.destroy()
    await Promise.all(ended)
  }

  #sftp(): Sftp {
    const s = this.#sessions[this.#next++ % this.#sessions.length]
    if (!s) throw new Error('no SFTP session open')
    return s.sftp
  }

  #uploadName(op: string): string {
    const n = this.#uploads.get(op) ?? 0
    this.#uploads.set(op, n + 1)
    return `${BUCKET}/up/${op}-${n % UPLOAD_NAMES}.bin`
  }

  #http(method: string, path: string, body?: Buffer): Promise<Answer> {
    return call(this.#agent, `${this.#cfg.httpUrl}${path}`, method, { authorization: `Bearer ${this.#cfg.token}` }, body)
  }

  async #s3(method: string, key: string, query: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
    const port = this.#cfg.s3Port
    const path = `/${key}`
    const headers: Record<string, string> = { host: `127.0.0.1:${port}`, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...(body ? { 'content-length': String(body.length) } : {}) }
    const signed = await this.#signer.sign({ method, protocol: 'http:', hostname: '127.0.0.1', port, path, query, headers })
    const qs = new URLSearchParams(query).toString()
    return call(this.#agent, `http://127.0.0.1:${port}${path}${qs ? `?${qs}` : ''}`, method, signed.headers as Record<string, string>, body)
  }

  /** The fixed mix, one cycle: every client walks it in this order (from its own offset). */
  mix(): Op[] {
    const { small, big } = this.#cfg.payloads
    const folder = this.#cfg.folder
    const q = (p: string) => encodeURIComponent(p)
    const httpLs: Op = {
      name: 'http ls',
      bytes: 0,
      run: async () => {
        const a = await this.#http('GET', `/api/files/ls?path=${q(`/${BUCKET}/list/`)}`)
        expect(a.status === 200 && (JSON.parse(a.body.toString()) as { results: unknown[] }).results.length === LIST_FILES, 'http ls', a)
      },
    }
    const httpCatSmall: Op = {
      name: 'http cat 4 KiB',
      bytes: small.length,
      run: async () => {
        const a = await this.#http('GET', `/api/files/cat?path=${q(`/${BUCKET}/small.bin`)}`)
        expect(a.status === 200, 'http cat', a)
        sameBytes(a.body, small, 'http cat 4 KiB')
      },
    }
    const ops: Op[] = [
      httpLs,
      httpCatSmall,
      {
        name: 'http head',
        bytes: 0,
        run: async () => {
          const a = await this.#http('HEAD', `/api/files/cat?path=${q(`/${BUCKET}/big.bin`)}`)
          expect(a.status === 200 && a.headers['content-length'] === String(big.length), 'http head', a)
        },
      },
      {
        name: 'http upload 4 KiB',
        bytes: small.length,
        run: async () => {
          const key = this.#uploadName('http-small')
          const a = await this.#http('POST', `/api/files/cat?path=${q(`/${key}`)}`, small)
          expect(a.status === 200, 'http upload 4 KiB', a)
          landed(folder, key, small.length, 'http upload 4 KiB')
        },
      },
      {
        name: 'http download 1 MiB',
        bytes: big.length,
        run: async () => {
          const a = await this.#http('GET', `/api/files/cat?path=${q(`/${BUCKET}/big.bin`)}`)
          expect(a.status === 200, 'http download', a)
          sameBytes(a.body, big, 'http download 1 MiB')
        },
      },
      {
        name: 'http upload 1 MiB',
        bytes: big.length,
        run: async () => {
          const key = this.#uploadName('http-big')
          const a = await this.#http('POST', `/api/files/cat?path=${q(`/${key}`)}`, big)
          expect(a.status === 200, 'http upload 1 MiB', a)
          landed(folder, key, big.length, 'http upload 1 MiB')
        },
      },
      {
        name: 'sftp ls',
        bytes: 0,
        run: async () => {
          const sftp = this.#sftp()
          const entries = await sftpCall<ssh2.FileEntry[]>((cb) => sftp.readdir(`/${BUCKET}/list`, cb))
          expect(entries.length === LIST_FILES, `sftp ls: ${entries.length} entries, not ${LIST_FILES}`)
        },
      },
      {
        name: 'sftp stat',
        bytes: 0,
        run: async () => {
          const sftp = this.#sftp()
          const st = await sftpCall<ssh2.Stats>((cb) => sftp.stat(`/${BUCKET}/big.bin`, cb))
          expect(st.size === big.length, `sftp stat: size ${st.size}`)
        },
      },
      {
        name: 'sftp get 1 MiB',
        bytes: big.length,
        run: async () => {
          const sftp = this.#sftp()
          sameBytes(await sftpCall<Buffer>((cb) => sftp.readFile(`/${BUCKET}/big.bin`, cb)), big, 'sftp get 1 MiB')
        },
      },
      {
        name: 'sftp put 1 MiB',
        bytes: big.length,
        run: async () => {
          const sftp = this.#sftp()
          const key = this.#uploadName('sftp-big')
          await sftpCall<void>((cb) => sftp.writeFile(`/${key}`, big, (err) => cb(err, undefined)))
          landed(folder, key, big.length, 'sftp put 1 MiB')
        },
      },
      {
        name: 'sftp login+ls',
        bytes: 0,
        run: async () => {
          const { client, sftp } = await sftpConnect(this.#cfg)
          try {
            const entries = await sftpCall<ssh2.FileEntry[]>((cb) => sftp.readdir(`/${BUCKET}`, cb))
            expect(entries.length > 0, 'sftp login+ls: empty listing')
          } finally {
            await new Promise<void>((r) => (client.once('close', () => r()), client.end()))
          }
        },
      },
      {
        name: 's3 list',
        bytes: 0,
        run: async () => {
          const a = await this.#s3('GET', BUCKET, { 'list-type': '2', prefix: 'list/', 'max-keys': '1000' })
          expect(a.status === 200 && a.body.toString().split('<Contents>').length - 1 === LIST_FILES, 's3 list', a)
        },
      },
      {
        name: 's3 get 4 KiB',
        bytes: small.length,
        run: async () => {
          const a = await this.#s3('GET', `${BUCKET}/small.bin`)
          expect(a.status === 200, 's3 get', a)
          sameBytes(a.body, small, 's3 get 4 KiB')
        },
      },
      {
        name: 's3 get 1 MiB',
        bytes: big.length,
        run: async () => {
          const a = await this.#s3('GET', `${BUCKET}/big.bin`)
          expect(a.status === 200, 's3 get', a)
          sameBytes(a.body, big, 's3 get 1 MiB')
        },
      },
      {
        name: 's3 put 4 KiB',
        bytes: small.length,
        run: async () => {
          const key = this.#uploadName('s3-small')
          const a = await this.#s3('PUT', key, {}, small)
          expect(a.status === 200, 's3 put 4 KiB', a)
          landed(folder, key, small.length, 's3 put 4 KiB')
        },
      },
      {
        name: 's3 put 1 MiB',
        bytes: big.length,
        run: async () => {
          const key = this.#uploadName('s3-big')
          const a = await this.#s3('PUT', key, {}, big)
          expect(a.status === 200, 's3 put 1 MiB', a)
          landed(folder, key, big.length, 's3 put 1 MiB')
        },
      },
      {
        name: 's3 head',
        bytes: 0,
        run: async () => {
          const a = await this.#s3('HEAD', `${BUCKET}/big.bin`)
          expect(a.status === 200 && a.headers['content-length'] === String(big.length), 's3 head', a)
        },
      },
      httpLs,
      httpCatSmall,
    ]
    return ops
  }
}

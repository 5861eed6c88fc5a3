/**
 * The four doors of the fault matrix, each driven by a real client of its protocol:
 * fetch (HTTP API), ssh2 (SFTP gateway), the AWS SDK (S3 gateway), the MCP SDK (MCP
 * gateway). Every operation answers an `Outcome`: whether it succeeded, and when it
 * failed, the error as the client saw it and whether that is the door's own error shape
 * (an HTTP error JSON with a 5xx status or a cut transfer, an SFTP status, an S3 error
 * code with a 5xx status or a cut body, an MCP tool error `CODE: message`).
 *
 * Paths are the user's: `/b/<key>` — `b` is the folder at the top of the root, which is
 * the bucket on the S3 door.
 */
import { Readable } from 'node:stream'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import type { SFTPWrapper } from 'ssh2'
import type { Test } from 'tap'
import { connect } from '../gateways/mcp/client.js'
import { ssh2Sftp } from '../gateways/sftp/clients.js'
import { s3Client } from '../helpers/s3-client.js'

export interface Outcome {
  readonly ok: boolean
  /** What the client saw when it failed. */
  readonly error?: string
  /** The failure is in the door's own shape (not an internal error, not a hang). */
  readonly shaped?: boolean
  /** Entries listed, bytes read. */
  readonly count?: number
}

export type DoorName = 'http' | 'sftp' | 's3' | 'mcp'

export interface Door {
  readonly name: DoorName
  /** Reads a file to its end; `progress` is called as bytes arrive. */
  get(path: string, progress?: (bytes: number) => void): Promise<Outcome>
  /** Writes `size` random-ish bytes; `progress` is called as bytes go out. */
  put(path: string, size: number, progress?: (bytes: number) => void): Promise<Outcome>
  ls(path: string): Promise<Outcome>
  /** HTTP only: a zip of the folder. */
  zip?(path: string, progress?: (bytes: number) => void): Promise<Outcome>
}

export const MiB = 1024 * 1024
const failed = (error: string, shaped: boolean): Outcome => ({ ok: false, error, shaped })

/** A body of `size` bytes in 256 KiB chunks, reporting what went out. */
function* chunks(size: number, progress?: (bytes: number) => void): Generator<Buffer> {
  const chunk = Buffer.alloc(256 * 1024, 'filegate ')
  for (let sent = 0; sent < size; sent += chunk.length) {
    progress?.(sent)
    yield sent + chunk.length <= size ? chunk : chunk.subarray(0, size - sent)
  }
}

// HTTP ------------------------------------------------------------------------

async function httpFailure(res: Response): Promise<Outcome> {
  const body = (await res.json().catch(() => null)) as { status?: string; code?: string } | null
  return failed(`${res.status} ${body?.code ?? '(no JSON error)'}`, res.status >= 500 && body?.status === 'error' && typeof body.code === 'string' && body.code !== 'INTERNAL')
}

/** Reads a 200 answer's body: a transfer cut after its head is the HTTP shape of a failure mid-stream. */
async function httpBody(res: Response, progress?: (bytes: number) => void): Promise<Outcome> {
  if (res.status !== 200) return httpFailure(res)
  let n = 0
  try {
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) {
      n += c.length
      progress?.(n)
    }
  } catch {
    return failed(`cut after ${n} bytes`, true)
  }
  return { ok: true, count: n }
}

export function httpDoor(url: string, token: string): Door {
  const once = (method: string, path: string, query: Record<string, string>, init: RequestInit): Promise<Response> =>
    fetch(`${url}${path}?${new URLSearchParams(query)}`, { ...init, method, headers: { authorization: `Bearer ${token}` } }).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
      throw Object.assign(new Error(`${err.message} (${err.cause?.code ?? ''} ${err.cause?.message ?? ''}) ${method} ${path}`), { code: err.cause?.code })
    })
  // A GET sent on a kept-alive connection just as the server closes it for idleness is
  // reset before any answer (fetch keeps no retry of its own); HTTP clients send such an
  // idempotent request again on a new connection (RFC 9112, 9.3.1). Only that: a reset
  // again, or any answer, is the outcome.
  const call = async (method: string, path: string, query: Record<string, string>, init: RequestInit = {}): Promise<Response> => {
    try {
      return await once(method, path, query, init)
    } catch (err) {
      const code = (err as { code?: string }).code
      if (method !== 'GET' || (code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET')) throw err
      return once(method, path, query, init)
    }
  }
  return {
    name: 'http',
    get: async (path, progress) => httpBody(await call('GET', '/api/files/cat', { path }), progress),
    zip: async (path, progress) => httpBody(await call('GET', '/api/files/zip', { path }), progress),
    async put(path, size, progress) {
      const res = await call('POST', '/api/files/cat', { path }, { body: Readable.toWeb(Readable.from(chunks(size, progress))) as ReadableStream, duplex: 'half' } as RequestInit).catch(() => null)
      if (res === null) return failed('connection cut', true)
      if (res.status === 200) return void (await res.body?.cancel()), { ok: true }
      return httpFailure(res)
    },
    async ls(path) {
      const res = await call('GET', '/api/files/ls', { path })
      if (res.status !== 200) return httpFailure(res)
      return { ok: true, count: ((await res.json()) as { results: unknown[] }).results.length }
    },
  }
}

// SFTP ------------------------------------------------------------------------

const sftpFailure = (err: unknown): Outcome => {
  const e = err as { code?: unknown; message?: string }
  // An SFTP status answer (numeric code); anything else (a closed channel) is not the protocol's shape.
  return failed(`status ${String(e.code)}: ${e.message}`, typeof e.code === 'number' && e.code > 0)
}

const sftpCall = <T>(fn: (cb: (err: Error | null | undefined, v: T) => void) => void): Promise<T> =>
  new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))

export async function sftpDoor(t: Test, login: { port: number; user: string; password: string }): Promise<Door> {
  const { sftp } = await ssh2Sftp(t, login)
  const s: SFTPWrapper = sftp
  return {
    name: 'sftp',
    async get(path, progress) {
      let n = 0
      try {
        const h = await sftpCall<Buffer>((cb) => s.open(path, 'r', cb))
        const buf = Buffer.alloc(256 * 1024)
        for (;;) {
          const got = await new Promise<number>((resolve, reject) => s.read(h, buf, 0, buf.length, n, (err, bytes) => (err ? reject(err) : resolve(bytes))))
          if (got === 0) break
          n += got
          progress?.(n)
        }
        await sftpCall<void>((cb) => s.close(h, (err) => cb(err, undefined)))
      } catch (err) {
        // ssh2 answers the end of a file as EOF (status 1): not a failure.
        if ((err as { code?: unknown }).code !== 1) return sftpFailure(err)
      }
      return { ok: true, count: n }
    },
    async put(path, size, progress) {
      try {
        const h = await sftpCall<Buffer>((cb) => s.open(path, 'w', cb))
        let at = 0
        for (const c of chunks(size, progress)) {
          await sftpCall((cb) => s.write(h, c, 0, c.length, at, (err) => cb(err, undefined)))
          at += c.length
        }
        await sftpCall<void>((cb) => s.close(h, (err) => cb(err, undefined)))
        return { ok: true }
      } catch (err) {
        return sftpFailure(err)
      }
    },
    async ls(path) {
      try {
        return { ok: true, count: (await sftpCall<unknown[]>((cb) => s.readdir(path, cb))).length }
      } catch (err) {
        return sftpFailure(err)
      }
    },
  }
}

// S3 --------------------------------------------------------------------------

const s3Failure = (err: unknown): Outcome => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
  const status = e.$metadata?.httpStatusCode ?? 0
  return failed(`${status} ${e.name}: ${(err as Error).message}`, status >= 500 && typeof e.name === 'string' && e.name !== 'InternalError')
}

/** `/b/<key>` → bucket `b`, key `<key>`. */
function bucketKey(path: string): { Bucket: string; Key: string } {
  const [, bucket, ...rest] = path.split('/')
  return { Bucket: bucket!, Key: rest.join('/') }
}

export function s3Door(t: Test, endpoint: string, key: { accessKeyId: string; secretAccessKey: string }): Door {
  const c = s3Client(t, endpoint, key, { maxAttempts: 1, keepAlive: false }) // each fault is seen once, as it happened
  return {
    name: 's3',
    async get(path, progress) {
      let body: AsyncIterable<Uint8Array>
      try {
        body = (await c.send(new GetObjectCommand(bucketKey(path)))).Body as unknown as AsyncIterable<Uint8Array>
      } catch (err) {
        return s3Failure(err)
      }
      let n = 0
      try {
        for await (const chunk of body) {
          n += chunk.length
          progress?.(n)
        }
      } catch {
        return failed(`cut after ${n} bytes`, true)
      }
      return { ok: true, count: n }
    },
    async put(path, size, progress) {
      try {
        await c.send(new PutObjectCommand({ ...bucketKey(path), Body: Readable.from(chunks(size, progress)), ContentLength: size }))
        return { ok: true }
      } catch (err) {
        const e = err as { $metadata?: { httpStatusCode?: number } }
        // The gateway may answer before the body is all sent, or the connection is cut under it.
        if (e.$metadata?.httpStatusCode === undefined) return failed(`connection cut (${(err as Error).message})`, true)
        return s3Failure(err)
      }
    },
    async ls(path) {
      const { Bucket, Key } = bucketKey(path)
      try {
        const r = await c.send(new ListObjectsV2Command({ Bucket, Prefix: Key }))
        return { ok: true, count: (r.Contents ?? []).length + (r.CommonPrefixes ?? []).length }
      } catch (err) {
        return s3Failure(err)
      }
    },
  }
}

// MCP -------------------------------------------------------------------------

export async function mcpDoor(t: Test, url: string, token: string): Promise<Door> {
  const mcp = await connect(t, url, token, 'streamable')
  const tool = async (name: string, args: Record<string, unknown>): Promise<Outcome> => {
    try {
      const r = await mcp.call(name, args)
      const text = r.content[0]?.type === 'text' ? r.content[0].text : ''
      if (r.isError) return failed(text.slice(0, 200), /^[A-Z_]+: /.test(text) && !text.startsWith('INTERNAL'))
      return { ok: true, count: text.length }
    } catch (err) {
      return failed(`JSON-RPC: ${(err as Error).message}`, false)
    }
  }
  return {
    name: 'mcp',
    get: (path) => tool('cat', { path, encoding: 'base64' }),
    // A tool call's body is at most 4 MiB (the MCP endpoint's limit): 2 MiB of content, base64.
    put: (path, size) => tool('write', { path, content: Buffer.alloc(Math.min(size, 2 * MiB), 'filegate ').toString('base64'), encoding: 'base64' }),
    ls: (path) => tool('ls', { path }),
  }
}


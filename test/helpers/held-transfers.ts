/**
 * Transfers a test holds open, through each door, to do something to the server while
 * they run (kill a worker thread, send SIGTERM) and then see how each one ends: an
 * upload whose body the test sends chunk by chunk, a download the test reads when told.
 */
import { type IncomingMessage, request } from 'node:http'
import { SignatureV4 } from '@smithy/signature-v4'
import type { SFTPWrapper } from 'ssh2'
import { Sha256 } from '../../gateways/s3/auth/sigv4.js'

/** How a held transfer ended: `ok` with what the server answered or sent, or the error the client saw. */
export interface Ended {
  readonly ok: boolean
  /** HTTP status (HTTP and S3), when there was an answer. */
  readonly status?: number
  /** The answer's body, or a download's bytes. */
  readonly body?: Buffer
  readonly error?: string
}

export interface HeldUpload {
  /** Sends one more chunk. */
  push(chunk: Uint8Array): Promise<void>
  /** Sends the end of the body; resolves once the transfer ended. */
  end(): Promise<Ended>
  /** Settles when the transfer ends, however (a server that cuts it early included). */
  readonly ended: Promise<Ended>
}

export interface HeldDownload {
  /** Reads the rest; resolves once the transfer ended. */
  finish(): Promise<Ended>
}

/** POST /api/files/cat with a streamed (chunked) body. */
export function httpUpload(url: string, token: string, path: string): HeldUpload {
  let ctrl!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctrl = c) })
  const ended: Promise<Ended> = fetch(`${url}/api/files/cat?path=${encodeURIComponent(path)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body,
    duplex: 'half',
  } as RequestInit).then(
    async (res) => ({ ok: res.status === 200, status: res.status, body: Buffer.from(await res.arrayBuffer()) }),
    (err: Error) => ({ ok: false, error: String(err.cause ?? err) }),
  )
  return {
    push: async (chunk) => {
      try {
        ctrl.enqueue(chunk)
      } catch {
        // The request is over already: `ended` tells how.
      }
    },
    end: async () => {
      try {
        ctrl.close()
      } catch {
        // Over already.
      }
      return ended
    },
    ended,
  }
}

/** GET /api/files/cat (or `zip`), its first bytes read; the rest when `finish` is called. */
export async function httpDownload(url: string, token: string, path: string, endpoint: 'cat' | 'zip' = 'cat'): Promise<HeldDownload> {
  const res = await fetch(`${url}/api/files/${endpoint}?path=${encodeURIComponent(path)}`, { headers: { authorization: `Bearer ${token}` } })
  const reader = res.body!.getReader()
  const chunks: Uint8Array[] = []
  const first = await reader.read()
  if (!first.done) chunks.push(first.value)
  return {
    finish: async () => {
      try {
        for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value)
        return { ok: res.status === 200, status: res.status, body: Buffer.concat(chunks) }
      } catch (err) {
        return { ok: false, status: res.status, error: String((err as Error).cause ?? err) }
      }
    },
  }
}

/** An SFTP upload through ssh2's write stream (open, writes, close). */
export function sftpUpload(sftp: SFTPWrapper, path: string): HeldUpload {
  const ws = sftp.createWriteStream(path)
  const ended = new Promise<Ended>((resolve) => {
    ws.once('error', (err: Error) => resolve({ ok: false, error: err.message }))
    ws.once('close', () => resolve({ ok: true }))
    // A server that goes away under a pending write: ssh2 tells only the session.
    sftp.once('close', () => resolve({ ok: false, error: 'the SFTP session closed' }))
  })
  return {
    push: (chunk) => Promise.race([new Promise<void>((resolve) => (ws.write(chunk) ? resolve() : ws.once('drain', resolve))), ended.then(() => {})]),
    end: async () => {
      ws.end()
      return ended
    },
    ended,
  }
}

/** An SFTP download through ssh2's read stream, paused after its first chunk. */
export async function sftpDownload(sftp: SFTPWrapper, path: string): Promise<HeldDownload> {
  const rs = sftp.createReadStream(path, { highWaterMark: 64 * 1024 })
  const chunks: Buffer[] = []
  const ended = new Promise<Ended>((resolve) => {
    rs.once('error', (err: Error) => resolve({ ok: false, error: err.message }))
    rs.once('end', () => resolve({ ok: true, body: Buffer.concat(chunks) }))
    sftp.once('close', () => resolve({ ok: false, error: 'the SFTP session closed' }))
  })
  await new Promise<void>((resolve) => {
    rs.once('data', (c: Buffer) => {
      chunks.push(c)
      rs.pause()
      resolve()
    })
    void ended.then(() => resolve())
  })
  return {
    finish: async () => {
      rs.on('data', (c: Buffer) => chunks.push(c))
      rs.resume()
      return ended
    },
  }
}

export interface S3Key {
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

/** An S3 GetObject (of `range`, e.g. `bytes=100-`, when given), its first bytes read; the rest when `finish` is called. */
export async function s3Get(endpoint: string, key: S3Key, path: string, range?: string): Promise<HeldDownload> {
  const u = new URL(endpoint)
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  const headers: Record<string, string> = { host: u.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...(range ? { range } : {}) }
  const signed = await signer.sign({ method: 'GET', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path, query: {}, headers })
  const want = range ? 206 : 200
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ host: u.hostname, port: Number(u.port), method: 'GET', path, headers: signed.headers }, resolve)
    req.once('error', reject)
    req.end()
  })
  const chunks: Buffer[] = []
  const ended = new Promise<Ended>((resolve) => {
    res.once('end', () => resolve({ ok: res.statusCode === want && res.complete, status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
    res.once('error', (err) => resolve({ ok: false, status: res.statusCode ?? 0, error: err.message }))
    res.once('aborted', () => resolve({ ok: false, status: res.statusCode ?? 0, error: 'aborted' }))
  })
  await new Promise<void>((resolve) => {
    res.once('data', (c: Buffer) => {
      chunks.push(c)
      res.pause()
      resolve()
    })
    void ended.then(() => resolve())
  })
  return {
    finish: async () => {
      res.on('data', (c: Buffer) => chunks.push(c))
      res.resume()
      return ended
    },
  }
}

/** An S3 PutObject of `length` bytes (UNSIGNED-PAYLOAD), its body sent chunk by chunk. */
export async function s3Put(endpoint: string, key: S3Key, path: string, length: number): Promise<HeldUpload> {
  const u = new URL(endpoint)
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  const signed = await signer.sign({
    method: 'PUT',
    protocol: 'http:',
    hostname: u.hostname,
    port: Number(u.port),
    path,
    query: {},
    headers: { host: u.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'content-length': String(length) },
  })
  const req = request({ host: u.hostname, port: Number(u.port), method: 'PUT', path, headers: signed.headers })
  const ended = new Promise<Ended>((resolve) => {
    req.once('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.once('end', () => resolve({ ok: res.statusCode === 200, status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
      res.once('error', (err) => resolve({ ok: false, status: res.statusCode ?? 0, error: err.message }))
    })
    req.once('error', (err) => resolve({ ok: false, error: err.message }))
  })
  req.flushHeaders()
  return {
    push: (chunk) => Promise.race([new Promise<void>((resolve) => (req.write(chunk) ? resolve() : req.once('drain', resolve))), ended.then(() => {})]),
    end: async () => {
      req.end()
      return ended
    },
    ended,
  }
}

/**
 * Test helpers for transfers as a client sees them: the entry names of a zip, a
 * download read until it ends or is cut, an upload driven by hand, and an upload whose
 * server goes away.
 */
import { randomBytes } from 'node:crypto'
import { type IncomingMessage, request } from 'node:http'
import yauzl from 'yauzl'

const MiB = 1024 * 1024

/** The entry names of a zip archive, read by yauzl (an independent reader). */
export function zipEntryNames(buf: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err)
      const names: string[] = []
      zip.on('entry', (e: yauzl.Entry) => {
        names.push(e.fileName)
        zip.readEntry()
      })
      zip.on('end', () => resolve(names))
      zip.on('error', reject)
      zip.readEntry()
    })
  })
}

/** Reads a response body to its end: `cut` when the connection broke instead. */
export async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, already = 0): Promise<{ cut: boolean; bytes: number }> {
  let bytes = already
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { cut: false, bytes }
      bytes += value.length
    }
  } catch {
    return { cut: true, bytes }
  }
}

/**
 * An upload body of random MiB chunks (up to `total`) that calls `stop` (e.g. stops the
 * backend server) once `stopAfter` bytes went out, or once `stopAfter(sent)` says so
 * (e.g. when the server holds part of the upload), and keeps coming.
 */
export function bodyStoppingServer(stop: () => Promise<void>, stopAfter: number | ((sent: number) => boolean), total = 256 * MiB): ReadableStream<Uint8Array> {
  const due = typeof stopAfter === 'number' ? (sent: number) => sent >= stopAfter : stopAfter
  let sent = 0
  let stopped = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= total) return controller.close()
      if (!stopped && due(sent)) {
        stopped = true
        await stop()
      }
      const chunk = randomBytes(MiB)
      sent += chunk.length
      controller.enqueue(chunk)
    },
  })
}

/**
 * A node:http upload (POST /api/files/cat) driven by hand: `send` writes bytes, `req`
 * is the request (end it, or destroy it to cut the upload), `response` the answer.
 */
export function startUpload(url: string, token: string, path: string, headers: Record<string, string | number>) {
  const req = request({
    host: '127.0.0.1',
    port: Number(new URL(url).port),
    method: 'POST',
    path: `/api/files/cat?path=${encodeURIComponent(path)}`,
    headers: { authorization: `Bearer ${token}`, ...headers },
  })
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }))
      res.on('error', reject)
    })
    req.on('error', reject)
  })
  response.catch(() => {}) // inspected by the tests that expect an answer
  const send = (b: Buffer) => new Promise<void>((resolve, reject) => req.write(b, (err) => (err ? reject(err) : resolve())))
  return { req, send, response }
}

/**
 * @module workers/drivers/s3/session
 * Section 3 of the s3 driver: the S3 client, and the request-level pieces of an
 * upload (cutting a body into parts, bounded concurrency).
 *
 * No SessionPool here: an S3 "session" is an HTTP request. One S3Client per driver,
 * over keep-alive agents of MAX_SOCKETS connections; the SDK retries a request that
 * met a stale keep-alive socket (the server restarted, say), and a dead socket is
 * simply not reused.
 */
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import type * as S3 from '@aws-sdk/client-s3'
import type { S3Spec } from '../../../core/backend.js'

/** What the client needs: the spec's connection fields and the agents' size. */
export interface S3ClientOptions extends Omit<S3Spec, 'type' | 'root'> {
  /** Most HTTP connections at once (the keep-alive agent's maxSockets). */
  readonly maxSockets?: number
}

/** Matches the worker pool's default tasks per worker: one connection per concurrent task. */
const MAX_SOCKETS = 64
const CONNECT_TIMEOUT_MS = 5_000
/** A socket silent this long is a hung server: TimeoutError → ETIMEDOUT. */
const SOCKET_TIMEOUT_MS = 30_000

export type Sdk = typeof S3
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyCommand = S3.$Command<any, any, any, any, any>
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type OutputOf<C> = C extends S3.$Command<any, infer O, any, any, any> ? O : never

export function openClient(sdk: Sdk, cfg: S3ClientOptions): { client: S3.S3Client; agents: [HttpAgent, HttpsAgent] } {
  const maxSockets = cfg.maxSockets ?? MAX_SOCKETS
  const agents: [HttpAgent, HttpsAgent] = [new HttpAgent({ keepAlive: true, maxSockets }), new HttpsAgent({ keepAlive: true, maxSockets })]
  const client = new sdk.S3Client({
    region: cfg.region,
    ...(cfg.endpoint === undefined ? {} : { endpoint: cfg.endpoint }),
    forcePathStyle: cfg.forcePathStyle,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
    // The SDK's default sends streamed bodies aws-chunked with CRC trailers, which
    // S3-compatible servers (s3rver, older MinIO, Ceph) store as data: SERVERS.md.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: {
      httpAgent: agents[0],
      httpsAgent: agents[1],
      connectionTimeout: CONNECT_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
    },
  })
  return { client, agents }
}

/**
 * Cuts a stream of chunks into parts of exactly `partSize` bytes (the last one
 * shorter), each a fresh buffer: the body's chunks may be views the caller reuses.
 */
export class PartCutter {
  readonly #partSize: number
  #chunks: Uint8Array[] = []
  size = 0

  constructor(partSize: number) {
    this.#partSize = partSize
  }

  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return
    this.#chunks.push(chunk)
    this.size += chunk.byteLength
  }

  /** A whole part is ready. */
  full(): boolean {
    return this.size >= this.#partSize
  }

  /** The next part: `partSize` bytes, or what is left when less. */
  take(): Buffer {
    const n = Math.min(this.size, this.#partSize)
    const out = Buffer.allocUnsafe(n)
    let off = 0
    while (off < n) {
      const c = this.#chunks[0]!
      const k = Math.min(c.byteLength, n - off)
      out.set(k === c.byteLength ? c : c.subarray(0, k), off)
      off += k
      if (k === c.byteLength) this.#chunks.shift()
      else this.#chunks[0] = c.subarray(k)
    }
    this.size -= n
    return out
  }
}

/** Runs `fn` over `items` with at most `n` in flight; the first failure wins. */
export async function inParallel<T>(n: number, items: readonly T[], fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0
  let failed = false
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      try {
        await fn(items[next++]!)
      } catch (err) {
        failed = true
        throw err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker))
}

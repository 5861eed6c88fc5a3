/**
 * @module workers/drivers/s3/session
 * Section 3 of the s3 driver: the S3 client. (Cutting a body into parts and the
 * parts in flight are the shared workers/rechunk.ts and workers/inflight.ts.)
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
  /** A socket silent this long fails its request (default 30 s); connecting gets at most 5 s of it. */
  readonly timeoutMs?: number
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
    // S3-compatible servers (s3rver, older MinIO, Ceph) store as data.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: {
      httpAgent: agents[0],
      httpsAgent: agents[1],
      connectionTimeout: Math.min(CONNECT_TIMEOUT_MS, cfg.timeoutMs ?? CONNECT_TIMEOUT_MS),
      socketTimeout: cfg.timeoutMs ?? SOCKET_TIMEOUT_MS,
    },
  })
  return { client, agents }
}

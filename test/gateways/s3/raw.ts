/**
 * Raw requests to the S3 gateway, signed with Signature V4 (@smithy/signature-v4, the
 * AWS SDK's own signer): for what a client library hides (the error document, headers,
 * hostile paths sent byte for byte).
 */
import { createHash } from 'node:crypto'
import { request } from 'node:http'
import { SignatureV4 } from '@smithy/signature-v4'
import { Sha256 } from '../../../gateways/s3/auth/sigv4.js'
import type { Key } from './fixture.js'


/** smithy's hash interface on node:crypto. */

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** `path` is sent as written (already percent-encoded where it must be). */
export async function rawS3(endpoint: string, key: Key, method: string, path: string, opts: { query?: Record<string, string>; headers?: Record<string, string>; body?: string | Uint8Array } = {}): Promise<RawResponse> {
  const u = new URL(endpoint)
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body
  const signed = await signer.sign({
    method,
    protocol: 'http:',
    hostname: u.hostname,
    port: Number(u.port),
    path,
    query: opts.query ?? {},
    headers: {
      host: u.host,
      'x-amz-content-sha256': createHash('sha256').update(body ?? '').digest('hex'),
      ...opts.headers,
    },
    ...(body === undefined ? {} : { body }),
  })
  const qs = new URLSearchParams(opts.query ?? {}).toString()
  // node:http, not fetch: a URL parser would resolve `..` and `%2e%2e` before sending.
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: Number(u.port), method, path: `${path}${qs ? `?${qs}` : ''}`, headers: signed.headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const headers = new Headers()
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v)
        resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString('utf8') })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

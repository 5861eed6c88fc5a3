/**
 * A real filegate (admin API on) with an S3 endpoint of the test's own on its gateway
 * port (`GatewayContext.listenHttp`): every request is authenticated by
 * gateways/s3/auth, its payload read to the end, and what came through is answered
 * (JSON) and kept in `seen`; refusals are S3's XML error documents, so that real S3
 * clients read them as they would S3's. Keys are made through the admin API.
 */
import { createHash } from 'node:crypto'
import { XMLBuilder } from 'fast-xml-parser'
import type { Test } from 'tap'
import type { HttpReply } from '../../core/http.js'
import { authenticate } from '../../gateways/s3/auth/index.js'
import { S3Error } from '../../gateways/s3/errors.js'
import { api } from './filegate.js'
import { type Gate, gate } from './gateway.js'
import { adminToken } from './share.js'
import { changesNothing } from '../../core/permissions.js'

export interface Seen {
  readonly user?: string
  readonly accessKeyId?: string
  readonly readOnly?: boolean
  /** What the request said of its payload (x-amz-content-sha256). */
  readonly mode?: string | undefined
  readonly sha256?: string
  readonly length?: number
  readonly contentLength?: number | null
  readonly error?: string
  readonly message?: string
}

export interface S3Echo {
  readonly gate: Gate
  /** http://127.0.0.1:<port> of the S3 endpoint. */
  readonly endpoint: string
  readonly seen: Seen[]
  /** Shifts the endpoint's clock. */
  skewMs: number
  /** Makes a key for `user` (creating a tmp user of that name first unless it exists). */
  key(user: string, opts?: { readonly readOnly?: boolean }): Promise<{ accessKeyId: string; secretAccessKey: string }>
  admin(method: string, path: string): Promise<Response>
}

const xml = new XMLBuilder({ suppressEmptyNode: false })

export async function s3Echo(t: Test, region = 'us-east-1'): Promise<S3Echo> {
  const g = await gate(t)
  const admin = api(g.url, await adminToken(g.url))
  const seen: Seen[] = []
  const users = new Set<string>()
  const echo: S3Echo = {
    gate: g,
    endpoint: '',
    seen,
    skewMs: 0,
    async key(user, opts = {}) {
      if (!users.has(user)) {
        await g.addUser({ name: user, connection: 'tmp', password: 'a password for s3 users', read_only: opts.readOnly === true })
        users.add(user)
      }
      const res = await admin('POST', `/admin/api/users/${user}/s3-keys`)
      if (res.status !== 201) throw new Error(`making a key: ${res.status} ${await res.text()}`)
      const k = ((await res.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
      return { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }
    },
    admin: (method, path) => admin(method, path),
  }
  const listener = await g.ctx.listenHttp({
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: null,
    handler: async (req): Promise<HttpReply> => {
      try {
        const caller = await authenticate(req, g.ctx.login, { region, now: () => Date.now() + echo.skewMs })
        try {
          const hash = createHash('sha256')
          let length = 0
          for await (const b of caller.body) {
            hash.update(b)
            length += b.byteLength
          }
          const s: Seen = { user: caller.user, accessKeyId: caller.accessKeyId, readOnly: changesNothing(caller.fs.permissions), mode: req.header('x-amz-content-sha256'), sha256: hash.digest('hex'), length, contentLength: caller.contentLength }
          seen.push(s)
          // A listing as S3 answers it (an empty one), for clients that parse it.
          if (req.query.has('list-type')) return { status: 200, headers: { 'content-type': 'application/xml' }, body: xml.build({ ListBucketResult: { Name: 'b', KeyCount: 0, IsTruncated: false } }) }
          // What came through is the body of a GET; other answers are empty, as S3's to a PUT.
          if (req.method !== 'GET') return { status: 200, headers: { etag: '"echo"' }, body: '' }
          return { status: 200, headers: { 'content-type': 'application/json', etag: '"echo"' }, body: JSON.stringify(s) }
        } finally {
          caller.fs.close()
        }
      } catch (err) {
        if (!(err instanceof S3Error)) throw err
        seen.push({ error: err.code, message: err.message })
        const doc = { Error: { Code: err.code, Message: err.message, ...err.extra, RequestId: req.requestId } }
        return { status: err.status, headers: { 'content-type': 'application/xml', 'x-amz-request-id': req.requestId }, body: `<?xml version="1.0" encoding="UTF-8"?>\n${xml.build(doc)}` }
      }
    },
  })
  t.teardown(() => listener.close(0))
  return Object.assign(echo, { endpoint: `http://127.0.0.1:${listener.port}` })
}

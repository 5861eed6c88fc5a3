/**
 * The S3 gateway's door: requests signed with the AWS SDK's own signer
 * (@smithy/signature-v4) and sent byte for byte: every operation (buckets, objects,
 * listings, copies, multipart, batch delete) with fuzzed buckets, keys (in both
 * encodings), query strings, headers (copy sources, ranges, conditions, checksums)
 * and bodies (bytes, XML with fuzzed keys, entities); and credentials unsigned,
 * wrong, garbled or expired. After each case: no 5xx but 503 (and S3's 501
 * NotImplemented), every error S3's `<Error>` document with a Code and a RequestId,
 * wrong credentials always refused, no leak, nothing outside changed.
 */
import { createHash } from 'node:crypto'
import { SignatureV4 } from '@smithy/signature-v4'
import fc from 'fast-check'
import { Sha256 } from '../../gateways/s3/auth/sigv4.js'
import { TRAVERSALS, type Encoding, encoding, escapePath, headerValue, inUrl, path, segment, wrongCredential } from './arbitraries.js'
import { type Door, checkCase, tally } from './door.js'
import { expect, leak, s3Problem } from './invariants.js'
import { type Answer, raw } from './raw-http.js'
import type { World } from './world.js'

interface Key {
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

/** As the signer escapes query values (RFC 3986), so that the canonical request matches what is sent. */
const rfc3986 = (s: string) => encodeURIComponent(s.toWellFormed()).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

async function signed(w: World, key: Key, method: string, target: string, query: Record<string, string>, headers: Record<string, string>, body: Uint8Array, opts: { unsignedPayload?: boolean; date?: Date; from?: string } = {}): Promise<Answer | null> {
  const u = new URL(w.s3Endpoint)
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  let req
  try {
    req = await signer.sign(
      {
        method,
        protocol: 'http:',
        hostname: u.hostname,
        port: Number(u.port),
        path: target,
        query,
        headers: { host: u.host, 'x-amz-content-sha256': opts.unsignedPayload ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update(body).digest('hex'), ...headers },
        body,
      },
      opts.date ? { signingDate: opts.date } : {},
    )
  } catch {
    return null // the signer refuses it (nothing sent)
  }
  const qs = Object.entries(query).map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`).join('&')
  return raw(w.s3Endpoint, method, `${target}${qs ? `?${qs}` : ''}`, req.headers, method === 'GET' || method === 'HEAD' ? undefined : body, opts.from ? { from: opts.from } : {})
}

function check(w: World, method: string, what: string, a: Answer | null): void {
  if (a === null) return
  tally(`s3 ${a.status} ${/<Code>([^<]+)/.exec(a.body.toString())?.[1] ?? ''}`)
  const problem = s3Problem(method, a.status, a.headers, a.body.toString('utf8'))
  expect(problem === null, `${what}: ${problem}`)
  const headers: string[] = []
  a.headers.forEach((v, k) => headers.push(`${k}: ${v}`))
  const leaked = leak(w, a.body) ?? leak(w, headers.join('\n'))
  expect(leaked === null, `${what} → ${a.status}: ${leaked}`)
}

const bucket = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('inner', 'in-dir', 'swap', 'out-abs', 'out-rel', 'out-top', 'out-file', 'dangling', 'loop-a', 'fuzzbucket', 'rootside') }, { weight: 1, arbitrary: segment })

/** A URL path `/<bucket>/<key>`, each part in either encoding, or a well-formed one through a planted link. */
const target = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(bucket, fc.option(path, { nil: undefined }), encoding, encoding).map(([b, k, hb, hk]) => `/${inUrl(b, hb)}${k === undefined ? '' : `/${inUrl(k.replace(/^\/+/, ''), hk)}`}`) },
  { weight: 2, arbitrary: escapePath },
)

/** Subresources and parameters of the operations. */
const query = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  fc.record({ 'list-type': fc.constant('2'), prefix: path, delimiter: fc.constantFrom('/', '', 'x', '\\'), 'start-after': path, 'max-keys': fc.constantFrom('0', '1', '1000', '-1', 'x', '99999999999') }, { requiredKeys: ['list-type'] }),
  fc.record({ prefix: path, marker: path, delimiter: fc.constantFrom('/', '%2f'), 'encoding-type': fc.constantFrom('url', 'x') }, { requiredKeys: [] }),
  fc.record({ 'list-type': fc.constant('2'), 'continuation-token': fc.oneof(headerValue, path.map((p) => Buffer.from(p).toString('base64'))) }),
  fc.constant({ uploads: '' }),
  fc.record({ uploadId: headerValue, partNumber: fc.constantFrom('1', '0', '10001', '-1', 'x') }, { requiredKeys: ['uploadId'] }),
  fc.constantFrom({ delete: '' }, { location: '' }, { versioning: '' }, { acl: '' }, { tagging: '' }, { policy: '' }, { cors: '' }, { 'x-id': 'GetObject' }, { versionId: 'null' }),
)

const xmlText = (s: string) => s.toWellFormed().replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')

const s3Body = (w: World) =>
  fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.array(path, { minLength: 1, maxLength: 3 }).map((keys) => `<?xml version="1.0"?><Delete><Quiet>false</Quiet>${keys.map((k) => `<Object><Key>${xmlText(k)}</Key></Object>`).join('')}</Delete>`),
    fc.nat({ max: 3 }).map((n) => `<CompleteMultipartUpload>${Array.from({ length: n }, (_, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>"x"</ETag></Part>`).join('')}</CompleteMultipartUpload>`),
    fc.constantFrom(
      `<?xml version="1.0"?><!DOCTYPE d [<!ENTITY e SYSTEM "file://${w.outside}/secret.txt">]><Delete><Object><Key>&e;</Key></Object></Delete>`,
      '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><Delete><Object><Key>&c;</Key></Object></Delete>',
      '<Delete><Object><Key>a</Key></Object>', '<Delete>' + '<Object><Key>k</Key></Object>'.repeat(1001) + '</Delete>', '<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>', 'not xml',
    ),
  ).map((b) => (typeof b === 'string' ? new TextEncoder().encode(b) : b))

const copySource = fc.oneof(
  fc.tuple(bucket, path, encoding).map(([b, k, how]: [string, string, Encoding]) => `/${inUrl(b, how)}/${inUrl(k.replace(/^\/+/, ''), how)}`),
  fc.constantFrom('/out-abs/secret.txt', '/out-file', '/out-rel/sub/deep.txt', '/inner/../out-abs/secret.txt', '/inner/%2e%2e/out-abs/secret.txt', '/swap/secret.txt', '/in-dir/../../rootside/secret.txt', `/${TRAVERSALS.join('/')}`, '/out-top/rootside/secret.txt'),
)

/** Signed headers are ASCII: a Latin-1 byte is signed as one character and sent as another, which only tests the client. */
const s3Headers = fc.dictionary(
  fc.constantFrom('x-amz-copy-source', 'range', 'if-match', 'if-none-match', 'if-modified-since', 'content-md5', 'x-amz-meta-fuzz', 'content-type', 'x-amz-metadata-directive', 'x-amz-copy-source-range', 'x-amz-checksum-crc32', 'x-amz-sdk-checksum-algorithm', 'content-encoding', 'x-amz-decoded-content-length'),
  headerValue.map((v) => v.replace(/[^\x20-\x7e]/g, '?')),
  { maxKeys: 2 },
)

/** The source address of the credential cases. */
const FROM = '127.0.0.2'

/**
 * A fuzzed request the signer and the server canonicalise differently (`.` segments,
 * odd escapes) is refused as a failed login, and failed logins are throttled per
 * address, for every gateway together: each operation comes from an address of its
 * own (127.1.x.y), so that the cases reach the operations rather than the throttle.
 */
let nextFrom = 0
const rotatingFrom = () => `127.1.${(nextFrom >> 8) & 255}.${(nextFrom++ & 255) || 1}`

export async function s3Door(w: World): Promise<Door> {
  const operations = fc.asyncProperty(
    fc.constantFrom('GET', 'PUT', 'HEAD', 'DELETE', 'POST'), target, query, s3Headers, fc.option(copySource, { nil: undefined }), s3Body(w), fc.boolean(),
    async (method, t, q, h, copy, body, unsignedPayload) => {
      await checkCase(w, async () => {
        const headers: Record<string, string> = { ...h }
        if (copy !== undefined) headers['x-amz-copy-source'] = copy
        const what = `S3 ${method} ${t}?${new URLSearchParams(q)} ${JSON.stringify(headers)}`
        const from = rotatingFrom()
        const a = await signed(w, w.s3Key, method, t, q, headers, body, { unsignedPayload, from })
        check(w, method, what, a)
        // A multipart upload made: copy a fuzzed source into a part, complete it, or abort it.
        const id = a?.status === 200 && 'uploads' in q ? /<UploadId>([^<]+)<\/UploadId>/.exec(a.body.toString())?.[1] : undefined
        if (id !== undefined) {
          const part = await signed(w, w.s3Key, 'PUT', t, { partNumber: '1', uploadId: id }, copy === undefined ? {} : { 'x-amz-copy-source': copy }, copy === undefined ? body : new Uint8Array(0), { from })
          check(w, 'PUT', `${what}: UploadPart(Copy)`, part)
          const etag = part?.headers.get('etag') ?? /<ETag>([^<]+)<\/ETag>/.exec(part?.body.toString() ?? '')?.[1]
          const done = await signed(w, w.s3Key, 'POST', t, { uploadId: id }, {}, new TextEncoder().encode(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag ?? '"x"'}</ETag></Part></CompleteMultipartUpload>`), { from })
          check(w, 'POST', `${what}: Complete`, done)
          if (done?.status !== 200) check(w, 'DELETE', `${what}: Abort`, await signed(w, w.s3Key, 'DELETE', t, { uploadId: id }, {}, new Uint8Array(0), { from }))
        }
      })
    },
  )

  /** Credentials that must be refused: none, another secret, an unknown or garbled key id, a garbled Authorization header, a stale date, garbled presigned parameters. */
  const credentials = fc.asyncProperty(
    fc.constantFrom('GET', 'PUT', 'HEAD', 'DELETE'), fc.constantFrom('/', '/inner', '/inner/file.txt', '/out-abs/secret.txt', '/fuzzbucket/x'),
    fc.constantFrom('none', 'secret', 'key-id', 'header', 'date', 'presigned'),
    wrongCredential(w.s3Key.secretAccessKey), wrongCredential(w.s3Key.accessKeyId), fc.integer({ min: -10 * 365 * 86400, max: 10 * 365 * 86400 }).filter((s) => Math.abs(s) > 16 * 60),
    fc.dictionary(fc.constantFrom('X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature', 'X-Amz-Security-Token'), headerValue, { minKeys: 1, maxKeys: 6 }),
    async (method, t, kind, secret, keyId, skew, presigned) => {
      await checkCase(w, async () => {
        // Refused logins are throttled per address (then 503 SlowDown): from an address of their own, so the other properties' stay open.
        const from = FROM
        const body = new TextEncoder().encode('x')
        let a: Answer | null
        if (kind === 'none') a = await raw(w.s3Endpoint, method, t, {}, method === 'PUT' ? body : undefined, { from })
        else if (kind === 'secret') {
          if (secret === w.s3Key.secretAccessKey) return
          a = await signed(w, { accessKeyId: w.s3Key.accessKeyId, secretAccessKey: secret }, method, t, {}, {}, body, { from })
        } else if (kind === 'key-id') {
          if (keyId === w.s3Key.accessKeyId) return
          a = await signed(w, { accessKeyId: keyId, secretAccessKey: w.s3Key.secretAccessKey }, method, t, {}, {}, body, { from })
        } else if (kind === 'header') a = await raw(w.s3Endpoint, method, t, { authorization: `AWS4-HMAC-SHA256 Credential=${keyId}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=${secret}`, 'x-amz-date': '20260101T000000Z', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }, undefined, { from })
        else if (kind === 'date') a = await signed(w, w.s3Key, method, t, {}, {}, body, { date: new Date(Date.now() + skew * 1000), from })
        else a = await raw(w.s3Endpoint, method, `${t}?${Object.entries(presigned).map(([k, v]) => `${k}=${rfc3986(v)}`).join('&')}`, {}, undefined, { from })
        const what = `S3 ${method} ${t} with a wrong credential (${kind})`
        check(w, method, what, a)
        if (a) expect([400, 403, 501, 503].includes(a.status), `${what} → ${a.status}`)
      })
    },
  )

  return {
    async alive() {
      const a = await signed(w, w.s3Key, 'GET', '/', {}, {}, new Uint8Array(0), { from: '127.0.0.1' })
      expect(a?.status === 200 && a.body.includes('<ListAllMyBucketsResult'), `S3 ListBuckets after a batch: ${a?.status} ${a?.body.toString().slice(0, 300)}`)
    },
    properties: [
      { name: 'operations', property: operations, weight: 4 },
      { name: 'credentials', property: credentials, weight: 0.1, ciRuns: 25 }, // each waits 300 ms, as every refused login
    ],
  }
}

/**
 * @module test/gateways/s3/sigv4-examples.test
 * The signature checks against the worked examples AWS publishes for S3's Signature V4
 * (sig-v4-header-based-auth.html, "GET Object"; sigv4-streaming.html, the 66,560-byte
 * chunked upload): their requests, keys and signatures, taken as given. The requests
 * are fed to the code as an HTTP engine would hand them over (core/http.ts).
 */
import t from 'tap'
import type { HttpRequest } from '../../../core/http.js'
import { checkedPayload, planPayload } from '../../../gateways/s3/auth/payload.js'
import { keyIfSigned, readClaims } from '../../../gateways/s3/auth/sigv4.js'

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
const NOW = Date.UTC(2013, 4, 24, 0, 5)

function request(method: string, path: string, headers: Record<string, string>, body: Uint8Array[] = []): HttpRequest {
  const h = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  return {
    method,
    path,
    query: new URLSearchParams(),
    header: (n) => h.get(n),
    headers: () => h.entries(),
    remoteAddress: '192.0.2.1',
    requestId: 'r',
    signal: new AbortController().signal,
    contentLength: h.has('content-length') ? Number(h.get('content-length')) : null,
    body: (async function* () {
      yield* body
    })(),
  }
}

async function drain(it: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0
  for await (const b of it) n += b.byteLength
  return n
}

t.test('GET Object with a Range: the published signature is accepted, a changed header is not', async (t) => {
  const headers = {
    host: 'examplebucket.s3.amazonaws.com',
    range: 'bytes=0-9',
    'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    'x-amz-date': '20130524T000000Z',
    authorization:
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
  }
  const claims = await readClaims(request('GET', '/test.txt', headers), { region: 'us-east-1', now: NOW })
  t.equal(claims.accessKeyId, 'AKIAIOSFODNN7EXAMPLE')
  t.ok(keyIfSigned(claims, SECRET), 'the secret made this signature')
  t.notOk(keyIfSigned(claims, `${SECRET}x`), 'another secret did not')
  const changed = await readClaims(request('GET', '/test.txt', { ...headers, range: 'bytes=0-99' }), { region: 'us-east-1', now: NOW })
  t.notOk(keyIfSigned(changed, SECRET), 'a signed header changed')
  const other = await readClaims(request('GET', '/test2.txt', headers), { region: 'us-east-1', now: NOW })
  t.notOk(keyIfSigned(other, SECRET), 'another path')
  await t.rejects(readClaims(request('GET', '/test.txt', headers), { region: 'eu-west-1', now: NOW }), { code: 'AuthorizationHeaderMalformed', extra: { Region: 'eu-west-1' } }, 'signed for another region')
  await t.rejects(readClaims(request('GET', '/test.txt', headers), { region: '*', now: NOW + 16 * 60_000 }), { code: 'RequestTimeTooSkewed', status: 403 }, 'a clock 16 minutes off')
})

t.test('the chunked upload: each chunk signature checked in its chain', async (t) => {
  const headers = {
    host: 's3.amazonaws.com',
    'x-amz-date': '20130524T000000Z',
    'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    authorization:
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9',
    'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    'content-encoding': 'aws-chunked',
    'x-amz-decoded-content-length': '66560',
    'content-length': '66824',
  }
  const chunk = (size: number, sig: string) => Buffer.concat([Buffer.from(`${size.toString(16)};chunk-signature=${sig}\r\n`), Buffer.alloc(size, 'a'), Buffer.from('\r\n')])
  const c1 = chunk(65536, 'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648')
  const c2 = chunk(1024, '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497')
  const c3 = chunk(0, 'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9')
  t.equal(c1.byteLength + c2.byteLength + c3.byteLength, 66824, 'the framing is the published one')

  const run = async (body: Uint8Array[]) => {
    const req = request('PUT', '/examplebucket/chunkObject.txt', headers, body)
    const claims = await readClaims(req, { region: 'us-east-1', now: NOW })
    const key = keyIfSigned(claims, SECRET)
    t.ok(key, 'the seed signature is the published one')
    const plan = planPayload(req, claims.payloadHash, false)
    return drain(checkedPayload(req.body, plan, { key: key!, longDate: claims.longDate, scope: claims.scope, seed: claims.signature }))
  }
  const whole = Buffer.concat([c1, c2, c3])
  // Cut anywhere: the framing is parsed across pieces.
  const pieces = [whole.subarray(0, 3), whole.subarray(3, 70), whole.subarray(70, 65600), whole.subarray(65600)]
  t.equal(await run(pieces), 66560, 'decoded and every signature matched')

  const other = Buffer.from(c2)
  other[other.indexOf('\r\n') + 2 + 10] = 0x62 // one byte of the second chunk's data changed
  await t.rejects(run([c1, other, c3]), { code: 'SignatureDoesNotMatch' }, 'a byte changed in a chunk')
  await t.rejects(run([c2, c1, c3]), { code: 'SignatureDoesNotMatch', status: 403 }, 'chunks replayed in another order')
  await t.rejects(run([c1, c3]), { code: 'SignatureDoesNotMatch' }, 'a chunk left out')
})

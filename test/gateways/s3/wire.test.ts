/**
 * What the S3 gateway reads off the wire, on both HTTP engines: Signature V4 over the
 * header bytes as sent (a non-ASCII `x-amz-meta-*` value, its first and last byte
 * included, verifies with curl's own signer; one byte changed does not), and
 * `Expect: 100-continue` answered `100 Continue` only once the signature and the
 * key's rights are checked (a refused request never invites its body).
 */
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { CreateBucketCommand } from '@aws-sdk/client-s3'
import { SignatureV4 } from '@smithy/signature-v4'
import t from 'tap'
import { Sha256 } from '../../../gateways/s3/auth/sigv4.js'
import { requireBinary, serverDir } from '../../servers/process.js'
import { runCommand } from '../sftp/clients.js'
import { type Key, type S3Gw, startS3Gateway } from './fixture.js'

const CURL = requireBinary('/usr/bin/curl', 'curl')

/** A signed request's head, written byte for byte (header values as UTF-8, as curl sends them). */
async function signedHead(gw: S3Gw, key: Key, method: string, path: string, headers: Record<string, string>, body: Buffer): Promise<Buffer> {
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  const host = `127.0.0.1:${gw.port}`
  const signed = await signer.sign({
    method,
    protocol: 'http:',
    hostname: '127.0.0.1',
    port: gw.port,
    path,
    query: {},
    headers: { host, 'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'), 'content-length': String(body.length), ...headers },
  })
  const lines = [`${method} ${path} HTTP/1.1`, ...Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`)]
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'utf8')
}

/** Sends `head`; with `Expect: 100-continue`, `body` only after a `100 Continue`, else at once. */
function exchange(port: number, head: Buffer, body: Buffer): Promise<{ first: string; all: string }> {
  const waits = /\r\nexpect: 100-continue\r\n/i.test(head.toString('latin1'))
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(waits ? head : Buffer.concat([head, body])))
    let all = ''
    let first: string | null = null
    const timer = setTimeout(() => {
      sock.destroy()
      reject(new Error(`no complete answer: ${JSON.stringify(all.slice(0, 300))}`))
    }, 60_000)
    sock.on('data', (d: Buffer) => {
      all += d.toString('latin1')
      first ??= all
      if (first.startsWith('HTTP/1.1 100') && !sock.writableEnded && all.indexOf('\r\n\r\n') === all.length - 4) sock.write(body)
      // Done once a final answer's head and its announced body arrived.
      const final = all.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
      const end = final.indexOf('\r\n\r\n')
      const len = /content-length: (\d+)/i.exec(final)
      if (end >= 0 && len && final.length >= end + 4 + Number(len[1])) {
        clearTimeout(timer)
        sock.destroy()
        resolve({ first: first.split('\r\n')[0]!, all })
      }
    })
    sock.on('error', reject)
  })
}

for (const engine of ['uws', 'node'] as const) {
  t.test(`${engine}: non-ASCII metadata signed by curl verifies over its bytes; a byte changed does not`, async (t) => {
    const gw = await startS3Gateway(t, { httpEngine: engine })
    await gw.client().send(new CreateBucketCommand({ Bucket: 'wire' }))
    const dir = serverDir(t, 's3-wire')
    const file = join(dir, 'body.txt')
    writeFileSync(file, 'payload')
    // First and last characters outside ASCII: what a parser trimming "white space" as signed chars drops.
    const city = 'Zürich café'
    const edge = 'é…ü'
    const curl = (key: string, meta: Record<string, string>) =>
      runCommand(
        CURL,
        // S3 wants x-amz-content-sha256, which curl 7.88 signs as given (and uses as the payload hash).
        ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${gw.key.accessKeyId}:${gw.key.secretAccessKey}`, '-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD',
          ...Object.entries(meta).flatMap(([k, v]) => ['-H', `x-amz-meta-${k}: ${v}`]), '-T', file, `${gw.endpoint}/wire/${key}`],
        { env: { PATH: process.env.PATH }, timeoutMs: 60_000 },
      )
    const put = await curl('zurich.txt', { city, edge })
    t.equal(put.stdout, '200', `curl's PUT with UTF-8 metadata is accepted: ${put.stderr}`)
    const head = await fetchHead(gw, 'zurich.txt')
    t.equal(decodeWord(head.get('x-amz-meta-city')), city, 'the value comes back (RFC 2047, as S3 answers non-ASCII values)')
    t.equal(decodeWord(head.get('x-amz-meta-edge')), edge, 'its first and last byte included')

    // The same signed head with one byte of the value changed: the signature no longer holds.
    const body = Buffer.from('payload')
    const signedBytes = await signedHead(gw, gw.key, 'PUT', '/wire/tampered.txt', { 'x-amz-meta-city': city }, body)
    const at = signedBytes.indexOf(Buffer.from('café'))
    const tampered = Buffer.from(signedBytes)
    tampered[at + 4] = 0xa8 // é (c3 a9) becomes è (c3 a8)
    const refused = await exchange(gw.port, tampered, body)
    t.match(refused.all, /<Code>SignatureDoesNotMatch<\/Code>/, 'a changed byte is refused')
    const accepted = await exchange(gw.port, signedBytes, body)
    t.match(accepted.first, /^HTTP\/1\.1 200/, 'the untouched bytes are accepted')
  })

  t.test(`${engine}: 100 Continue only after the signature and the rights are checked`, async (t) => {
    const gw = await startS3Gateway(t, { httpEngine: engine })
    await gw.client().send(new CreateBucketCommand({ Bucket: 'cont' }))
    const reader = await gw.addUser(`reader${engine}`, { readOnly: true })
    const body = Buffer.alloc(64 * 1024, 7)
    const head = (key: Key, name: string) => signedHead(gw, key, 'PUT', `/cont/${name}`, { expect: '100-continue' }, body)
    const wrong = await exchange(gw.port, await head({ ...gw.key, secretAccessKey: 'not-the-secret-not-the-secret-00' }, 'a.bin'), body)
    t.match(wrong.first, /^HTTP\/1\.1 403/, 'a wrong signature: 403 at once, no 100 Continue')
    t.notMatch(wrong.all, /100 Continue/)
    t.match(wrong.all, /SignatureDoesNotMatch/)
    const readOnly = await exchange(gw.port, await head(reader, 'b.bin'), body)
    t.match(readOnly.first, /^HTTP\/1\.1 403/, 'a read-only key: 403 at once, no 100 Continue')
    t.match(readOnly.all, /AccessDenied/)
    const ok = await exchange(gw.port, await head(gw.key, 'c.bin'), body)
    t.match(ok.first, /^HTTP\/1\.1 100 Continue/, 'the right key: 100 Continue')
    t.match(ok.all, /HTTP\/1\.1 200/, 'then the body is taken')
  })
}

async function fetchHead(gw: S3Gw, key: string): Promise<Headers> {
  const { rawS3 } = await import('./raw.js')
  const r = await rawS3(gw.endpoint, gw.key, 'HEAD', `/wire/${key}`)
  if (r.status !== 200) throw new Error(`HEAD ${key}: ${r.status}`)
  return r.headers
}

/** `=?UTF-8?B?...?=` → its text; anything else as it is. */
function decodeWord(v: string | null): string | null {
  const m = v === null ? null : /^=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=$/i.exec(v)
  return m ? Buffer.from(m[1]!, 'base64').toString('utf8') : v
}

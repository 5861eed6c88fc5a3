/**
 * A web page uploading through presigned URLs (made by boto3, `signature_version='s3v4'`)
 * from Chromium: each PUT is preceded by its CORS preflight, which the gateway answers
 * as S3 does for the service's `cors.origins` and never takes for a login. Fifty
 * uploads later the address is not locked out. Preflights S3 refuses (no Origin, an
 * origin not listed) get S3's 400 and 403, and are not logins either.
 */
import { existsSync, readFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import { join } from 'node:path'
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3'
import t, { type Test } from 'tap'
import { createLogger } from '../../../front/log.js'
import { launchBrowser, noBrowser } from '../../helpers/browser.js'
import { requireBinary } from '../../servers/process.js'
import { runCommand } from '../sftp/clients.js'
import { startS3Gateway } from './fixture.js'

const PYTHON = '/usr/bin/python3'
requireBinary('/usr/lib/python3/dist-packages/boto3', 'python3-boto3')
const UPLOADS = 50

const PRESIGN = String.raw`
import json, os, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['ENDPOINT'], region_name='us-east-1',
    aws_access_key_id=os.environ['KEY_ID'], aws_secret_access_key=os.environ['SECRET'],
    config=Config(signature_version='s3v4', s3={'addressing_style': 'path'}))
print(json.dumps([s3.generate_presigned_url('put_object', Params={'Bucket': 'web', 'Key': 'up/%02d.txt' % i}, ExpiresIn=600) for i in range(int(os.environ['N']))]))
`

/** The page's own origin: a server of its own, so every upload is cross-origin. */
async function pageServer(t: Test): Promise<string> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<!doctype html><title>uploader</title><p>uploader</p>')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const a = server.address()
  return `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`
}

t.test('Chromium: 50 presigned PUTs with their preflights, and the address is not locked out', { skip: noBrowser }, async (t) => {
  const origin = await pageServer(t)
  const lines: string[] = []
  const gw = await startS3Gateway(t, { corsOrigins: [origin], logger: createLogger('info', (l) => lines.push(l)) })
  const s3 = gw.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'web' }))
  const { AWS_CA_BUNDLE: _, ...env } = process.env
  const made = await runCommand(PYTHON, ['-c', PRESIGN], { env: { ...env, ENDPOINT: gw.endpoint, KEY_ID: gw.key.accessKeyId, SECRET: gw.key.secretAccessKey, N: String(UPLOADS) }, timeoutMs: 60_000 })
  t.equal(made.code, 0, made.stderr)
  const urls = JSON.parse(made.stdout) as string[]

  const { page, failed } = await launchBrowser(t)
  await page.goto(origin)
  const results = await page.evaluate(async (list: string[]) => {
    const out: { status: number; etag: string | null }[] = []
    for (const [i, url] of list.entries()) {
      // text/plain with a custom header: never a "simple" request, so each PUT is preflighted.
      const r = await fetch(url, { method: 'PUT', body: `upload ${i}`, headers: { 'content-type': 'text/plain', 'x-upload-index': String(i) } })
      await r.arrayBuffer()
      out.push({ status: r.status, etag: r.headers.get('etag') })
    }
    return out
  }, urls)
  t.same(failed, [], 'no failed request in the page')
  t.same(results.map((r) => r.status), Array(UPLOADS).fill(200), 'every upload answered 200 to the page')
  t.ok(results.every((r) => r.etag !== null && /^"[0-9a-f]{32}"$/.test(r.etag)), 'the page can read each ETag (exposed)')
  t.equal(readFileSync(join(gw.root, 'web', 'up', '49.txt'), 'utf8'), 'upload 49', 'the uploads are stored')
  const preflights = lines.filter((l) => l.includes('"method":"OPTIONS"') && l.includes(`"port":${gw.port}`))
  t.ok(preflights.length >= UPLOADS, `each PUT was preflighted (${preflights.length} OPTIONS)`)

  // Preflights S3 refuses, more than the failed-login limit of them.
  for (let i = 0; i < 12; i++) {
    const noOrigin = await fetch(`${gw.endpoint}/web/x.txt`, { method: 'OPTIONS', headers: { 'access-control-request-method': 'PUT' } })
    t.equal(noOrigin.status, 400, 'no Origin: 400')
    if (i === 0) t.match(await noOrigin.text(), /<Code>BadRequest<\/Code>/)
    else await noOrigin.arrayBuffer()
    const stranger = await fetch(`${gw.endpoint}/web/x.txt?X-Amz-Signature=00`, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'PUT' } })
    t.equal(stranger.status, 403, 'an origin not listed: 403')
    if (i === 0) t.match(await stranger.text(), /<Code>AccessForbidden<\/Code>/)
    else await stranger.arrayBuffer()
  }
  await s3.send(new HeadBucketCommand({ Bucket: 'web' }))
  t.pass('a signed request from the same address still logs in')
  t.notOk(existsSync(join(gw.root, 'web', 'x.txt')), 'preflights wrote nothing')
})

t.test('without cors.origins a preflight is 403 "CORS is not enabled", never a login', async (t) => {
  const gw = await startS3Gateway(t)
  for (let i = 0; i < 12; i++) {
    const r = await fetch(`${gw.endpoint}/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:1', 'access-control-request-method': 'PUT' } })
    t.equal(r.status, 403)
    const text = await r.text()
    if (i === 0) t.match(text, /CORS is not enabled/)
  }
  await gw.client().send(new CreateBucketCommand({ Bucket: 'still' }))
  t.pass('the address still logs in')
})

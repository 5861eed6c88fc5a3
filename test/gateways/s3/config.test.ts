/**
 * The S3 gateway's settings (`s3.port`, `s3.host`, `s3.region`, `s3.base_domain`, from
 * the config file or FILEGATE_S3_*), the listener filegate starts unless off, its
 * refusal of unsigned requests in S3's shape, and virtual-hosted style addressing.
 */
import { existsSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, DEFAULTS, validateConfig } from '../../../core/config.js'
import { loadConfig } from '../../../front/config-load.js'
import { startTestServer } from '../../helpers/filegate.js'
import { startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'

t.test('settings and their validation', async (t) => {
  t.same(DEFAULTS.s3, { port: 8335, host: null, region: 'us-east-1', base_domain: null, multipart_expiry_hours: 24 }, 'on port 8335 of the service host, path-style, by default')
  t.same(loadConfig([], { FILEGATE_S3_PORT: 'off' }).s3.port, 'off', 'FILEGATE_S3_PORT=off')
  t.same(loadConfig([], { FILEGATE_S3_PORT: '9000', FILEGATE_S3_HOST: '0.0.0.0', FILEGATE_S3_REGION: 'eu-west-3', FILEGATE_S3_BASE_DOMAIN: 'S3.Example.com' }).s3, { port: 9000, host: '0.0.0.0', region: 'eu-west-3', base_domain: 's3.example.com', multipart_expiry_hours: 24 }, 'every setting from the environment')
  t.throws(() => loadConfig([], { FILEGATE_S3_PORT: 'of' }), ConfigError, 'a typo in the variable')
  t.throws(() => validateConfig({ s3: { port: 70000 } }), { name: 'ConfigError', message: /s3\.port/ }, 'a port out of range names the setting')
  t.throws(() => validateConfig({ s3: { bucket: 'x' } }), { name: 'ConfigError', message: /s3: unknown key "bucket"/ }, 'an unknown key')
  t.throws(() => validateConfig({ s3: { region: 'Not A Region' } }), { name: 'ConfigError', message: /s3\.region/ })
  t.throws(() => validateConfig({ s3: { base_domain: 'http://x.example.com' } }), { name: 'ConfigError', message: /s3\.base_domain/ })
})

t.test('filegate starts the gateway on its port, or not at all when off; unsigned requests are refused as S3 does', async (t) => {
  const on = await startTestServer(t, { s3: { port: 0 } })
  const s3 = on.app.gateways.find((g) => g.name === 's3')
  t.ok(s3 && s3.port! > 0, 'listening on a free port')
  const res = await fetch(`http://127.0.0.1:${s3!.port}/`)
  t.equal(res.status, 403)
  t.equal(res.headers.get('content-type'), 'application/xml')
  const body = await res.text()
  t.match(body, /<Error><Code>AccessDenied<\/Code><Message>[^<]+<\/Message><Resource>\/<\/Resource><RequestId>[^<]+<\/RequestId><\/Error>/, "S3's error document")
  t.ok(res.headers.get('x-amz-request-id'), 'x-amz-request-id')
  t.ok(res.headers.get('x-amz-id-2'), 'x-amz-id-2')
  t.ok(body.includes(`<RequestId>${res.headers.get('x-amz-request-id')}</RequestId>`), 'the same request id in both')
  const head = await fetch(`http://127.0.0.1:${s3!.port}/bucket/key`, { method: 'HEAD' })
  t.equal(head.status, 403, 'HEAD: the status, no body')
  t.ok(head.headers.get('x-amz-request-id'))
  const off = await startTestServer(t, { s3: { port: 'off' } })
  t.notOk(off.app.gateways.some((g) => g.name === 's3'), 'off: no S3 gateway')
})

t.test('virtual-hosted style: <bucket>.<base_domain> names the bucket; path-style still works', async (t) => {
  const gw = await startS3Gateway(t, { baseDomain: 's3.test' })
  gw.mkdir('vhost')
  const put = await rawS3(gw.endpoint, gw.key, 'PUT', '/dir/file.txt', { body: 'by host', headers: { host: `vhost.s3.test:${gw.port}` } })
  t.equal(put.status, 200, put.text)
  t.equal(readFileSync(join(gw.root, 'vhost', 'dir', 'file.txt'), 'utf8'), 'by host', 'stored in the bucket the Host names')
  const list = await rawS3(gw.endpoint, gw.key, 'GET', '/', { query: { 'list-type': '2' }, headers: { host: `vhost.s3.test:${gw.port}` } })
  t.match(list.text, '<Name>vhost</Name>')
  t.match(list.text, '<Key>dir/file.txt</Key>')
  const path = await rawS3(gw.endpoint, gw.key, 'GET', '/vhost/dir/file.txt')
  t.equal(path.text, 'by host', 'path-style on the plain host')
  const apex = await rawS3(gw.endpoint, gw.key, 'GET', '/', { headers: { host: `s3.test:${gw.port}` } })
  t.match(apex.text, '<Name>vhost</Name>', 'the base domain itself: ListBuckets')
  t.notOk(existsSync(join(gw.root, 'dir')))
})

/** Sends `head` as it is on a new connection; the whole answer as text. */
const rawHttp = (port: number, head: string) =>
  new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(head))
    let out = ''
    s.setEncoding('utf8')
    s.on('data', (d: string) => (out += d))
    s.on('end', () => resolve(out))
    s.on('error', reject)
  })

t.test('what the HTTP engine refuses before the gateway sees it is answered in S3\'s shape too', async (t) => {
  const on = await startTestServer(t, { s3: { port: 0 } })
  const port = on.app.gateways.find((g) => g.name === 's3')!.port!
  const twice = await rawHttp(port, 'GET /bucket/key HTTP/1.1\r\nHost: x\r\nAuthorization: a\r\nAuthorization: b\r\nConnection: close\r\n\r\n')
  t.match(twice, /^HTTP\/1\.1 400/, 'a header sent twice: 400')
  t.match(twice, /x-amz-request-id: \S+/i)
  t.match(twice, /<Error><Code>InvalidRequest<\/Code><Message>the authorization header is sent more than once<\/Message>/)
  const method = await rawHttp(port, 'PROPFIND /bucket HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.match(method, /^HTTP\/1\.1 501/, 'an unknown method: 501')
  t.match(method, /<Code>NotImplemented<\/Code>/)
  t.match(method, /x-amz-id-2: \S+/i)
})

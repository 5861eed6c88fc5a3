/**
 * `/metrics` shows every door (docs/api.md, `filegate_door_*`): one real filegate with
 * its HTTP API, SFTP, S3 and MCP doors, and one real client per door (fetch, OpenSSH
 * `sftp` and ssh2's client, the AWS SDK, the MCP SDK's client). Each client uploads and
 * downloads a file (HTTP a tus upload too, S3 a multipart upload too) and asks for one
 * that is not there; the figures must then show, under
 * the door's label, the requests, at least the file's bytes in and out, the failure
 * under the door's own error class, and a session while one is open (none once closed).
 * Counts are checked as lower bounds: what a client sends besides is its own business.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import t from 'tap'
import { api, tmpSession } from '../helpers/filegate.js'
import { type Sample, parseMetrics } from '../helpers/prometheus.js'
import { s3Client } from '../helpers/s3-client.js'
import { adminToken } from '../helpers/share.js'
import { serverDir } from '../servers/process.js'
import { connect, textOf } from './mcp/client.js'
import { call, sftpBatch, ssh2Sftp } from './sftp/clients.js'
import { startGateway } from './sftp/fixture.js'


async function scrape(url: string): Promise<Sample[]> {
  return parseMetrics(await (await fetch(`${url}/metrics`)).text())
}

/** The sum of the samples named `name` whose labels include `labels`. */
const value = (samples: readonly Sample[], name: string, labels: Record<string, string>): number =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0)

async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('every door on /metrics: requests, bytes, errors, sessions', async (t) => {
  const gw = await startGateway(t, { config: { s3: { port: 0 } } })
  const { url } = gw
  const s3Port = gw.app.gateways.find((g) => g.name === 's3')!.port!
  const before = await scrape(url)
  for (const door of ['http', 'sftp', 's3', 'mcp']) {
    t.ok(before.some((s) => s.name === 'filegate_door_requests_total' && s.labels.door === door), `${door} is listed before any traffic`)
  }
  const grew = (now: readonly Sample[], name: string, labels: Record<string, string>) => value(now, name, labels) - value(before, name, labels)

  // HTTP: an upload, its download, and a file that is not there (404).
  const httpBody = randomBytes(200_000)
  const httpToken = await tmpSession(url, 'door-http')
  const call_ = api(url, httpToken)
  t.equal((await call_('POST', '/api/files/cat', { path: '/h.bin' }, { body: httpBody })).status, 200)
  t.equal(Buffer.from(await (await call_('GET', '/api/files/cat', { path: '/h.bin' })).arrayBuffer()).equals(httpBody), true, 'http download byte-exact')
  t.equal((await call_('GET', '/api/files/cat', { path: '/missing.bin' })).status, 404)
  // A tus upload: its PATCH bodies are file bytes in through the HTTP door too.
  const tusBody = randomBytes(120_000)
  const tusHeaders = { 'tus-resumable': '1.0.0', authorization: `Bearer ${httpToken}` }
  const created = await fetch(`${url}/api/files/tus?path=/t.bin`, { method: 'POST', headers: { ...tusHeaders, 'upload-length': String(tusBody.length) } })
  t.equal(created.status, 201, 'tus upload created')
  const patched = await fetch(new URL(created.headers.get('location')!, url), { method: 'PATCH', headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: tusBody })
  t.equal(patched.status, 204, 'tus upload complete')

  // SFTP: OpenSSH's sftp puts a file, gets it back, and asks for one that is not there.
  const sftpBody = randomBytes(300_000)
  const local = serverDir(t, 'door-sftp')
  writeFileSync(join(local, 'up.bin'), sftpBody)
  const ran = await sftpBatch(t, gw.login, `put ${join(local, 'up.bin')} /s.bin\nget /s.bin ${join(local, 'down.bin')}\n-get /missing.bin ${join(local, 'none.bin')}\n`)
  t.equal(ran.code, 0, `sftp batch: ${ran.stderr}`)
  t.equal(readFileSync(join(local, 'down.bin')).equals(sftpBody), true, 'sftp download byte-exact')

  // S3: the AWS SDK puts an object, gets it, and asks for a key that is not there.
  const admin = api(url, await adminToken(url))
  const key = ((await (await admin('POST', `/admin/api/users/${gw.login.user}/s3-keys`)).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const s3 = s3Client(t, `http://127.0.0.1:${s3Port}`, { accessKeyId: key.access_key_id, secretAccessKey: key.secret_access_key }, { maxAttempts: 1 })
  gw.mkdir('bkt')
  const s3Body = randomBytes(250_000)
  await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: 'o.bin', Body: s3Body }))
  const got = await s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'o.bin' }))
  t.equal(Buffer.from(await got.Body!.transformToByteArray()).equals(s3Body), true, 's3 download byte-exact')
  await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'missing.bin' })), { name: 'NoSuchKey' })
  // A multipart upload: its object's bytes count in once it is completed (parts are only staged until then).
  const mpBody = randomBytes(100_000)
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp.bin' }))
  const part = await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId, PartNumber: 1, Body: mpBody }))
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'mp.bin', UploadId, MultipartUpload: { Parts: [{ ETag: part.ETag!, PartNumber: 1 }] } }))

  // MCP: the SDK's client writes a file, reads it, and reads one that is not there.
  const mcp = await connect(t, url, await tmpSession(url, 'door-mcp'), 'streamable')
  const mcpText = 'x'.repeat(100_000)
  t.notOk((await mcp.call('write', { path: '/m.txt', content: mcpText })).isError, 'mcp write')
  t.equal(textOf(await mcp.call('cat', { path: '/m.txt' })).length >= mcpText.length, true, 'mcp cat')
  t.equal((await mcp.call('cat', { path: '/missing.txt' })).isError, true, 'mcp cat of a missing file is a tool error')

  // An SFTP session held open (ssh2's client) while the figures are read.
  const held = await ssh2Sftp(t, gw.login)
  t.same(await call<string[]>(held.sftp.readdir.bind(held.sftp), '/').then((l) => Array.isArray(l)), true, 'the held sftp session works')

  const now = await scrape(url)
  const sizes = { http: httpBody.length, sftp: sftpBody.length, s3: s3Body.length, mcp: mcpText.length }
  for (const [door, size] of Object.entries(sizes)) {
    t.ok(grew(now, 'filegate_door_requests_total', { door }) >= 3, `${door}: its requests are counted`)
    const up = door === 'http' ? size + tusBody.length : door === 's3' ? size + mpBody.length : size
    t.ok(grew(now, 'filegate_door_bytes_total', { door, direction: 'in' }) >= up, `${door}: at least the uploads' ${up} bytes in`)
    t.ok(grew(now, 'filegate_door_bytes_total', { door, direction: 'out' }) >= size, `${door}: at least the download's ${size} bytes out`)
  }
  t.ok(grew(now, 'filegate_door_errors_total', { door: 'http', error: '4xx' }) >= 1, 'http: the 404 under 4xx')
  t.ok(grew(now, 'filegate_door_errors_total', { door: 'sftp', error: 'no_such_file' }) >= 1, 'sftp: the missing file under its status')
  t.ok(grew(now, 'filegate_door_errors_total', { door: 's3', error: 'NoSuchKey' }) >= 1, 's3: the missing key under its error code')
  t.ok(grew(now, 'filegate_door_errors_total', { door: 'mcp', error: 'tool_error' }) >= 1, 'mcp: the failed tool call')
  t.equal(grew(now, 'filegate_door_errors_total', { door: 'http', error: '5xx' }), 0, 'no server error anywhere on http')
  t.ok(value(now, 'filegate_door_sessions', { door: 'sftp' }) >= 1, 'sftp: the held session is open')
  t.ok(value(now, 'filegate_door_sessions', { door: 'mcp' }) >= 1, 'mcp: the client is in a session')
  // The MCP calls are MCP's: the HTTP door does not count the requests that carried them.
  t.ok(grew(now, 'filegate_http_requests_total', { route: '/mcp' }) >= 4, 'the route metrics still count the MCP requests')
  const labels = new Set(now.filter((s) => s.name.startsWith('filegate_door_')).flatMap((s) => Object.keys(s.labels)))
  t.same([...labels].sort(), ['direction', 'door', 'error'], 'only bounded labels: no path, user or key')
  t.notOk(now.some((s) => s.name.startsWith('filegate_door_') && Object.values(s.labels).some((v) => v.includes('bin') || v.includes(gw.login.user))), 'no file or user name in a label')

  // Sessions end with their clients.
  held.client.end()
  await (mcp.transport as StreamableHTTPClientTransport).terminateSession()
  await mcp.client.close()
  await until('the sftp and mcp sessions to end', async () => {
    const s = await scrape(url)
    return value(s, 'filegate_door_sessions', { door: 'sftp' }) === 0 && value(s, 'filegate_door_sessions', { door: 'mcp' }) === 0
  })
  t.pass('no session left open on sftp and mcp')
})

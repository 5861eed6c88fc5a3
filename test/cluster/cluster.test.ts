/**
 * Three filegate nodes on one PostgreSQL, one secret and one staging folder, behind
 * nginx (HTTP API, S3) and HAProxy / nginx stream (SFTP), with the very files of
 * deploy/ (test/helpers/cluster.ts): any node serves any client, and a node killed
 * during uploads loses no committed upload and leaves no partial target, while
 * clients that retry reach another node.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { request } from 'node:http'
import { type Socket, connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import ssh2, { type SFTPWrapper } from 'ssh2'
import t from 'tap'
import { connect } from '../gateways/mcp/client.js'
import { type Cluster, ADMIN_PASSWORD, GUARDED_PASSWORD, filesSession, startCluster } from '../helpers/cluster.js'
import { api } from '../helpers/filegate.js'
import { adminToken, createKey, createShare, viaShare } from '../helpers/share.js'
import { s3Client } from '../helpers/s3-client.js'
const { Client } = ssh2

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// About 40 s alone; the ceiling leaves room for a loaded machine running other files at once.
t.setTimeout(300_000)

type Node = Cluster['nodes'][number]
let cluster: Cluster
let n1: Node, n2: Node, n3: Node
/** Every node directly, then the load balancer. */
let doors: { name: string; url: string }[]
// In a hook, so that the servers already started are stopped when one fails to start.
t.before(async () => {
  cluster = await startCluster(t, { nodes: 3, nginxStream: true })
  ;[n1, n2, n3] = cluster.nodes as [Node, Node, Node]
  doors = [...cluster.nodes.map((n) => ({ name: n.name, url: n.url })), { name: 'nginx', url: cluster.http }]
})

t.test('a session opened on one node goes on through the others and the load balancer; its end is seen everywhere', async (t) => {
  const token = await filesSession(n1.url)
  t.equal((await api(n2.url, token)('POST', '/api/files/cat', { path: '/login/a.txt' }, { body: 'from node2' })).status, 200, 'node2 takes an upload with it')
  for (const d of doors) {
    const res = await api(d.url, token)('GET', '/api/files/cat', { path: '/login/a.txt' })
    t.equal(`${res.status} ${await res.text()}`, '200 from node2', `${d.name} serves it`)
  }
  t.equal((await api(n3.url, token)('DELETE', '/api/session')).status, 200, 'node3 ends it')
  for (const d of doors) t.equal((await api(d.url, token)('GET', '/api/files/ls', { path: '/' })).status, 401, `${d.name} refuses it then`)
})

t.test('a share made on one node, and an API key made on another, work on every node', async (t) => {
  const token = await filesSession(n2.url)
  await api(n2.url, token)('POST', '/api/files/cat', { path: '/shared/s.txt' }, { body: 'shared text' })
  const share = await createShare(n1.url, token, { path: '/shared/', can_read: true })
  const { key } = await createKey(n3.url, await adminToken(n2.url, ADMIN_PASSWORD), 'cluster app')
  for (const d of doors) {
    const bare = await viaShare(d.url, share.id)('GET', '/api/files/cat', { path: '/s.txt' })
    t.equal(`${bare.status} ${await bare.text()}`, '200 shared text', `${d.name}: the share link`)
    const keyed = await viaShare(d.url, share.id, key)('GET', '/api/files/cat', { path: '/s.txt' })
    t.equal(`${keyed.status} ${await keyed.text()}`, '200 shared text', `${d.name}: the API key with the share`)
  }
})

t.test('through nginx, /metrics is not taken for a loopback client (it sets X-Forwarded-For)', async (t) => {
  t.equal((await fetch(`${n1.url}/metrics`)).status, 200, 'a node answers its loopback client')
  t.equal((await fetch(`${cluster.http}/metrics`)).status, 403, 'the proxied request is refused')
})

/**
 * An ssh2 client logged in at `port` with the SFTP channel; the host key's SHA-256 with
 * it. The nodes take a PROXY header from 127.0.0.1, the balancers' address (trust_proxy,
 * sftp.proxy_protocol): a client that goes to a node directly comes from 127.0.0.2.
 */
async function sftpLogin(port: number, user: string, password: string, direct = false): Promise<{ client: InstanceType<typeof Client>; sftp: SFTPWrapper; hostKey: string }> {
  const client = new Client()
  let hostKey = ''
  const sock = await new Promise<Socket>((resolve, reject) => {
    const s = tcpConnect({ port, host: '127.0.0.1', ...(direct ? { localAddress: '127.0.0.2' } : {}) }, () => resolve(s))
    s.once('error', reject)
  })
  await new Promise<void>((resolve, reject) => {
    // A connection closed before the login is done (a node killed while HAProxy had sent it
    // there) ends in 'close' alone with ssh2, and nothing would ever settle this: a failed try.
    client.once('ready', resolve).once('error', reject).once('close', () => reject(new Error('closed before the login was done')))
    client.connect({
      sock,
      username: user,
      password,
      readyTimeout: 20_000,
      hostVerifier: (key: Buffer) => {
        hostKey = sha(key)
        return true
      },
    })
  })
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) => {
    client.once('close', () => reject(new Error('closed before the SFTP channel opened')))
    client.sftp((err, s) => (err ? reject(err) : resolve(s)))
  })
  return { client, sftp, hostKey }
}

/** The S3 key made below, for the uploads of the kill test. */
let s3Key: { access_key_id: string; secret_access_key: string }
const GW_USER = 'carol'
const GW_PASSWORD = 'carol gateway password'

t.test('a gateway user made on one node logs in over SFTP on every node, HAProxy and nginx stream, with one host key', async (t) => {
  const admin = api(n3.url, await adminToken(n3.url, ADMIN_PASSWORD))
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: GW_USER, password: GW_PASSWORD, connection: 'files', root: '/' }) })).status, 200, 'user made on node3')
  const ports = [...cluster.nodes.map((n) => ({ name: n.name, port: n.sftpPort, direct: true })), { name: 'haproxy', port: cluster.sftpPort, direct: false }, { name: 'nginx stream', port: cluster.streamSftpPort!, direct: false }]
  const keys = new Set<string>()
  for (const p of ports) {
    const { client, sftp, hostKey } = await sftpLogin(p.port, GW_USER, GW_PASSWORD, p.direct)
    keys.add(hostKey)
    const body = Buffer.from(`written through ${p.name}`)
    await new Promise<void>((resolve, reject) => sftp.writeFile(`/sftp-${p.name.replace(' ', '-')}.txt`, body, (err) => (err ? reject(err) : resolve())))
    client.end()
    t.same(readFileSync(join(cluster.root, `sftp-${p.name.replace(' ', '-')}.txt`)), body, `${p.name}: logged in, the upload is in the shared storage`)
  }
  t.equal(keys.size, 1, 'every node and balancer shows the same host key')
})

t.test('an S3 key made on one node signs requests on every node and through nginx', async (t) => {
  const admin = api(n1.url, await adminToken(n1.url, ADMIN_PASSWORD))
  const made = await admin('POST', `/admin/api/users/${GW_USER}/s3-keys`)
  t.equal(made.status, 201, 'S3 key made on node1')
  const k = ((await made.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  s3Key = k
  const client = (endpoint: string) => s3Client(t, endpoint, { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key })
  const endpoints = [...cluster.nodes.map((n) => ({ name: n.name, c: client(`http://127.0.0.1:${n.s3Port}`) })), { name: 'nginx', c: client(cluster.s3) }]
  await endpoints[1]!.c.send(new CreateBucketCommand({ Bucket: 'bucket' }))
  for (const e of endpoints) {
    await e.c.send(new PutObjectCommand({ Bucket: 'bucket', Key: `from/${e.name}.txt`, Body: `put through ${e.name}` }))
    for (const r of endpoints) {
      const got = await r.c.send(new GetObjectCommand({ Bucket: 'bucket', Key: `from/${e.name}.txt` }))
      t.equal(await got.Body!.transformToString(), `put through ${e.name}`, `put through ${e.name}, read through ${r.name}`)
    }
  }
})

t.test('failed logins are counted across nodes: the throttle holds wherever the next attempt lands', async (t) => {
  const attempt = (url: string, password: string) => fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'guarded', password }) })
  // LOCAL_PASSWORD_FAILURES (5) wrong passwords spread over the three nodes.
  for (const url of [n1.url, n2.url, n3.url, n1.url, n2.url]) t.equal((await attempt(url, 'not the password')).status, 401, 'a wrong password')
  const res = await attempt(n3.url, GUARDED_PASSWORD)
  t.equal(res.status, 429, 'node3, which saw one failure itself, refuses the sixth attempt')
  // Through nginx, the nodes count the address it forwards for (trust_proxy), not nginx's.
  const other = await fetch(`${cluster.http}/api/session`, { method: 'POST', headers: { 'x-forwarded-for': '192.0.2.8' }, body: JSON.stringify({ label: 'guarded', password: GUARDED_PASSWORD }) })
  t.equal(other.status, 200, 'another client, forwarded by nginx, is not locked out')
})

t.test('an MCP session through nginx is served by any node', async (t) => {
  const token = await filesSession(cluster.http)
  const mcp = await connect(t, cluster.http, token, 'streamable')
  await mcp.call('write', { path: '/mcp/m.txt', content: 'through mcp' })
  for (let i = 0; i < 6; i++) t.match(await mcp.text('ls', { path: '/mcp/' }), /m\.txt/, `call ${i + 1} through nginx`)
  const sid = (mcp.transport as { sessionId?: string }).sessionId
  t.ok(sid, 'a session id')
  for (const n of cluster.nodes) {
    const res = await fetch(`${n.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid!, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'cat', arguments: { path: '/mcp/m.txt' } } }),
    })
    t.match(`${res.status} ${await res.text()}`, /^200 [^]*through mcp/, `${n.name} answers a call in that session`)
  }
})

// ---------------------------------------------------------------------------------
// A node SIGKILLed while uploads run through nginx (HTTP API, S3) and HAProxy (SFTP).

const FILE_BYTES = 768 * 1024
const CHUNK = 32 * 1024
const FILES_PER_CLIENT = 4
/** An upload not over by then counts as failed and is cut, as a client's own timeout would (a slow machine must not fail the test). */
const ATTEMPT_MS = 30_000

interface Tally {
  /** name → content hash of each upload that got its success answer. */
  committed: Map<string, string>
  /** name → the bytes meant for it. */
  meant: Map<string, Buffer>
  failures: number
}

/** POST /api/files/cat through nginx, the body trickled so that the upload is in flight for a while. */
function httpUpload(url: string, token: string, path: string, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${url}/api/files/cat?path=${encodeURIComponent(path)}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-length': body.length } }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
      res.once('error', () => resolve(0))
    })
    req.once('error', () => resolve(0))
    req.setTimeout(ATTEMPT_MS, () => req.destroy())
    void (async () => {
      for (let at = 0; at < body.length && !req.destroyed; at += CHUNK) {
        req.write(body.subarray(at, at + CHUNK))
        await sleep(15)
      }
      req.end()
    })()
  })
}

/** `body` as a stream trickled as httpUpload's. */
function trickle(body: Buffer): Readable {
  return Readable.from(
    (async function* () {
      for (let at = 0; at < body.length; at += CHUNK) {
        yield body.subarray(at, at + CHUNK)
        await sleep(15)
      }
    })(),
  )
}

async function sftpUpload(sftp: SFTPWrapper, path: string, body: Buffer): Promise<void> {
  const handle = await new Promise<Buffer>((resolve, reject) => sftp.open(path, 'w', (err, h) => (err ? reject(err) : resolve(h))))
  for (let at = 0; at < body.length; at += CHUNK) {
    const part = body.subarray(at, at + CHUNK)
    await new Promise<void>((resolve, reject) => sftp.write(handle, part, 0, part.length, at, (err) => (err ? reject(err) : resolve())))
    await sleep(15)
  }
  await new Promise<void>((resolve, reject) => sftp.close(handle, (err) => (err ? reject(err) : resolve())))
}

/** Uploads its files one after the other, each until it gets its success answer (at most 20 tries). */
async function uploader(tally: Tally, names: readonly string[], put: (name: string, body: Buffer) => Promise<boolean>): Promise<void> {
  for (const name of names) {
    const body = randomBytes(FILE_BYTES)
    tally.meant.set(name, body)
    for (let attempt = 1; ; attempt++) {
      if (await put(name, body).catch(() => false)) break
      tally.failures++
      if (attempt === 20) throw new Error(`${name}: no success after ${attempt} tries`)
      await sleep(200)
    }
    tally.committed.set(name, sha(body))
  }
}

t.test('a node SIGKILLed during uploads (HTTP and S3 through nginx, SFTP through HAProxy): no committed upload lost, no partial target, retrying clients succeed on another node', async (t) => {
  const token = await filesSession(cluster.http)
  const http: Tally = { committed: new Map(), meant: new Map(), failures: 0 }
  const sftp: Tally = { committed: new Map(), meant: new Map(), failures: 0 }
  const objects: Tally = { committed: new Map(), meant: new Map(), failures: 0 }
  await api(cluster.http, token)('POST', '/api/files/mkdir', { path: '/kill/' })
  const httpClients = Array.from({ length: 6 }, (_, c) =>
    uploader(
      http,
      Array.from({ length: FILES_PER_CLIENT }, (_, i) => `/kill/http-${c}-${i}.bin`),
      async (name, body) => (await httpUpload(cluster.http, token, name, body)) === 200,
    ),
  )
  const sftpClients = Array.from({ length: 3 }, async (_, c) => {
    const conn: { session: Awaited<ReturnType<typeof sftpLogin>> | null } = { session: null }
    await uploader(
      sftp,
      Array.from({ length: FILES_PER_CLIENT }, (_, i) => `/kill/sftp-${c}-${i}.bin`),
      async (name, body) => {
        try {
          conn.session ??= await sftpLogin(cluster.sftpPort, GW_USER, GW_PASSWORD)
          const { client, sftp } = conn.session
          const timer = setTimeout(() => client.destroy(), ATTEMPT_MS)
          await sftpUpload(sftp, name, body).finally(() => clearTimeout(timer))
          return true
        } catch {
          conn.session?.client.end()
          conn.session = null // a new connection: HAProxy sends it to a node that is up
          return false
        }
      },
    )
    conn.session?.client.end()
  })
  // S3 PUTs through nginx into the bucket "kill" (the same folder), retried by the test, not the SDK.
  const s3 = s3Client(t, cluster.s3, { accessKeyId: s3Key.access_key_id, secretAccessKey: s3Key.secret_access_key }, { maxAttempts: 1 })
  const s3Clients = Array.from({ length: 3 }, (_, c) =>
    uploader(
      objects,
      Array.from({ length: FILES_PER_CLIENT }, (_, i) => `/kill/s3-${c}-${i}.bin`),
      async (name, body) => {
        const put = new PutObjectCommand({ Bucket: 'kill', Key: name.slice('/kill/'.length), Body: trickle(body), ContentLength: body.length })
        await s3.send(put, { abortSignal: AbortSignal.timeout(ATTEMPT_MS) })
        return true
      },
    ),
  )
  // Kill node2 once uploads have committed on the cluster and others are under way.
  while (http.committed.size + sftp.committed.size + objects.committed.size < 3) await sleep(20)
  await n2.kill()
  await Promise.all([...httpClients, ...sftpClients, ...s3Clients])

  t.ok(http.failures > 0, `HTTP uploads were cut by the kill and retried (${http.failures} failed tries)`)
  t.ok(sftp.failures > 0, `SFTP uploads were cut by the kill and retried (${sftp.failures} failed tries)`)
  t.ok(objects.failures > 0, `S3 uploads were cut by the kill and retried (${objects.failures} failed tries)`)
  const dir = join(cluster.root, 'kill')
  for (const tally of [http, sftp, objects]) {
    t.equal(tally.committed.size, tally.meant.size, 'every client got every upload through')
    for (const [name, hash] of tally.committed) {
      const file = join(cluster.root, name)
      t.ok(existsSync(file) && sha(readFileSync(file)) === hash, `${name}: there, byte for byte`)
    }
  }
  const targets = readdirSync(dir).filter((f) => !f.startsWith('.'))
  t.same(targets.sort(), [...http.meant.keys(), ...sftp.meant.keys(), ...objects.meant.keys()].map((n) => n.slice('/kill/'.length)).sort(), 'no other target appeared')
  const debris = readdirSync(dir).filter((f) => f.startsWith('.'))
  t.comment(`hidden temporary files the killed node could not remove: ${debris.length}`)
  // The cluster goes on without node2.
  const after = await filesSession(cluster.http)
  t.equal((await api(cluster.http, after)('GET', '/api/files/ls', { path: '/kill/' })).status, 200, 'the load balancer serves on')
})


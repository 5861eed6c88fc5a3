/**
 * Names on every door (docs/gateways.md, "Names"), each door through a real client:
 * the HTTP API (fetch), MCP (the SDK's client), SFTP (paramiko; rclone and lftp for
 * sync), S3 (the AWS SDK; the aws CLI, s3cmd and rclone for sync). A backslash is an ordinary character where the storage holds it
 * (a local folder, an S3 bucket): a name holding one goes in, is listed, read, renamed
 * and removed. An SMB storage cannot hold it: every door refuses it with a clear error
 * in its own shape. Everywhere, the hidden names of uploads in progress
 * (`.filegate-<id>.part`) are refused, and SFTP refuses a name that is not UTF-8.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import t, { type Test } from 'tap'
import type { ConnectionConfig } from '../../core/config.js'
import { awsCli } from '../helpers/aws-cli.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { s3Client } from '../helpers/s3-client.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { userStorage } from '../helpers/user-storage.js'
import { requireBinary, serverDir } from '../servers/process.js'
import { startSamba } from '../servers/samba.js'
import { connect, textOf } from './mcp/client.js'
import { type Login, paramiko, runCommand } from './sftp/clients.js'

t.setTimeout(600_000)

requireBinary('/usr/bin/aws', 'awscli')
const aws = (d: Doors, dir: string, args: readonly string[]) => awsCli(d.s3, dir, args, 180_000)
const RCLONE = requireBinary('/usr/bin/rclone', 'rclone')
const LFTP = requireBinary('/usr/bin/lftp', 'lftp')
const S3CMD = requireBinary('/usr/bin/s3cmd', 's3cmd')

type Backend = 'local' | 's3' | 'smb'

interface Doors {
  readonly url: string
  /** Bearer token of an HTTP API session on the connection (the same storage as the gateway user's). */
  readonly token: string
  readonly sftp: Login
  readonly s3: { readonly endpoint: string; readonly accessKeyId: string; readonly secretAccessKey: string }
  /** The storage's folder on this machine's disk ('' for an S3 storage). */
  readonly root: string
}

/** filegate with every door on, over one storage: an HTTP session and a gateway user (password and S3 key) on it. */
async function doors(t: Test, backend: Backend): Promise<Doors> {
  const base = serverDir(t, 'names')
  let connection: ConnectionConfig
  let root: string
  if (backend === 'smb') {
    const smb = await startSamba(t)
    connection = { label: 'share', type: 'smb', hostname: smb.hostname, port: smb.port, share: smb.share, domain: smb.domain, username: smb.username, password: smb.password }
    root = smb.dir
  } else {
    const s = await userStorage(t, base, backend)
    connection = s.connection
    root = s.root
  }
  const { app, url } = await startTestServer(t, {
    sftp: { port: 0 },
    s3: { port: 0 },
    admin_password: ADMIN_PASSWORD,
    data_dir: join(base, 'data'),
    connections: [connection],
  })
  const admin = api(url, await adminToken(url))
  const user = `alice${randomBytes(3).toString('hex')}`
  const password = `pw-${randomBytes(6).toString('hex')}`
  const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: user, password, connection: connection.label, root: '/' }) })
  if (made.status !== 200) throw new Error(`adding a user: ${made.status} ${await made.text()}`)
  const key = await admin('POST', `/admin/api/users/${user}/s3-keys`)
  const k = ((await key.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const session = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: connection.label }) })
  const token = ((await session.json()) as { result: { authorization: string } }).result.authorization
  const port = (name: string) => app.gateways.find((g) => g.name === name)!.port!
  return {
    url,
    token,
    sftp: { port: port('sftp'), user, password },
    s3: { endpoint: `http://127.0.0.1:${port('s3')}`, accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key },
    root,
  }
}

const BACKSLASH = 'back\\slash.txt'
const PART = '.filegate-AbC123_-x.part'

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)]))
}

/** A local tree holding backslash names, beside ordinary ones. */
function tree(t: Test): string {
  const dir = join(serverDir(t, 'tree'), 'tree')
  mkdirSync(join(dir, 'sub\\dir'), { recursive: true })
  writeFileSync(join(dir, BACKSLASH), 'a backslash in a name\n')
  writeFileSync(join(dir, 'plain.txt'), 'plain\n')
  writeFileSync(join(dir, 'sub\\dir', 'inner.txt'), 'inside a folder named with a backslash\n')
  writeFileSync(join(dir, 'sub\\dir', '\\lead'), 'a leading backslash\n')
  return dir
}


/** `setModTime: false` where the storage keeps no settable times (S3): rclone's sftp backend otherwise fails each file. */
function rclone(d: Doors, args: readonly string[], opts: { setModTime?: boolean } = {}) {
  // No AWS_CA_BUNDLE (set on some machines): rclone's s3 backend fails to load it over plain http.
  const { AWS_CA_BUNDLE: _, ...rest } = process.env
  const env = {
    ...rest,
    RCLONE_CONFIG: '/dev/null',
    RCLONE_CONFIG_GW_TYPE: 's3',
    RCLONE_CONFIG_GW_PROVIDER: 'Other',
    RCLONE_CONFIG_GW_ACCESS_KEY_ID: d.s3.accessKeyId,
    RCLONE_CONFIG_GW_SECRET_ACCESS_KEY: d.s3.secretAccessKey,
    RCLONE_CONFIG_GW_ENDPOINT: d.s3.endpoint,
    RCLONE_CONFIG_GW_REGION: 'us-east-1',
    RCLONE_CONFIG_GW_FORCE_PATH_STYLE: 'true',
    RCLONE_CONFIG_SF_TYPE: 'sftp',
    RCLONE_CONFIG_SF_HOST: '127.0.0.1',
    RCLONE_CONFIG_SF_PORT: String(d.sftp.port),
    RCLONE_CONFIG_SF_USER: d.sftp.user,
    RCLONE_CONFIG_SF_PASS: '',
    RCLONE_CONFIG_SF_SET_MODTIME: String(opts.setModTime ?? true),
  }
  return (async () => {
    const obscured = await runCommand(RCLONE, ['obscure', d.sftp.password], { env })
    return runCommand(RCLONE, args, { env: { ...env, RCLONE_CONFIG_SF_PASS: obscured.stdout.trim() }, timeoutMs: 180_000 })
  })()
}

/** The names of a folder through the HTTP API. */
async function httpNames(d: Doors, path: string): Promise<string[]> {
  const res = await api(d.url, d.token)('GET', '/api/files/ls', { path })
  const body = (await res.json()) as { results?: { name: string }[] }
  return (body.results ?? []).map((e) => e.name).sort()
}

async function sftpRoundTrip(t: Test, d: Doors, dir: string): Promise<void> {
  const r = await paramiko(
    d.sftp,
    `
import io
d = os.environ['DIR']
n = d + '/sftp\\\\back.txt'
sftp.putfo(io.BytesIO(b'over sftp'), n)
print('listed', sorted(sftp.listdir(d)))
b = io.BytesIO(); sftp.getfo(n, b); print('read', b.getvalue().decode())
sftp.rename(n, d + '/sftp\\\\moved.txt')
print('renamed', sorted(sftp.listdir(d)))
sftp.remove(d + '/sftp\\\\moved.txt')
print('removed', sorted(sftp.listdir(d)))
`,
    { DIR: dir },
  )
  t.equal(r.code, 0, `paramiko: ${r.stderr}`)
  t.match(r.stdout, `listed ['sftp\\\\back.txt']`, 'SFTP: listed under its name')
  t.match(r.stdout, 'read over sftp', 'SFTP: read back')
  t.match(r.stdout, `renamed ['sftp\\\\moved.txt']`, 'SFTP: renamed')
  t.match(r.stdout, 'removed []', 'SFTP: removed')
}

for (const backend of ['local', 's3'] as const) {
  t.test(`${backend}: a backslash name round-trips through every door`, async (t) => {
    const d = await doors(t, backend)
    const http = api(d.url, d.token)
    // A bucket for the S3 door; each door works in a folder of its own inside it.
    t.equal((await http('POST', '/api/files/mkdir', { path: '/bkt/http' })).status, 200)

    // HTTP API
    t.equal((await http('POST', '/api/files/cat', { path: '/bkt/http/http\\back.txt' }, { body: 'over http' })).status, 200, 'HTTP: uploaded')
    t.same(await httpNames(d, '/bkt/http'), ['http\\back.txt'], 'HTTP: listed under its name')
    t.equal(await (await http('GET', '/api/files/cat', { path: '/bkt/http/http\\back.txt' })).text(), 'over http', 'HTTP: read back')
    if (backend === 'local') t.equal(readFileSync(join(d.root, 'bkt', 'http', 'http\\back.txt'), 'utf8'), 'over http', 'stored under that name on the disk')
    t.equal((await http('POST', '/api/files/mv', { from: '/bkt/http/http\\back.txt', to: '/bkt/http/http\\moved.txt' })).status, 200, 'HTTP: renamed')
    t.same(await httpNames(d, '/bkt/http'), ['http\\moved.txt'])
    t.equal((await http('POST', '/api/files/rm', { path: '/bkt/http/http\\moved.txt' })).status, 200, 'HTTP: removed')
    t.same(await httpNames(d, '/bkt/http'), [])

    // MCP
    const mcp = await connect(t, d.url, d.token, 'streamable')
    t.equal(await mcp.text('write', { path: '/bkt/mcp/mcp\\back.txt', content: 'over mcp' }), 'wrote 8 bytes to /bkt/mcp/mcp\\back.txt', 'MCP: written')
    t.equal(await mcp.text('ls', { path: '/bkt/mcp' }), '[FILE] mcp\\back.txt', 'MCP: listed under its name')
    t.equal(await mcp.text('cat', { path: '/bkt/mcp/mcp\\back.txt' }), 'over mcp', 'MCP: read back')
    t.notOk((await mcp.call('mv', { from: '/bkt/mcp/mcp\\back.txt', to: '/bkt/mcp/mcp\\moved.txt' })).isError, 'MCP: renamed')
    t.equal(await mcp.text('ls', { path: '/bkt/mcp' }), '[FILE] mcp\\moved.txt')
    t.notOk((await mcp.call('rm', { path: '/bkt/mcp/mcp\\moved.txt' })).isError, 'MCP: removed')
    t.equal(await mcp.text('ls', { path: '/bkt/mcp' }), '(empty folder)')

    // SFTP
    t.equal((await http('POST', '/api/files/mkdir', { path: '/bkt/sftp' })).status, 200)
    await sftpRoundTrip(t, d, '/bkt/sftp')

    // S3 (no rename in S3: a copy and a delete)
    const s3 = s3Client(t, d.s3.endpoint, d.s3)
    await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: 's3/s3\\back.txt', Body: 'over s3' }))
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'bkt', Prefix: 's3/' }))
    t.same(listed.Contents?.map((o) => o.Key), ['s3/s3\\back.txt'], 'S3: listed under its key')
    const got = await s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 's3/s3\\back.txt' }))
    t.equal(await got.Body!.transformToString(), 'over s3', 'S3: read back')
    await s3.send(new CopyObjectCommand({ Bucket: 'bkt', Key: 's3/s3\\moved.txt', CopySource: `bkt/${encodeURIComponent('s3/s3\\back.txt')}` }))
    await s3.send(new DeleteObjectCommand({ Bucket: 'bkt', Key: 's3/s3\\back.txt' }))
    t.same((await s3.send(new ListObjectsV2Command({ Bucket: 'bkt', Prefix: 's3/' }))).Contents?.map((o) => o.Key), ['s3/s3\\moved.txt'], 'S3: copied and deleted')
    await s3.send(new DeleteObjectCommand({ Bucket: 'bkt', Key: 's3/s3\\moved.txt' }))
    t.same(await httpNames(d, '/bkt/s3'), [], 'S3: removed')
  })

  t.test(`${backend}: aws s3 sync and rclone sync of a tree holding backslash names`, async (t) => {
    const d = await doors(t, backend)
    const src = tree(t)
    const want = walk(src).map((f) => relative(src, f)).sort()
    const dir = serverDir(t, 'clients')
    const mb = await aws(d, dir, ['s3', 'mb', 's3://sync'])
    t.equal(mb.code, 0, `aws s3 mb: ${mb.stderr}`)

    const up = await aws(d, dir, ['s3', 'sync', src, 's3://sync/aws'])
    t.equal(up.code, 0, `aws s3 sync up: ${up.stderr}`)
    if (backend === 'local') t.same(walk(join(d.root, 'sync', 'aws')).map((f) => relative(join(d.root, 'sync', 'aws'), f)).sort(), want, 'aws: every name on the disk as it was')
    const down = join(dir, 'aws-back')
    const back = await aws(d, dir, ['s3', 'sync', 's3://sync/aws', down])
    t.equal(back.code, 0, `aws s3 sync down: ${back.stderr}`)
    t.same(walk(down).map((f) => relative(down, f)).sort(), want, 'aws: the tree came back whole')
    t.equal(readFileSync(join(down, BACKSLASH), 'utf8'), 'a backslash in a name\n')
    const again = await aws(d, dir, ['s3', 'sync', src, 's3://sync/aws'])
    t.equal(again.code, 0, `aws s3 sync again: ${again.stderr}`)
    t.equal(again.stdout.trim(), '', 'a second sync has nothing to do')

    const cfg = join(dir, 's3cfg')
    const host = new URL(d.s3.endpoint).host
    writeFileSync(cfg, `[default]\naccess_key = ${d.s3.accessKeyId}\nsecret_key = ${d.s3.secretAccessKey}\nhost_base = ${host}\nhost_bucket = ${host}\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n`)
    const s3cmd = (args: readonly string[]) => runCommand(S3CMD, ['-c', cfg, ...args], { env: { PATH: process.env.PATH, HOME: dir }, timeoutMs: 180_000 })
    const cup = await s3cmd(['sync', `${src}/`, 's3://sync/s3cmd/'])
    t.equal(cup.code, 0, `s3cmd sync up: ${cup.stderr.slice(-1500)}`)
    const cdown = join(dir, 's3cmd-back')
    mkdirSync(cdown)
    const cback = await s3cmd(['sync', 's3://sync/s3cmd/', `${cdown}/`])
    t.equal(cback.code, 0, `s3cmd sync down: ${cback.stderr.slice(-1500)}`)
    t.same(walk(cdown).map((f) => relative(cdown, f)).sort(), want, 's3cmd: the tree came back whole')

    const rs3 = await rclone(d, ['sync', src, 'gw:sync/rclone'])
    t.equal(rs3.code, 0, `rclone sync (s3): ${rs3.stderr.slice(-1500)}`)
    const check = await rclone(d, ['check', '--download', src, 'gw:sync/rclone'])
    t.equal(check.code, 0, `rclone check --download (s3): ${check.stderr.slice(-1500)}`)
    t.match(check.stderr, '0 differences found')

    const sftpOpts = { setModTime: backend === 'local' }
    const rsf = await rclone(d, ['sync', src, 'sf:sync/rclone-sftp'], sftpOpts)
    t.equal(rsf.code, 0, `rclone sync (sftp): ${rsf.stderr.slice(-1500)}`)
    const checkSf = await rclone(d, ['check', '--download', src, 'sf:sync/rclone-sftp'], sftpOpts)
    t.equal(checkSf.code, 0, `rclone check --download (sftp): ${checkSf.stderr.slice(-1500)}`)
    t.match(checkSf.stderr, '0 differences found')
    if (backend === 'local') {
      const on = join(d.root, 'sync', 'rclone-sftp')
      t.same(walk(on).map((f) => relative(on, f)).sort(), want, 'rclone over sftp: every name on the disk as it was')
    }

    // lftp's mirror -R over its sftp (OpenSSH's ssh underneath; lftp answers the password prompt).
    const ssh = 'ssh -a -x -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o PubkeyAuthentication=no'
    const script = [
      `set sftp:connect-program "${ssh}"`,
      'set net:max-retries 1',
      'set cmd:fail-exit yes',
      `open -u ${d.sftp.user},${d.sftp.password} -p ${d.sftp.port} sftp://127.0.0.1`,
      `mirror -R ${src} /sync/lftp`,
      `mirror /sync/lftp ${join(dir, 'lftp-back')}`,
    ].join('; ')
    const lftp = await runCommand(LFTP, ['-c', script], { timeoutMs: 180_000 })
    t.equal(lftp.code, 0, `lftp mirror -R and back: ${lftp.stderr.slice(-1500)}`)
    t.same(walk(join(dir, 'lftp-back')).map((f) => relative(join(dir, 'lftp-back'), f)).sort(), want, 'lftp: the tree came back whole')
  })
}

t.test('smb: every door refuses a backslash, with the reason', async (t) => {
  const d = await doors(t, 'smb')
  const http = api(d.url, d.token)
  t.equal((await http('POST', '/api/files/mkdir', { path: '/bkt' })).status, 200)
  const res = await http('POST', '/api/files/cat', { path: `/bkt/${BACKSLASH}` }, { body: 'x' })
  t.equal(res.status, 400, 'HTTP: 400')
  t.match(await res.json(), { status: 'error', code: 'INVALID_INPUT', message: /cannot hold a backslash \(\\\) in a name/ })
  t.match(await (await http('GET', '/api/files/cat', { path: `/bkt/${BACKSLASH}` })).json(), { code: 'INVALID_INPUT' }, 'HTTP: a read is refused the same way (never a backslash read as a separator)')
  for (const c of [':', '*', '?', '"', '<', '>', '|']) {
    const r = await http('POST', '/api/files/touch', { path: `/bkt/a${c}b` })
    t.equal(r.status, 400, `HTTP: "${c}" refused too`)
  }

  const mcp = await connect(t, d.url, d.token, 'streamable')
  const w = await mcp.call('write', { path: `/bkt/${BACKSLASH}`, content: 'x' })
  t.equal(w.isError, true)
  t.match(textOf(w), /^INVALID_INPUT: .*cannot hold a backslash/, 'MCP: the reason')

  const r = await paramiko(
    d.sftp,
    `
import io
try:
    sftp.putfo(io.BytesIO(b'x'), '/bkt/back\\\\slash.txt')
    print('stored')
except IOError as e:
    print('refused:', e)
`,
  )
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /refused: .*cannot hold a backslash/, 'SFTP: the reason, in the status message')

  const s3 = s3Client(t, d.s3.endpoint, d.s3, { maxAttempts: 1 })
  const err = await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: BACKSLASH, Body: 'x' })).then(() => null, (e: Error & { $metadata?: { httpStatusCode?: number } }) => e)
  t.match(err, { name: 'InvalidArgument', message: /cannot hold a backslash/ }, 'S3: InvalidArgument with the reason')
  t.equal(err?.$metadata?.httpStatusCode, 400)

  const dir = serverDir(t, 'clients')
  const sync = await aws(d, dir, ['s3', 'sync', tree(t), 's3://bkt/tree'])
  t.not(sync.code, 0, 'aws s3 sync of a tree holding backslash names fails')
  t.match(sync.stderr, /cannot hold a backslash/, `aws says why: ${sync.stderr.slice(0, 300)}`)
  t.equal(readFileSync(join(d.root, 'bkt', 'tree', 'plain.txt'), 'utf8'), 'plain\n', 'the names SMB holds were stored')
  t.same(readdirSync(join(d.root, 'bkt')).sort(), ['tree'], 'nothing stored under another name')
  t.notOk(existsSync(join(d.root, 'bkt', 'back')), 'no folder "back" made of a backslash read as a separator')
})

t.test('the hidden names of uploads in progress are refused on every door', async (t) => {
  const d = await doors(t, 'local')
  const http = api(d.url, d.token)
  t.equal((await http('POST', '/api/files/mkdir', { path: '/bkt' })).status, 200)
  for (const path of [`/bkt/${PART}`, `/bkt/${PART}/x.txt`]) {
    const res = await http('POST', '/api/files/cat', { path }, { body: 'x' })
    t.equal(res.status, 400, `HTTP ${path}: 400`)
    t.match(await res.json(), { code: 'INVALID_INPUT', message: /^"path" names a hidden upload in progress/ })
  }
  const mv = await http('POST', '/api/files/touch', { path: '/bkt/ok.txt' })
  t.equal(mv.status, 200)
  t.match(await (await http('POST', '/api/files/mv', { from: '/bkt/ok.txt', to: `/bkt/${PART}` })).json(), { code: 'INVALID_INPUT', message: /^"to" names a hidden upload/ }, 'HTTP: nor by a rename')

  const mcp = await connect(t, d.url, d.token, 'streamable')
  const w = await mcp.call('write', { path: `/bkt/${PART}`, content: 'x' })
  t.equal(w.isError, true)
  t.match(textOf(w), /^INVALID_INPUT: "path" names a hidden upload in progress/, 'MCP')

  const r = await paramiko(
    d.sftp,
    `
import io
for op, f in [('put', lambda: sftp.putfo(io.BytesIO(b'x'), '/bkt/${PART}')), ('mkdir', lambda: sftp.mkdir('/bkt/${PART}')), ('rename', lambda: sftp.rename('/bkt/ok.txt', '/bkt/${PART}'))]:
    try:
        f()
        print(op, 'done')
    except IOError as e:
        print(op, 'refused:', e)
`,
  )
  t.equal(r.code, 0, r.stderr)
  for (const op of ['put', 'mkdir', 'rename']) t.match(r.stdout, new RegExp(`${op} refused: .*hidden upload in progress`), `SFTP ${op}`)

  const s3 = s3Client(t, d.s3.endpoint, d.s3, { maxAttempts: 1 })
  const err = await s3.send(new PutObjectCommand({ Bucket: 'bkt', Key: `dir/${PART}`, Body: 'x' })).then(() => null, (e: Error) => e)
  t.match(err, { name: 'InvalidArgument', message: /hidden upload in progress/ }, 'S3: InvalidArgument')

  t.same(readdirSync(join(d.root, 'bkt')), ['ok.txt'], 'nothing stored')
})

t.test('SFTP: a name that is not UTF-8 is refused, never merged with another', async (t) => {
  const d = await doors(t, 'local')
  const r = await paramiko(
    d.sftp,
    `
import io
for n in [b'bad\\xff.txt', b'bad\\xfe.txt']:
    try:
        sftp.putfo(io.BytesIO(n), n)
        print('stored', n)
    except IOError as e:
        print('refused:', e)
for op, f in [('mkdir', lambda: sftp.mkdir(b'dir\\xc3')), ('stat', lambda: sftp.stat(b'\\xff')), ('rename', lambda: sftp.rename('ok.txt', b'x\\x80'))]:
    try:
        f()
        print(op, 'done')
    except IOError as e:
        print(op, 'refused:', e)
print('listing', sftp.listdir('/'))
`,
  )
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout.match(/^refused: the path is not valid Unicode \(UTF-8\)$/gm)?.length, 2, `both uploads refused: ${r.stdout}`)
  for (const op of ['mkdir', 'stat']) t.match(r.stdout, new RegExp(`${op} refused: .*UTF-8`), op)
  t.match(r.stdout, /rename refused: .*UTF-8/, 'rename')
  t.match(r.stdout, 'listing []', 'nothing stored')
  t.same(readdirSync(d.root), [], 'nothing on the disk')
})

/**
 * A read-only login: every tool that would change something says so, before anything
 * reaches the storage; reading tools work; a login without share rights is told it may
 * not make links. The bearer is a read-only gateway user's (made through the admin API,
 * checked by the real login service), as the OAuth server grants it to gateway users: the
 * gateway is started with a bearer resolver over `GatewayContext.login`, the seam every
 * bearer goes through. Then the same user's HTTP session token (`POST /api/session`,
 * type `gateway`) sent to the built-in MCP gateway: read-only there too.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { validateConfig } from '../../../core/config.js'
import type { Gateway } from '../../../core/gateway.js'
import { startFilegate } from '../../../front/app.js'
import { silentLogger } from '../../../front/log.js'
import { createMcpGateway } from '../../../gateways/mcp/index.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { checkAnswers } from '../../helpers/openapi.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { KINDS, connect, textOf } from './client.js'

t.test('a read-only login reads, and is refused every change with a clear message', async (t) => {
  const dir = t.testdir({ data: {}, disk: { 'readme.txt': 'read me', sub: {} } })
  let url = ''
  const mcp = createMcpGateway({ publicUrl: () => url, corsOrigins: [], idleSeconds: 60, maxSessions: 10, version: 'test' })
  const gateway: Gateway = {
    name: 'mcp-gateway-users',
    routes: mcp.routes!,
    start: (ctx) =>
      mcp.start({
        ...ctx,
        // The bearer is "<user>:<password>" of a gateway user.
        bearer: async (token, req) => {
          const [user = '', password = ''] = token.split(':')
          const r = await ctx.login.login({ door: 'mcp', user, password, address: req.address, requestId: req.requestId })
          return r.ok ? { ok: true, subject: r.user, fs: r.fs } : { ok: false, reason: 'invalid', message: r.message }
        },
      }),
    stop: () => mcp.stop(),
  }
  const engine = process.env.FILEGATE_HTTP_ENGINE
  const config = validateConfig({
    port: 0,
    workers: 1,
    sftp: { port: 'off' },
    s3: { port: 'off' },
    mcp: { enabled: false },
    admin_password: ADMIN_PASSWORD,
    connections: [{ label: 'disk', type: 'local', path: join(dir, 'disk'), public: true }],
    ...(engine ? { http_engine: engine } : {}),
    data_dir: join(dir, 'data'),
  })
  const app = await startFilegate(config, { logger: silentLogger, gateways: [gateway] })
  t.teardown(() => app.close(0))
  url = `http://127.0.0.1:${app.port}`
  checkAnswers(url)
  const admin = api(url, await adminToken(url))
  const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'reader', password: 'reader-password', connection: 'disk', read_only: true }) })
  t.equal(made.status, 200)

  for (const kind of KINDS) {
    const client = await connect(t, url, 'reader:reader-password', kind)
    t.equal(await client.text('ls', { path: '/' }), '[FILE] readme.txt\n[DIR] sub', `${kind}: ls`)
    t.equal(await client.text('cat', { path: '/readme.txt' }), 'read me')
    t.equal(await client.text('find', { path: '/', pattern: '*.txt' }), '/readme.txt')
    for (const [tool, args] of [
      ['write', { path: '/new.txt', content: 'x' }],
      ['write', { path: '/readme.txt', content: 'x' }],
      ['mkdir', { path: '/made' }],
      ['touch', { path: '/t.txt' }],
      ['mv', { from: '/readme.txt', to: '/moved.txt' }],
      ['rm', { path: '/readme.txt' }],
      ['rm', { path: '/sub', recursive: true }],
    ] as const) {
      const r = await client.call(tool, args)
      t.equal(r.isError, true, `${kind}: ${tool} refused`)
      t.equal(textOf(r), 'FORBIDDEN: this login is read-only: it may list and read, not change anything')
    }
    const share = await client.call('share', { path: '/readme.txt' })
    t.equal(textOf(share), 'FORBIDDEN: this login may not make share links')
  }
  const ls = await connect(t, url, 'reader:reader-password', 'streamable')
  t.equal(await ls.text('ls', { path: '/' }), '[FILE] readme.txt\n[DIR] sub', 'nothing changed')
})

t.test("a read-only gateway user's HTTP session token is read-only at the MCP gateway too", async (t) => {
  const dir = t.testdir({ data: {}, disk: { 'readme.txt': 'read me' } })
  const { url } = await startTestServer(t, { data_dir: join(dir, 'data'), admin_password: ADMIN_PASSWORD, connections: [{ label: 'disk', type: 'local', path: join(dir, 'disk'), public: true }] })
  const admin = api(url, await adminToken(url))
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'reader', password: 'reader-password', connection: 'disk', read_only: true }) })).status, 200)
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'gateway', user: 'reader', password: 'reader-password' }) })
  const token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  const client = await connect(t, url, token, 'streamable')
  t.equal(await client.text('cat', { path: '/readme.txt' }), 'read me', 'it reads')
  const r = await client.call('write', { path: '/new.txt', content: 'x' })
  t.equal(textOf(r), 'FORBIDDEN: this login is read-only: it may list and read, not change anything')
  t.equal(textOf(await client.call('share', { path: '/readme.txt' })), 'FORBIDDEN: this login may not make share links')
  t.equal(await client.text('ls', { path: '/' }), '[FILE] readme.txt', 'nothing was written')
})

t.test("an upload-only gateway user's session at the MCP gateway: writes new files, reads and lists nothing", async (t) => {
  const dir = t.testdir({ data: {}, disk: { 'readme.txt': 'read me' } })
  const { url } = await startTestServer(t, { data_dir: join(dir, 'data'), admin_password: ADMIN_PASSWORD, connections: [{ label: 'disk', type: 'local', path: join(dir, 'disk'), public: true }] })
  const admin = api(url, await adminToken(url))
  const body = { name: 'drop', password: 'drop-password', connection: 'disk', permissions: { can_upload: true, can_create_file: true } }
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify(body) })).status, 200)
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'gateway', user: 'drop', password: 'drop-password' }) })
  const token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  const client = await connect(t, url, token, 'streamable')
  const w = await client.call('write', { path: '/new.txt', content: 'dropped' })
  t.notOk(w.isError, `a new file is written: ${textOf(w)}`)
  t.equal(readFileSync(join(dir, 'disk', 'new.txt'), 'utf8'), 'dropped')
  for (const [tool, args, bit] of [
    ['cat', { path: '/readme.txt' }, 'can_read'],
    ['ls', { path: '/' }, 'can_read'],
    ['write', { path: '/readme.txt', content: 'x' }, 'can_delete'], // replacing a file
    ['mkdir', { path: '/made' }, 'can_create_directory'],
    ['rm', { path: '/readme.txt' }, 'can_delete'],
  ] as const) {
    const r = await client.call(tool, args)
    t.equal(r.isError, true, `${tool} refused`)
    t.match(textOf(r), new RegExp(`^FORBIDDEN: this login may not .*\\(it has no ${bit}\\)`), `${tool}: ${textOf(r)}`)
  }
  t.equal(readFileSync(join(dir, 'disk', 'readme.txt'), 'utf8'), 'read me', 'the existing file is intact')
})

/**
 * @module test/state/state-url.test
 * Choosing the state store (`state_url`, FILEGATE_STATE_URL): anything but a PostgreSQL
 * URL is a configuration error that does not repeat the URL; a filegate on PostgreSQL
 * keeps its records there; an unreachable server stops start-up with an error naming
 * host:port and never the password; while the server is away requests that need the
 * store get 503 UNAVAILABLE, and work again once it is back.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ConfigError } from '../../core/config.js'
import { loadConfig } from '../../front/config-load.js'
import { createLogger } from '../../front/log.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { freePort } from '../servers/process.js'
import { startPostgres } from '../servers/postgres.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

t.test('state_url: PostgreSQL URLs only, never quoted back', async (t) => {
  const secret = 'pw-that-must-not-show'
  for (const url of [`mysql://u:${secret}@db/x`, `u:${secret}@db/x`, `sqlite:///tmp/${secret}.db`, '']) {
    const err = (() => {
      try {
        loadConfig([], { FILEGATE_STATE_URL: url })
      } catch (e) {
        return e
      }
      return null
    })()
    t.ok(err instanceof ConfigError, `refused: ${url.replace(secret, '***')}`)
    t.match((err as Error).message, /state_url must be a PostgreSQL URL, postgres:\/\/user:password@host:port\/database or postgresql:\/\//)
    t.notMatch((err as Error).message, secret)
  }
  const ok = loadConfig([], { FILEGATE_STATE_URL: `postgresql://u:${secret}@db:5433/x?sslmode=require`, FILEGATE_STATE_POOL_SIZE: '3' })
  t.same([ok.state_url, ok.state_pool_size], [`postgresql://u:${secret}@db:5433/x?sslmode=require`, 3])
  t.equal(loadConfig([], {}).state_url, null, 'unset: SQLite')
})

t.test('PostgreSQL unreachable at start: filegate stops, naming host:port, never the password', async (t) => {
  const main = join(ROOT, 'dist', 'front', 'main.js')
  t.ok(existsSync(main), 'dist/ is built')
  const port = await freePort()
  const password = 'pw-that-must-not-show'
  const child = spawn(process.execPath, [main, '--port', '0', '--data-dir', t.testdir()], {
    cwd: ROOT,
    env: { ...process.env, FILEGATE_STATE_URL: `postgres://filegate:${password}@127.0.0.1:${port}/filegate`, FILEGATE_SFTP_PORT: 'off', FILEGATE_S3_PORT: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.equal(code, 1)
  t.match(out, `filegate: filegate could not start: the PostgreSQL state store at 127.0.0.1:${port}: connect ECONNREFUSED`)
  t.notMatch(out, password)
})

t.test('on PostgreSQL: records are kept there; 503 while it is away, then back to work', async (t) => {
  const pg = await startPostgres(t)
  const logged: string[] = []
  const fg = await startTestServer(t, { state_url: pg.url, state_pool_size: 2, s3: { port: 0 } }, createLogger('debug', (line) => logged.push(line)))
  t.match(logged.join('\n'), `"msg":"state store: PostgreSQL","at":"127.0.0.1:${pg.port}"`, 'start-up names where the state is')
  t.notOk(existsSync(join(fg.dataDir, 'state', 'state.db')), 'no SQLite file')
  const token = await tmpSession(fg.url)
  const call = api(fg.url, token)
  t.equal((await call('POST', '/api/files/mkdir', { path: '/shared/' })).status, 200)
  const made = (await (await call('POST', '/api/share', {}, { body: JSON.stringify({ path: '/shared/', can_read: true }) })).json()) as { result: { id: string } }
  t.equal(pg.psql(`SELECT count(*) FROM shares WHERE id = '${made.result.id.replace(/'/g, '')}'`).trim(), '1', 'the share is a row in PostgreSQL')

  await pg.stop()
  let running = false
  t.teardown(async () => {
    if (!running) await pg.start()
  })
  const away = await call('GET', '/api/session')
  t.equal(away.status, 503, 'a request that needs the store: 503, not 500')
  t.match(await away.json(), { status: 'error', code: 'UNAVAILABLE' })
  t.ok(away.headers.get('retry-after'), 'with Retry-After')
  const share = await fetch(`${fg.url}/api/files/ls?path=/&share=${made.result.id}`)
  t.equal(share.status, 503, 'a share link too')
  const oauth = await fetch(`${fg.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'fgc_any', refresh_token: 'x' }),
  })
  t.equal(oauth.status, 503, 'OAuth: 503, not a 400 telling the client its request is wrong')
  t.match(await oauth.json(), { error: 'temporarily_unavailable' })
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '')
  const s3 = await fetch(`http://127.0.0.1:${fg.app.gateways.find((g) => g.name === 's3')!.port}/bucket/key`, {
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=AKIAAAAAAAAAAAAAAAAA/${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${'0'.repeat(64)}`,
      'x-amz-date': amzDate,
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
    },
  })
  t.equal(s3.status, 503, 'S3: 503')
  t.match(await s3.text(), /<Code>ServiceUnavailable<\/Code>/)

  await pg.start()
  running = true
  // The port opens before the server accepts sessions: 503 until then, nothing else.
  const deadline = Date.now() + 60_000
  let res = await call('GET', '/api/session')
  while (res.status === 503 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    res = await call('GET', '/api/session')
  }
  t.equal(res.status, 200, 'back once PostgreSQL is')
  t.equal((await fetch(`${fg.url}/api/files/ls?path=/&share=${made.result.id}`)).status, 200, 'the share link too')
  const metrics = await (await fetch(`${fg.url}/metrics`)).text()
  const figure = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1])
  t.ok(figure('filegate_state_connections') >= 1 && figure('filegate_state_connections') <= 2, 'the store\'s connections, within state_pool_size')
  t.ok(figure('filegate_state_connections_idle') >= 0, 'idle ones')
  t.equal(figure('filegate_state_waiting_queries'), 0, 'none waiting for a connection')
  t.notOk([...logged, metrics].some((x) => x.includes(pg.password)), 'the password is in no log line (outage included) and not in /metrics')
})

t.test('names with control characters (PostgreSQL cannot keep NUL) are refused alike on both stores', async (t) => {
  const pg = await startPostgres(t)
  for (const [store, extra] of [['SQLite', {}], ['PostgreSQL', { state_url: pg.url }]] as const) {
    const fg = await startTestServer(t, { admin_password: 'an admin password', ...extra })
    const register = await fetch(`${fg.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'my\u0000app', redirect_uris: ['http://127.0.0.1:9/cb'] }),
    })
    t.equal(register.status, 400, `${store}: OAuth registration`)
    t.match(await register.json(), { error: 'invalid_client_metadata', error_description: /control character/ })
    const session = (await (await fetch(`${fg.url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: 'an admin password' }) })).json()) as { result: { authorization: string } }
    const key = await api(fg.url, session.result.authorization)('POST', '/admin/api/keys', {}, { body: JSON.stringify({ name: 'my\u0000key' }) })
    t.equal(key.status, 400, `${store}: an API key's name`)
    t.match(await key.json(), { code: 'INVALID_INPUT', message: /control character/ })
  }
})

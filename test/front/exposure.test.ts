/**
 * @module test/front/exposure.test
 * What the configuration exposes (issue 10, item 7): a `local` connection needs its
 * password (delayed and throttled like every login) unless it is marked public;
 * tmp sessions are on by default only for a loopback host, and start-up says which.
 */
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, validateConfig } from '../../core/config.js'
import { loadConfig } from '../../front/config-load.js'
import { logExposure } from '../../front/exposure.js'
import { createLogger } from '../../front/log.js'
import { LOCAL_PASSWORD_FAILURES } from '../../front/sessions.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { expectError } from '../helpers/share.js'

const post = (url: string, body: unknown) => fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify(body) })

t.test('a local connection needs a password or "public": true in the configuration', async (t) => {
  const local = { label: 'files', type: 'local', path: '/srv/files' }
  t.throws(() => validateConfig({ connections: [local] }), { name: 'ConfigError', message: /"password".*"public": true/ }, 'neither: refused, saying what to set')
  t.throws(() => validateConfig({ connections: [{ ...local, password: 'short' }] }), ConfigError, 'a password under 8 characters')
  t.throws(() => validateConfig({ connections: [{ ...local, public: 'yes' }] }), ConfigError, '"public" not a boolean')
  t.throws(() => validateConfig({ connections: [{ ...local, public: true, password: 'long enough' }] }), ConfigError, 'both')
  t.ok(validateConfig({ connections: [{ ...local, password: 'long enough' }] }), 'a password')
  t.ok(validateConfig({ connections: [{ ...local, public: true }] }), 'public')
})

t.test('a local connection with a password: refused without it, delayed, throttled; opened with it', async (t) => {
  const root = t.testdir({ data: {}, files: { 'in.txt': 'inside' } })
  const password = 'local files password'
  const { url } = await startTestServer(t, {
    data_dir: join(root, 'data'),
    connections: [{ label: 'files', type: 'local', path: join(root, 'files'), password }],
  })
  for (const [what, body] of [
    ['no password', { type: 'local' }],
    ['a wrong password', { type: 'local', password: 'not the password' }],
    ['a password that is not a string', { label: 'files', password: 42 }],
  ] as const) {
    const t0 = Date.now()
    await expectError(t, await post(url, body), 401, 'NOT_AUTHENTICATED', what)
    t.ok(Date.now() - t0 >= 250, `${what}: after the fixed delay`)
  }
  const ok = await post(url, { type: 'local', password })
  t.equal(ok.status, 200, 'the right password opens a session')
  const token = ((await ok.json()) as { result: { authorization: string } }).result.authorization
  t.equal(await (await api(url, token)('GET', '/api/files/cat', { path: '/in.txt' })).text(), 'inside', 'on the configured folder')

  const wrong = await Promise.all(Array.from({ length: LOCAL_PASSWORD_FAILURES }, () => post(url, { label: 'files', password: 'guess' }).then((r) => r.status)))
  t.same([...new Set(wrong)], [401], `${LOCAL_PASSWORD_FAILURES} wrong passwords from this address (the success before reset the count)`)
  await expectError(t, await post(url, { type: 'local', password }), 429, 'RATE_LIMITED', 'then even the right password waits out the window')
})

t.test('tmp sessions: on by default for a loopback host only, unless configured', async (t) => {
  t.equal(validateConfig({}).tmp_sessions, true, 'default host 127.0.0.1: on')
  t.equal(validateConfig({ host: '::1' }).tmp_sessions, true, '::1: on')
  t.equal(validateConfig({ host: 'localhost' }).tmp_sessions, true, 'localhost: on')
  t.equal(validateConfig({ host: '0.0.0.0' }).tmp_sessions, false, '0.0.0.0: off')
  t.equal(validateConfig({ host: '192.168.1.10' }).tmp_sessions, false, 'a LAN address: off')
  t.equal(validateConfig({ host: '0.0.0.0', tmp_sessions: true }).tmp_sessions, true, 'explicitly on')
  t.equal(validateConfig({ tmp_sessions: false }).tmp_sessions, false, 'explicitly off on loopback')
  t.equal(loadConfig(['--host', '0.0.0.0'], {}).tmp_sessions, false, 'from the --host flag: off')
  t.equal(loadConfig(['--host', '0.0.0.0'], { FILEGATE_TMP_SESSIONS: 'true' }).tmp_sessions, true, 'FILEGATE_TMP_SESSIONS=true turns them on')
})

t.test('start-up says whether tmp sessions are on, and which local connections are public', async (t) => {
  const said = (config: Record<string, unknown>) => {
    const lines: { level: string; msg: string }[] = []
    logExposure(
      validateConfig(config),
      createLogger('debug', (line) => lines.push(JSON.parse(line) as { level: string; msg: string })),
    )
    return lines
  }
  t.match(said({ host: '0.0.0.0' }), [{ level: 'info', msg: /tmp sessions are off.*non-loopback.*tmp_sessions: true/ }])
  t.match(said({ host: '0.0.0.0', tmp_sessions: true }), [{ level: 'warn', msg: /tmp sessions are on.*anyone who reaches the port/ }])
  t.match(said({ host: '0.0.0.0' }), [{}, { level: 'warn', msg: /public_url is not set: MCP clients are told to log in at http:\/\/0\.0\.0\.0/ }])
  t.equal(said({ host: '0.0.0.0', public_url: 'https://files.example.com' }).length, 1, 'nothing more to say with public_url')
  t.match(said({ connections: [{ type: 'local', path: '/srv', public: true }] }), [{ msg: /tmp sessions are on/ }, { msg: /local connection "local" is public/ }])

  // And a real start-up logs it.
  const lines: string[] = []
  await startTestServer(t, {}, createLogger('info', (line) => lines.push(line)))
  t.ok(lines.some((l) => /tmp sessions are on/.test(l)), 'the server logged it at start-up')
})

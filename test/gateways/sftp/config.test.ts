/**
 * The SFTP gateway's settings: `sftp.port` (a port, 0, or "off") and `sftp.host`, from
 * the config file or FILEGATE_SFTP_PORT / FILEGATE_SFTP_HOST; filegate starts it unless off;
 * its caps and its SSH threads (`sftp.threads`).
 */
import { connect } from 'node:net'
import t from 'tap'
import { ConfigError, DEFAULTS, validateConfig } from '../../../core/config.js'
import { loadConfig } from '../../../front/config-load.js'
import { startTestServer } from '../../helpers/filegate.js'

t.test('settings and their validation', async (t) => {
  const guards = { max_startups: '32:30:256', max_startups_per_address: 16, kex_grace_seconds: 15, login_grace_seconds: 120, max_connections: 0, threads: 0 }
  t.same(DEFAULTS.sftp, { port: 2222, host: null, proxy_protocol: false, ...guards }, 'on, on port 2222 of the service host, by default')
  t.same(loadConfig([], { FILEGATE_SFTP_PORT: 'off' }).sftp, { port: 'off', host: null, proxy_protocol: false, ...guards }, 'FILEGATE_SFTP_PORT=off')
  t.same(loadConfig([], { FILEGATE_SFTP_PORT: '2200', FILEGATE_SFTP_HOST: '0.0.0.0' }).sftp, { port: 2200, host: '0.0.0.0', proxy_protocol: false, ...guards }, 'a port and a host')
  t.same(
    loadConfig([], { FILEGATE_SFTP_MAX_STARTUPS: '5:50:20', FILEGATE_SFTP_MAX_STARTUPS_PER_ADDRESS: '3', FILEGATE_SFTP_KEX_GRACE_SECONDS: '5', FILEGATE_SFTP_LOGIN_GRACE_SECONDS: '30', FILEGATE_SFTP_MAX_CONNECTIONS: '500', FILEGATE_SFTP_THREADS: '3' }).sftp,
    { port: 2222, host: null, proxy_protocol: false, max_startups: '5:50:20', max_startups_per_address: 3, kex_grace_seconds: 5, login_grace_seconds: 30, max_connections: 500, threads: 3 },
    'the caps before login from the environment',
  )
  t.equal(validateConfig({ sftp: { max_startups: '50' } }).sftp.max_startups, '50', 'a lone number: every connection past it is refused')
  for (const bad of ['10:30', '10:130:100', '100:30:10', '0:30:100', 'x', 10]) {
    t.throws(() => validateConfig({ sftp: { max_startups: bad } }), { name: 'ConfigError', message: /sftp\.max_startups must be "start:rate:full"/ }, `max_startups ${JSON.stringify(bad)} is refused`)
  }
  t.throws(() => validateConfig({ sftp: { kex_grace_seconds: 200 } }), { name: 'ConfigError', message: /kex_grace_seconds \(200\) cannot be longer than sftp\.login_grace_seconds/ }, 'the key exchange grace fits in the login grace')
  t.throws(() => validateConfig({ sftp: { max_startups_per_address: 0 } }), { name: 'ConfigError', message: /max_startups_per_address/ }, 'at least one per address')
  t.equal(loadConfig([], { FILEGATE_SFTP_PROXY_PROTOCOL: 'true', FILEGATE_TRUST_PROXY: '["10.0.0.5"]' }).sftp.proxy_protocol, true, 'FILEGATE_SFTP_PROXY_PROTOCOL=true')
  t.throws(() => validateConfig({ sftp: { proxy_protocol: 'yes' } }), { name: 'ConfigError', message: /sftp\.proxy_protocol/ }, 'proxy_protocol is true or false')
  t.throws(() => validateConfig({ sftp: { proxy_protocol: true } }), { name: 'ConfigError', message: /trust_proxy, which is empty/ }, 'proxy_protocol without a balancer to believe')
  t.throws(() => loadConfig([], { FILEGATE_SFTP_PORT: 'of' }), ConfigError, 'a typo in the variable')
  t.throws(() => validateConfig({ sftp: { port: 70000 } }), { name: 'ConfigError', message: /sftp\.port/ }, 'a port out of range names the setting')
  t.throws(() => validateConfig({ sftp: { port: 22, user: 'x' } }), { name: 'ConfigError', message: /sftp: unknown key "user"/ }, 'an unknown key')
  t.throws(() => validateConfig({ sftp: { host: '' } }), { name: 'ConfigError', message: /sftp\.host/ }, 'an empty host')
  t.equal(validateConfig({ sftp: { threads: 2 } }).sftp.threads, 2, 'threads 2: connections spread over two SSH threads')
  t.equal(loadConfig([], { FILEGATE_SFTP_THREADS: 'auto' }).sftp.threads, 'auto', 'FILEGATE_SFTP_THREADS=auto')
  for (const bad of [-1, 65, 'many', 1.5]) {
    t.throws(() => validateConfig({ sftp: { threads: bad } }), { name: 'ConfigError', message: /sftp\.threads/ }, `threads ${JSON.stringify(bad)} is refused`)
  }
})

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('data', (b: Buffer) => {
      s.destroy()
      resolve(b.toString().startsWith('SSH-2.0-'))
    })
    s.once('error', () => resolve(false))
  })

t.test('filegate starts the gateway on its port, or not at all when off', async (t) => {
  const on = await startTestServer(t, { sftp: { port: 0 } })
  const sftp = on.app.gateways.find((g) => g.name === 'sftp')
  t.ok(sftp && sftp.port! > 0, 'listening on a free port')
  t.ok(await accepts(sftp!.port!), 'an SSH server answers there')
  const off = await startTestServer(t, { sftp: { port: 'off' } })
  t.notOk(off.app.gateways.some((g) => g.name === 'sftp'), 'off: no SFTP gateway')
})

/**
 * `sftp.proxy_protocol`: behind a TCP balancer (HAProxy `send-proxy`, nginx stream
 * `proxy_protocol on`) listed in `trust_proxy`, each connection begins with a PROXY
 * header naming the client, and the gateway's failed-login throttle counts that client,
 * not the balancer (which would shut SFTP logins for everyone). From a listed balancer
 * a connection without a valid header is closed; other peers are served as they are.
 */
import { type Socket, connect } from 'node:net'
import ssh2 from 'ssh2'
import t from 'tap'
import { GATEWAY_LOGIN_FAILURES } from '../../../front/gateway-login.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
const { Client } = ssh2

const PASSWORD = 'alice gateway password'

async function gateway(t: Parameters<typeof startTestServer>[0], trust: string[]): Promise<number> {
  const { app, url } = await startTestServer(t, {
    sftp: { port: 0, proxy_protocol: true },
    trust_proxy: trust,
    admin_password: ADMIN_PASSWORD,
    shutdown_grace_seconds: 1,
    connections: [{ label: 'box', type: 'local', path: t.testdir(), public: true }],
  })
  const res = await api(url, await adminToken(url))('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: PASSWORD, connection: 'box', root: '/' }) })
  if (res.status !== 200) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
  return app.gateways.find((g) => g.name === 'sftp')!.port!
}

/** A TCP connection to the gateway that first sends `header`, as a balancer does. */
function balancerSocket(port: number, header: string | null): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      if (header !== null) s.write(header)
      resolve(s)
    })
    s.once('error', reject)
  })
}

/** Logs in as alice over `sock` (or straight to the port): true once ready, false when refused or cut. */
function login(port: number, password: string, sock?: Socket): Promise<boolean> {
  return new Promise((resolve) => {
    const c = new Client()
    c.once('ready', () => {
      c.end()
      resolve(true)
    })
    c.once('error', () => resolve(false))
    c.once('close', () => resolve(false))
    c.connect({ ...(sock ? { sock } : { host: '127.0.0.1', port }), username: 'alice', password, readyTimeout: 20_000, tryKeyboard: false })
  })
}

const from = (client: string, port: number) => `PROXY TCP4 ${client} 127.0.0.1 40000 ${port}\r\n`

t.test('behind a listed balancer, each client named by its PROXY header has its own failed-login count', async (t) => {
  const port = await gateway(t, ['127.0.0.1'])
  for (let i = 0; i < GATEWAY_LOGIN_FAILURES; i++) t.notOk(await login(port, 'wrong password', await balancerSocket(port, from('192.0.2.1', port))), 'a wrong password from 192.0.2.1')
  t.notOk(await login(port, PASSWORD, await balancerSocket(port, from('192.0.2.1', port))), '192.0.2.1 is locked out, even with the right password')
  t.ok(await login(port, PASSWORD, await balancerSocket(port, from('192.0.2.2', port))), '192.0.2.2, behind the same balancer, logs in')
  t.ok(await login(port, PASSWORD, await balancerSocket(port, 'PROXY UNKNOWN\r\n')), "PROXY UNKNOWN (the balancer's own check) counts as the balancer")
})

t.test('from a listed balancer, a connection without a valid PROXY header is closed', async (t) => {
  const port = await gateway(t, ['127.0.0.1'])
  t.notOk(await login(port, PASSWORD), 'no header: the SSH banner is not a header')
  for (const bad of ['PROXY TCP4 192.0.2.1 127.0.0.1 40000\r\n', 'PROXY TCP4 not-an-ip 127.0.0.1 40000 22\r\n', 'PROXY TCP6 192.0.2.1 127.0.0.1 40000 22\r\n', `PROXY TCP4 ${'1'.repeat(120)}\r\n`]) {
    t.notOk(await login(port, PASSWORD, await balancerSocket(port, bad)), `refused: ${JSON.stringify(bad.slice(0, 40))}`)
  }
})

t.test('from a peer that is not a listed balancer, a PROXY header is not believed', async (t) => {
  const port = await gateway(t, ['192.0.2.250'])
  t.ok(await login(port, PASSWORD), 'a plain connection logs in')
  t.notOk(await login(port, PASSWORD, await balancerSocket(port, from('192.0.2.1', port))), 'a header from it is no SSH: the connection fails')
})

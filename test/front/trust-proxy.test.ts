/**
 * `trust_proxy`: behind a load balancer, the failed-password throttle counts each
 * client by the address the balancer forwards for, not the balancer's own address
 * (which would lock everyone out together); from any other peer X-Forwarded-For is
 * ignored, and entries a client wrote itself left of the proxy's prove nothing.
 */
import t, { type Test } from 'tap'
import { startTestServer } from '../helpers/filegate.js'
import { LOCAL_PASSWORD_FAILURES } from '../../front/sessions.js'

const PASSWORD = 'the box password'

async function server(t: Test, trust: string[]): Promise<(xff: string, password: string) => Promise<number>> {
  const { url } = await startTestServer(t, { connections: [{ label: 'box', type: 'local', path: t.testdir(), password: PASSWORD }], trust_proxy: trust })
  return async (xff, password) => {
    const res = await fetch(`${url}/api/session`, { method: 'POST', headers: { 'x-forwarded-for': xff }, body: JSON.stringify({ label: 'box', password }) })
    await res.arrayBuffer()
    return res.status
  }
}

t.test('from a trusted proxy, each forwarded client has its own failed-password count', async (t) => {
  const login = await server(t, ['127.0.0.1'])
  for (let i = 0; i < LOCAL_PASSWORD_FAILURES; i++) t.equal(await login('192.0.2.1', 'wrong password'), 401, 'a wrong password from 192.0.2.1')
  t.equal(await login('192.0.2.1', PASSWORD), 429, '192.0.2.1 is locked out')
  t.equal(await login('192.0.2.2', PASSWORD), 200, '192.0.2.2, behind the same proxy, is not')
  t.equal(await login('192.0.2.2, 192.0.2.1', PASSWORD), 429, 'an address the client put left of its own proves nothing: still 192.0.2.1')
  t.equal(await login('not an address', PASSWORD), 200, 'a malformed header counts as the proxy itself, which has no failures')
})

t.test('without trust_proxy, X-Forwarded-For is ignored: one peer, one count', async (t) => {
  const login = await server(t, [])
  for (let i = 0; i < LOCAL_PASSWORD_FAILURES; i++) t.equal(await login(`192.0.2.${i + 1}`, 'wrong password'), 401, 'a wrong password, another address claimed each time')
  t.equal(await login('192.0.2.99', PASSWORD), 429, 'the peer is locked out whatever it claims')
})

t.test('trust_proxy takes IP addresses only', async (t) => {
  const { validateConfig } = await import('../../core/config.js')
  t.throws(() => validateConfig({ trust_proxy: ['lb.example.com'] }), /trust_proxy must be a list of IP addresses/)
  t.throws(() => validateConfig({ trust_proxy: '10.0.0.5' }), /trust_proxy must be a list of IP addresses/)
  t.same(validateConfig({ trust_proxy: ['10.0.0.5', '::1'] }).trust_proxy, ['10.0.0.5', '::1'])
})

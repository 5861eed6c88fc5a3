/**
 * The one drain (gateways/connection/drain.ts), in process, with real clients; the
 * SIGTERM test (test/reliability/shutdown.test.ts) covers transfers under way on every
 * door. Here:
 * - a gateway stopped on its own (SFTP) drains its part alone: its idle session ends, its
 *   port refuses, the other doors serve on, and a later shutdown has nothing left of it;
 * - a shutdown with only idle sessions (SFTP, MCP over Streamable HTTP and SSE) ends them
 *   at once, long before the grace, and every door's port refuses afterwards.
 */
import { connect as tcpConnect } from 'node:net'
import t from 'tap'
import { tmpSession } from '../helpers/filegate.js'
import { connect } from './mcp/client.js'
import { call, ssh2Sftp } from './sftp/clients.js'
import { startGateway } from './sftp/fixture.js'

/** Whether a TCP connection to the port is refused (nothing listens). */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = tcpConnect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', () => resolve(true))
  })

const closed = (emitter: { once(ev: 'close', fn: () => void): unknown }) => new Promise<void>((resolve) => emitter.once('close', resolve))

t.test('a gateway stopped on its own drains its part alone', async (t) => {
  const gw = await startGateway(t, { config: { s3: { port: 0 } } })
  const held = await ssh2Sftp(t, gw.login)
  t.ok(Array.isArray(await call<unknown[]>(held.sftp.readdir.bind(held.sftp), '/')), 'the session works')
  const gone = closed(held.client)
  await gw.gateway.stop(60_000)
  await gone
  t.pass('the idle SFTP session ended')
  t.ok(await refused(gw.login.port), 'the SFTP port refuses')
  const token = await tmpSession(gw.url)
  t.equal((await fetch(`${gw.url}/api/files/ls?path=/`, { headers: { authorization: `Bearer ${token}` } })).status, 200, 'the HTTP API serves on')
  const started = Date.now()
  await gw.app.close(60_000)
  t.ok(Date.now() - started < 30_000, 'the shutdown after it does not wait for the stopped door')
})

t.test('a shutdown with only idle sessions ends them at once, on every door', async (t) => {
  const gw = await startGateway(t, { config: { s3: { port: 0 } } })
  const s3Port = gw.app.gateways.find((g) => g.name === 's3')!.port!
  const held = await ssh2Sftp(t, gw.login)
  t.ok(Array.isArray(await call<unknown[]>(held.sftp.readdir.bind(held.sftp), '/')), 'the SFTP session works')
  const token = await tmpSession(gw.url)
  const streamable = await connect(t, gw.url, token, 'streamable')
  const sse = await connect(t, gw.url, token, 'sse')
  for (const c of [streamable, sse]) t.ok((await c.client.listTools()).tools.length > 0, 'the MCP session works')
  const sftpGone = closed(held.client)
  const started = Date.now()
  // A grace of a minute: only idle sessions, nothing in flight, so nothing waits for it
  // (the SSE session's event stream is a request in flight on the HTTP port until the
  // MCP door ends the session: the HTTP part could not end before).
  await gw.app.close(60_000)
  t.ok(Date.now() - started < 30_000, `closed long before the grace (${Date.now() - started} ms)`)
  await sftpGone
  t.pass('the SFTP session ended')
  for (const [door, port] of [['http', gw.app.port], ['sftp', gw.login.port], ['s3', s3Port]] as const) t.ok(await refused(port), `the ${door} port refuses`)
})

/**
 * The MCP gateway's transports and their guards, driven by the SDK's own client
 * (Streamable HTTP at /mcp, legacy SSE at /sse) and by raw HTTP where a client would
 * not misbehave: bearer credentials (401 with WWW-Authenticate), the Origin check (403),
 * protocol versions (400), sessions bound to the login that opened them, DELETE, idle
 * timeout, the session bound, and CORS for browser clients; a session served by several
 * nodes sharing one store.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t from 'tap'
import { startTestServer, tmpSession } from '../../helpers/filegate.js'
import { INITIALIZE, KINDS, MCP_HEADERS, connect } from './client.js'

/** Opens a Streamable HTTP session by hand: its id. */
async function initialize(url: string, token: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, ...headers }, body: JSON.stringify(INITIALIZE) })
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${await res.text()}`)
  await res.text()
  return res.headers.get('mcp-session-id')!
}

/** A tools/list on a session: the HTTP status. */
async function listTools(url: string, token: string, sid: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  })
  await res.text()
  return res.status
}

for (const kind of KINDS) {
  t.test(`${kind}: the SDK client lists a folder with [DIR] lines, over many calls in one session`, async (t) => {
    const { url } = await startTestServer(t)
    const token = await tmpSession(url)
    const mcp = await connect(t, url, token, kind)
    const tools = (await mcp.client.listTools()).tools
    t.same(tools.map((x) => x.name).sort(), ['cat', 'find', 'ls', 'mkdir', 'mv', 'rm', 'share', 'stat', 'touch', 'write'])
    t.match(tools.find((x) => x.name === 'ls'), { annotations: { readOnlyHint: true, openWorldHint: false }, outputSchema: { type: 'object' } })
    t.match(tools.find((x) => x.name === 'rm'), { annotations: { readOnlyHint: false, destructiveHint: true } })
    for (let i = 0; i < 5; i++) t.notOk((await mcp.call('mkdir', { path: `/projects/p${i}` })).isError)
    await mcp.call('write', { path: '/notes.md', content: 'hi' })
    t.equal(await mcp.text('ls', { path: '/' }), '[FILE] notes.md\n[DIR] projects')
    t.equal(await mcp.text('ls', { path: '/projects' }), '[DIR] p0\n[DIR] p1\n[DIR] p2\n[DIR] p3\n[DIR] p4')
    // What the tools did is what the HTTP API sees.
    const res = await fetch(`${url}/api/files/ls?path=/`, { headers: { authorization: `Bearer ${token}` } })
    t.same(((await res.json()) as { results: { name: string }[] }).results.map((e) => e.name), ['notes.md', 'projects'])
  })
}

t.test('no bearer, a malformed or unknown one, a revoked or expired one: 401 with WWW-Authenticate', async (t) => {
  const { url } = await startTestServer(t, { session: { ttl_seconds: 2 } })
  for (const path of ['/mcp', '/sse', '/messages?sessionId=x']) {
    // The metadata of the address used: an SSE client checks the resource against /sse (front/oauth/urls.ts).
    const meta = `resource_metadata="${url}/.well-known/oauth-protected-resource${path === '/mcp' ? '/mcp' : '/sse'}"`
    const method = path === '/sse' ? 'GET' : 'POST'
    const none = await fetch(`${url}${path}`, { method, headers: MCP_HEADERS, ...(method === 'POST' ? { body: JSON.stringify(INITIALIZE) } : {}) })
    t.equal(none.status, 401, `${path} without a credential`)
    t.equal(none.headers.get('www-authenticate'), `Bearer ${meta}`)
    const bad = await fetch(`${url}${path}`, { method, headers: { ...MCP_HEADERS, authorization: 'Bearer not-a-token' }, ...(method === 'POST' ? { body: '{}' } : {}) })
    t.equal(bad.status, 401, `${path} with an unknown token`)
    t.match(bad.headers.get('www-authenticate'), new RegExp(`^Bearer ${meta.replace(/[.?/]/g, '\\$&')}, error="invalid_token"`))
    t.match(await bad.json(), { error: 'invalid_token' })
  }
  const basic = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Basic YTpi' }, body: JSON.stringify(INITIALIZE) })
  t.equal(basic.status, 401)
  t.match(basic.headers.get('www-authenticate'), /error="invalid_token"/)

  const revoked = await tmpSession(url, 'rita')
  const sid = await initialize(url, revoked)
  await fetch(`${url}/api/session`, { method: 'DELETE', headers: { authorization: `Bearer ${revoked}` } })
  t.equal(await listTools(url, revoked, sid), 401, 'a revoked token, even on its own session')

  const expiring = await tmpSession(url, 'eve')
  const sid2 = await initialize(url, expiring)
  t.equal(await listTools(url, expiring, sid2), 200)
  const deadline = Date.now() + 30_000
  let status = 200
  while (status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250))
    status = await listTools(url, expiring, sid2)
  }
  t.equal(status, 401, 'an expired token')
})

t.test('Origin: the service\'s own and configured origins pass, any other is 403 (DNS rebinding)', async (t) => {
  const { url } = await startTestServer(t, { cors: { origins: ['https://app.example.com'] } })
  const token = await tmpSession(url)
  const post = (origin: string) =>
    fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, origin }, body: JSON.stringify(INITIALIZE) })
  const evil = await post('http://evil.example')
  t.equal(evil.status, 403)
  t.match(await evil.json(), { error: 'forbidden', error_description: /http:\/\/evil\.example/ })
  const rebound = await post(`http://localhost:${new URL(url).port}`)
  t.equal(rebound.status, 403, 'another name for this host is another origin')
  const own = await post(url)
  t.equal(own.status, 200)
  await own.text()
  const app = await post('https://app.example.com')
  t.equal(app.status, 200)
  t.equal(app.headers.get('access-control-allow-origin'), 'https://app.example.com')
  t.match(app.headers.get('access-control-expose-headers'), /Mcp-Session-Id/)
  await app.text()
  const sse = await fetch(`${url}/sse`, { headers: { authorization: `Bearer ${token}`, origin: 'http://evil.example' } })
  t.equal(sse.status, 403)
  await sse.text()

  const pre = await fetch(`${url}/mcp`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, mcp-session-id, mcp-protocol-version' },
  })
  t.equal(pre.status, 204)
  const allowed = (pre.headers.get('access-control-allow-headers') ?? '').toLowerCase()
  for (const h of ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']) t.ok(allowed.includes(h), `preflight allows ${h}`)
  const exposed = (pre.headers.get('access-control-expose-headers') ?? '').toLowerCase()
  for (const h of ['mcp-session-id', 'www-authenticate']) t.ok(exposed.includes(h), `exposes ${h}`)
  t.match(pre.headers.get('access-control-allow-methods'), /DELETE/)
})

t.test('an unsupported MCP-Protocol-Version is 400', async (t) => {
  const { url } = await startTestServer(t)
  const token = await tmpSession(url)
  const sid = await initialize(url, token)
  t.equal(await listTools(url, token, sid), 200)
  t.equal(await listTools(url, token, sid, { 'mcp-protocol-version': '1999-01-01' }), 400)
})

t.test('a session answers only the login that opened it; DELETE ends it', async (t) => {
  const { url } = await startTestServer(t)
  const alice = await tmpSession(url, 'alice')
  const bob = await tmpSession(url, 'bob')
  const mcp = await connect(t, url, alice, 'streamable')
  const sid = (mcp.transport as { sessionId?: string }).sessionId!
  t.ok(sid.length >= 40, 'a long random session id')
  t.equal(await listTools(url, bob, sid), 404, "bob cannot use alice's session")
  t.equal(await listTools(url, alice, sid), 200)
  const alice2 = await tmpSession(url, 'alice')
  t.equal(await listTools(url, alice2, sid), 200, "another token of alice's (the same user and storage) may")
  t.equal(await listTools(url, alice, 'no-such-session'), 404)
  const other = await fetch(`${url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${bob}`, 'mcp-session-id': sid } })
  t.equal(other.status, 404, "bob cannot end it either")
  await other.text()

  await (mcp.transport as { terminateSession(): Promise<void> }).terminateSession()
  t.equal(await listTools(url, alice, sid), 404, 'ended by DELETE')

  // Legacy SSE: the same binding for the message endpoint.
  const sse = await connect(t, url, alice, 'sse')
  t.equal(await sse.text('ls', { path: '/' }), '(empty folder)')
  const endpoint = (sse.transport as unknown as { _endpoint?: URL })._endpoint
  t.ok(endpoint, 'the stream named its endpoint')
  const stolen = await fetch(endpoint!, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bob}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) })
  t.equal(stolen.status, 404)
  await stolen.text()
})

t.test('sessions end after mcp.session_idle_seconds without a message, not while used', async (t) => {
  const { url } = await startTestServer(t, { mcp: { session_idle_seconds: 1 } })
  const token = await tmpSession(url)
  const sid = await initialize(url, token)
  const busyUntil = Date.now() + 2500
  while (Date.now() < busyUntil) {
    t.equal(await listTools(url, token, sid), 200, 'a session in use stays')
    await new Promise((r) => setTimeout(r, 300))
  }
  const deadline = Date.now() + 30_000
  let status = 200
  while (status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1500))
    status = await listTools(url, token, sid)
  }
  t.equal(status, 404, 'ended when left idle')
})

t.test('the number of sessions is bounded: a full table ends the biggest holder\'s least recently used idle session', async (t) => {
  const { url } = await startTestServer(t, { mcp: { max_sessions: 2 } })
  const a = await tmpSession(url, 'a')
  const b = await tmpSession(url, 'b')
  const first = await initialize(url, a)
  const second = await initialize(url, a)
  t.equal(await listTools(url, a, second), 200)
  const newcomer = await initialize(url, b)
  t.equal(await listTools(url, b, newcomer), 200, 'the newcomer is let in')
  t.equal(await listTools(url, a, first), 404, "the biggest holder's least recently used session made room")
  t.equal(await listTools(url, a, second), 200, 'its other session stays')
})

t.test('nodes sharing the store: the SDK client\'s requests spread over three nodes serve one session; DELETE at one ends it at all', async (t) => {
  const a = await startTestServer(t)
  const b = await startTestServer(t, { data_dir: a.dataDir })
  const c = await startTestServer(t, { data_dir: a.dataDir })
  const token = await tmpSession(a.url, 'alice')
  const bob = await tmpSession(b.url, 'bob')
  // As a load balancer without stickiness would: each HTTP request to the next node.
  const nodes = [a.url, b.url, c.url]
  let next = 0
  const spread = (u: string | URL, init?: RequestInit) => {
    const to = new URL(String(u))
    to.host = new URL(nodes[next++ % nodes.length]!).host
    return fetch(to, init)
  }
  const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: spread })
  const client = new Client({ name: 'spread', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  const text = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult
    t.notOk(r.isError, `${name} ${JSON.stringify(args)}`)
    return r.content[0]?.type === 'text' ? r.content[0].text : ''
  }
  for (let i = 0; i < 3; i++) await text('mkdir', { path: `/p${i}` })
  await text('write', { path: '/notes.md', content: 'hi' })
  t.equal(await text('ls', { path: '/' }), '[FILE] notes.md\n[DIR] p0\n[DIR] p1\n[DIR] p2', 'one session, whichever node answers')
  t.ok(next >= 2 * nodes.length, `the requests went round the three nodes (${next} requests)`)
  const sid = transport.sessionId!
  for (const url of nodes) t.equal(await listTools(url, bob, sid), 404, "another login cannot use it at any node")
  t.equal(await listTools(c.url, token, sid), 200)
  await transport.terminateSession()
  for (const url of nodes) t.equal(await listTools(url, token, sid), 404, 'ended by DELETE, at every node')
})

t.test('mcp.enabled false: no MCP endpoints', async (t) => {
  const { url } = await startTestServer(t, { mcp: { enabled: false } })
  const token = await tmpSession(url)
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify(INITIALIZE) })
  t.equal(res.status, 404)
  await res.text()
})

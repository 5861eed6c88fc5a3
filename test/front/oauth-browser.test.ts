/**
 * @module test/front/oauth-browser.test
 * The whole OAuth dance as an MCP client does it: the SDK's client-side auth
 * (`auth()` from @modelcontextprotocol/sdk: discovery from the MCP resource, dynamic
 * registration, PKCE, the code, tokens, a refresh), with the authorization page
 * driven in a real headless Chromium (Debian's `chromium`, playwright-core) and the
 * loopback redirect received by a tiny server of the test. Three logins: a local
 * connection with its password, a gateway user (read-only), a tmp user id. The
 * tokens are then resolved as the MCP gateway resolves them. And the SDK's MCP client
 * itself, pointed at /mcp and at /sse: sent to the page, logged in, listing a folder
 * with `[DIR]` lines, refreshing its expired token.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

import { join } from 'node:path'
import { type OAuthClientProvider, auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import type { Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { launchBrowser, noBrowser } from '../helpers/browser.js'
import type { BearerResult } from '../../core/gateway.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { type OAuthServer, startOAuthServer, tokenRequest } from '../helpers/oauth.js'
import { changesNothing } from '../../core/permissions.js'

/** The app's loopback listener (RFC 8252): each redirect's query, in order. */
async function callbackServer(t: Test): Promise<{ url: string; next: () => Promise<URLSearchParams> }> {
  const waiting: ((q: URLSearchParams) => void)[] = []
  const arrived: URLSearchParams[] = []
  const server = createServer((req, res) => {
    const u = new URL(req.url!, 'http://127.0.0.1')
    if (u.pathname !== '/callback') return void res.writeHead(404).end() // the browser's favicon request
    const q = u.searchParams
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p id="done">You can close this window.</p>')
    const w = waiting.shift()
    if (w) w(q)
    else arrived.push(q)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    next: () => (arrived.length > 0 ? Promise.resolve(arrived.shift()!) : new Promise((r) => waiting.push(r))),
  }
}

/** An MCP client's OAuth state, in memory. */
class Client implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined
  constructor(readonly redirect: string) {}
  get redirectUrl() {
    return this.redirect
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Test <MCP> client', redirect_uris: [this.redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }
  }
  state() {
    return 'state-123'
  }
  clientInformation() {
    return this.info
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(v: string) {
    this.verifier = v
  }
  codeVerifier() {
    return this.verifier
  }
}

async function list(s: OAuthServer, token: string): Promise<{ names: string[]; readOnly: boolean }> {
  const r: BearerResult = await s.ctx.bearer(token, { resource: `${s.url}/mcp`, address: '127.0.0.1', requestId: 'test' })
  if (!r.ok) throw new Error(`refused: ${r.reason} ${r.message}`)
  try {
    const page = await r.fs.list({ requestId: 'test', signal: new AbortController().signal }, '/')
    return { names: page.entries.map((e) => e.name), readOnly: changesNothing(r.fs.permissions) }
  } finally {
    r.fs.close()
  }
}

/**
 * One client's dance: discovery, registration and the authorization URL (SDK), the
 * page in the browser (`login` fills and submits one form), consent, the code at the
 * loopback listener, tokens (SDK). @returns the client, with its tokens
 */
async function dance(t: Test, s: OAuthServer, page: Page, cb: Awaited<ReturnType<typeof callbackServer>>, login: (page: Page) => Promise<void>, account: RegExp): Promise<Client> {
  const client = new Client(cb.url)
  t.equal(await auth(client, { serverUrl: `${s.url}/mcp` }), 'REDIRECT', 'the SDK discovered the server, registered and wants the browser')
  t.match(client.info, { client_id: /^fgc_/ }, 'registered dynamically')
  const u = client.authorizationUrl!
  t.equal(`${u.origin}${u.pathname}`, `${s.url}/authorize`)
  t.same([u.searchParams.get('code_challenge_method'), u.searchParams.get('resource')], ['S256', `${s.url}/mcp`], 'PKCE S256, for the MCP resource')
  const code = await inBrowser(t, s, page, cb, u, login, account)
  t.equal(await auth(client, { serverUrl: `${s.url}/mcp`, authorizationCode: code }), 'AUTHORIZED', 'the SDK exchanged the code')
  t.match(client.saved, { token_type: /^bearer$/i, access_token: String, refresh_token: /^fgr_/ })
  return client
}

/** The authorization page at `u`: log in, consent; @returns the code the loopback listener got */
async function inBrowser(t: Test, s: OAuthServer, page: Page, cb: Awaited<ReturnType<typeof callbackServer>>, u: URL, login: (page: Page) => Promise<void>, account: RegExp): Promise<string> {
  await page.goto(u.href)
  t.equal(await page.textContent('#client-name'), 'Test <MCP> client', 'the page names the client (escaped: shown as text)')
  t.equal(await page.textContent('#redirect-host'), new URL(cb.url).host, 'and where it will be sent')
  await login(page)
  await page.waitForSelector('#consent-form')
  t.match(await page.textContent('#account'), account, 'consent names the account')
  const arrived = cb.next()
  await page.click('#allow')
  const q = await arrived
  await page.waitForSelector('#done')
  t.equal(q.get('state'), 'state-123', 'the state comes back')
  t.equal(q.get('iss'), s.url, 'with the issuer (RFC 9207)')
  return q.get('code')!
}

t.test('an MCP client logs in three ways through the page, and refreshes', { skip: noBrowser }, async (t) => {
  const dir = t.testdir({ disk: { 'report.txt': 'numbers', archive: {} }, data: {} })
  const s = await startOAuthServer(t, {
    data_dir: join(dir, 'data'),
    admin_password: ADMIN_PASSWORD,
    connections: [{ label: 'disk', type: 'local', path: join(dir, 'disk'), password: 'disk password' }],
  })
  const admin = await adminToken(s.url)
  const made = await fetch(`${s.url}/admin/api/users`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: JSON.stringify({ name: 'carol', password: 'carol password', connection: 'disk', root: '/archive', read_only: true }) })
  t.equal(made.status, 200, 'a read-only gateway user on the connection\'s /archive')
  const { page, failed } = await launchBrowser(t, { width: 1000, failedRequests: false })
  const cb = await callbackServer(t)

  const viaConnection = await dance(
    t,
    s,
    page,
    cb,
    async (p) => {
      await p.fill('#conn-password', 'not the password')
      await p.click('#connection-form button[type=submit]')
      await p.waitForSelector('#error')
      t.match(await p.textContent('#error'), /wrong password for connection "disk"/, 'a wrong password is said on the page')
      await p.selectOption('#connection', 'disk')
      await p.fill('#conn-password', 'disk password')
      await p.click('#connection-form button[type=submit]')
    },
    /connection disk/,
  )
  t.same(await list(s, viaConnection.saved!.access_token), { names: ['archive', 'report.txt'], readOnly: false }, 'the token opens the connection')

  const viaGateway = await dance(
    t,
    s,
    page,
    cb,
    async (p) => {
      await p.fill('#gw-user', 'carol')
      await p.fill('#gw-password', 'carol password')
      await p.click('#gateway-form button[type=submit]')
    },
    /gateway user carol/,
  )
  t.same(await list(s, viaGateway.saved!.access_token), { names: [], readOnly: true }, 'the gateway user\'s root, read-only')

  const viaTmp = await dance(
    t,
    s,
    page,
    cb,
    async (p) => {
      await p.fill('#tmp-user', 'dora')
      await p.click('#tmp-form button[type=submit]')
    },
    /tmp user dora/,
  )
  t.same(await list(s, viaTmp.saved!.access_token), { names: [], readOnly: false }, 'the tmp user\'s space')

  // A refresh, as the SDK does it when its access token is refused.
  const before = viaTmp.saved!
  t.equal(await auth(viaTmp, { serverUrl: `${s.url}/mcp` }), 'AUTHORIZED', 'refreshed by the SDK')
  t.not(viaTmp.saved!.refresh_token, before.refresh_token, 'the refresh token was rotated')
  t.same((await list(s, viaTmp.saved!.access_token)).names, [], 'the new access token works')
  const old = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: before.refresh_token!, client_id: viaTmp.info!.client_id })
  t.match(old.json, { error: 'invalid_grant' }, 'the old refresh token is refused')

  const deleted = await fetch(`${s.url}/admin/api/users/carol`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } })
  t.equal(deleted.status, 200)
  const gone = await s.ctx.bearer(viaGateway.saved!.access_token, { resource: `${s.url}/mcp`, address: '127.0.0.1', requestId: 'test' })
  t.match(gone, { ok: false, reason: 'invalid' }, 'a removed gateway user\'s token opens nothing')
  t.same(failed, [], 'no page errors, no CSP violations')
})

t.test('an MCP client pointed at /mcp or /sse is sent to the page, logs in, lists a folder with [DIR] lines, and refreshes', { skip: noBrowser }, async (t) => {
  const dir = t.testdir({ disk: { 'report.txt': 'numbers', archive: {} }, data: {} })
  const s = await startOAuthServer(t, {
    data_dir: join(dir, 'data'),
    connections: [{ label: 'disk', type: 'local', path: join(dir, 'disk'), password: 'disk password' }],
    oauth: { access_token_seconds: 2 },
  })
  const { page, failed } = await launchBrowser(t, { width: 1000, failedRequests: false })
  const cb = await callbackServer(t)
  const login = async (p: Page) => {
    await p.fill('#conn-password', 'disk password')
    await p.click('#connection-form button[type=submit]')
  }
  for (const [kind, path] of [
    ['streamable', '/mcp'],
    ['sse', '/sse'],
  ] as const) {
    const provider = new Client(cb.url)
    const transport = (p: Client) => (kind === 'streamable' ? new StreamableHTTPClientTransport(new URL(`${s.url}${path}`), { authProvider: p }) : new SSEClientTransport(new URL(`${s.url}${path}`), { authProvider: p }))
    const first = transport(provider)
    await t.rejects(new McpClient({ name: 'test', version: '1' }).connect(first), { message: /Unauthorized/ }, `${kind}: without a token, the client is sent to authorize`)
    t.ok(provider.authorizationUrl, 'the SDK followed WWW-Authenticate to the metadata, registered, and made the authorization URL')
    const code = await inBrowser(t, s, page, cb, provider.authorizationUrl!, login, /connection disk/)
    await first.finishAuth(code)
    const mcp = new McpClient({ name: 'test', version: '1' })
    await mcp.connect(transport(provider))
    t.teardown(() => mcp.close())
    const ls = async () => {
      const r = (await mcp.callTool({ name: 'ls', arguments: { path: '/' } })) as CallToolResult
      return r.content[0]?.type === 'text' ? r.content[0].text : JSON.stringify(r)
    }
    t.match(await ls(), /^\[DIR\] archive$/m, `${kind}: a folder listed with [DIR] lines`)
    const before = provider.saved!.access_token
    await new Promise((r) => setTimeout(r, 2500)) // the access token expires
    if (kind === 'streamable') {
      t.match(await ls(), /\[FILE\] report\.txt/, `${kind}: after the access token expired, the client refreshed it and carried on`)
      t.not(provider.saved!.access_token, before, 'with a new access token')
    } else {
      // The SSE transport's event stream is not re-authorized; a new connection refreshes.
      await mcp.close()
      const again = new McpClient({ name: 'test', version: '1' })
      await again.connect(transport(provider))
      t.teardown(() => again.close())
      const r = (await again.callTool({ name: 'ls', arguments: { path: '/' } })) as CallToolResult
      t.match(r.content[0]?.type === 'text' ? r.content[0].text : '', /\[DIR\] archive/, `${kind}: a new connection refreshed the token`)
      t.not(provider.saved!.access_token, before, 'with a new access token')
    }
  }
  t.same(failed, [], 'no page errors, no CSP violations')
})

/**
 * @module test/front/oauth.test
 * filegate's OAuth server (front/oauth/) over plain HTTP: discovery, registration,
 * the authorization page's forms posted as a browser posts them, the token endpoint,
 * revocation, and the tokens resolved as the MCP gateway resolves them (the gateway
 * context's `bearer`). Each of the specification's failure cases is asserted: wrong
 * verifier, plain or missing PKCE, a replayed code (and what it issued revoked), a
 * foreign redirect URI, another port on a non-loopback redirect, an expired code, an
 * expired access token, a token for another resource, refresh reuse, a revoked token,
 * the wrong client; CSRF; the login throttle; an escaped client name.
 */
import { join } from 'node:path'
import t from 'tap'
import { validateConfig } from '../../core/config.js'
import type { BearerResult } from '../../core/gateway.js'
import { GATEWAY_LOGIN_FAILURES } from '../../front/gateway-login.js'
import { createLogger } from '../../front/log.js'
import { REGISTRATIONS_PER_HOUR } from '../../front/oauth/clients.js'
import { LOCAL_PASSWORD_FAILURES } from '../../front/sessions.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { type OAuthServer, authorize, exchange, flowOf, newClient, openPage, pkce, postPage, registerClient, startOAuthServer, tokenRequest } from '../helpers/oauth.js'

const req = (s: OAuthServer, resource = `${s.url}/mcp`) => ({ resource, address: '127.0.0.1', requestId: 'test' })

async function names(r: BearerResult): Promise<string[]> {
  if (!r.ok) throw new Error(`refused: ${r.reason} ${r.message}`)
  try {
    const page = await r.fs.list({ requestId: 'test', signal: new AbortController().signal }, '/')
    return page.entries.map((e) => e.name)
  } finally {
    r.fs.close()
  }
}

const tmpLogin = (userID = 'alice') => ({ action: 'tmp', userID })

t.test('discovery: the authorization server and the MCP resource describe themselves, to any origin', async (t) => {
  const s = await startOAuthServer(t)
  const res = await fetch(`${s.url}/.well-known/oauth-authorization-server`, { headers: { origin: 'https://app.example.com' } })
  t.equal(res.status, 200)
  t.equal(res.headers.get('access-control-allow-origin'), '*', 'open CORS')
  const m = (await res.json()) as Record<string, unknown>
  t.match(m, {
    issuer: s.url,
    authorization_endpoint: `${s.url}/authorize`,
    token_endpoint: `${s.url}/token`,
    registration_endpoint: `${s.url}/register`,
    revocation_endpoint: `${s.url}/revoke`,
    code_challenge_methods_supported: ['S256'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
  })
  for (const path of ['', '/mcp']) {
    const r = (await (await fetch(`${s.url}/.well-known/oauth-protected-resource${path}`)).json()) as Record<string, unknown>
    t.same(r, { resource: `${s.url}/mcp`, authorization_servers: [s.url], bearer_methods_supported: ['header'], resource_name: 'filegate MCP server' }, `protected resource metadata at ${path || '/'}`)
  }
  const pre = await fetch(`${s.url}/token`, { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } })
  t.equal(pre.status, 204)
  t.equal(pre.headers.get('access-control-allow-origin'), '*', 'the token endpoint takes browser clients')
  const page = await fetch(`${s.url}/authorize`, { headers: { origin: 'https://app.example.com' } })
  t.equal(page.headers.get('access-control-allow-origin'), null, 'the page is not open to other origins')
})

t.test('registration: redirect URIs are checked', async (t) => {
  const s = await startOAuthServer(t)
  for (const uri of ['https://app.example.com/cb', 'http://127.0.0.1/callback', 'http://localhost:8080/cb', 'http://[::1]/cb', 'com.example.app:/oauth']) {
    const res = await registerClient(s.url, { client_name: 'ok', redirect_uris: [uri] })
    t.equal(res.status, 201, `accepted: ${uri}`)
    t.match(await res.json(), { client_id: /^fgc_/, redirect_uris: [uri], token_endpoint_auth_method: 'none' })
  }
  const confidential = await registerClient(s.url, { redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'client_secret_basic' })
  t.match(await confidential.json(), { token_endpoint_auth_method: 'none' }, 'registered as a public client, and told so')
  for (const uri of ['http://app.example.com/cb', 'javascript:alert(1)', 'data:text/html,hi', 'https://app.example.com/cb#frag', 'file:///etc/passwd', 'not a uri', 'https://user:pw@app.example.com/cb']) {
    const res = await registerClient(s.url, { client_name: 'bad', redirect_uris: [uri] })
    t.equal(res.status, 400, `refused: ${uri}`)
    t.match(await res.json(), { error: /^invalid_(redirect_uri|client_metadata)$/, error_description: String }, 'an RFC 7591 error')
  }
  const none = await registerClient(s.url, { client_name: 'no uris' })
  t.equal(none.status, 400, 'redirect_uris are required')
  const grant = await registerClient(s.url, { redirect_uris: ['https://app.example.com/cb'], grant_types: ['client_credentials'] })
  t.match(await grant.json(), { error: 'invalid_client_metadata' }, 'unsupported grant types are refused')
})

t.test('the dance over HTTP: tmp user, code, tokens, refresh rotated, reuse revokes the family', async (t) => {
  const s = await startOAuthServer(t)
  const client = await newClient(s.url)
  const a = await authorize(s.url, client, tmpLogin())
  const first = await exchange(s.url, client, a)
  t.equal(first.status, 200, 'code exchanged')
  t.match(first.json, { token_type: 'Bearer', expires_in: 3600, access_token: String, refresh_token: /^fgr_/ })
  const access = first.json.access_token as string

  // The tmp user's space, as the HTTP API serves it.
  const api = await (await fetch(`${s.url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID: 'alice' }) })).json()
  await fetch(`${s.url}/api/files/mkdir?path=/projects/`, { method: 'POST', headers: { authorization: `Bearer ${(api as { result: { authorization: string } }).result.authorization}` } })
  t.same(await names(await s.ctx.bearer(access, req(s))), ['projects'], 'the access token opens the tmp user\'s space')
  t.same(await names(await s.ctx.bearer(access, req(s, `${s.url}/sse`))), ['projects'], 'also at the SSE address of the same server')

  const second = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token as string, client_id: client })
  t.equal(second.status, 200, 'refreshed')
  t.not(second.json.refresh_token, first.json.refresh_token, 'the refresh token is rotated')
  t.ok((await s.ctx.bearer(second.json.access_token as string, req(s))).ok, 'the new access token works')

  const reuse = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token as string, client_id: client })
  t.equal(reuse.status, 400)
  t.match(reuse.json, { error: 'invalid_grant', error_description: /already used/ }, 'a rotated refresh token is refused')
  t.match(await s.ctx.bearer(second.json.access_token as string, req(s)), { ok: false, reason: 'invalid' }, 'and its reuse revoked the family\'s access tokens')
  const after = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: second.json.refresh_token as string, client_id: client })
  t.match(after.json, { error: 'invalid_grant' }, '…and its refresh tokens')
})

const TEAM_TOOL = { client_id: 'team-tool', redirect_uris: ['http://127.0.0.1/callback'], name: 'Team tool' }

t.test('PKCE: wrong verifier, plain, missing', async (t) => {
  const s = await startOAuthServer(t, { oauth: { clients: [TEAM_TOOL] } })
  const client = await newClient(s.url)
  const a = await authorize(s.url, client, tmpLogin())
  const wrong = await exchange(s.url, client, { ...a, verifier: pkce().verifier })
  t.equal(wrong.status, 400)
  t.match(wrong.json, { error: 'invalid_grant', error_description: /code_verifier/ }, 'wrong verifier refused')
  const noVerifier = await exchange(s.url, client, await authorize(s.url, client, tmpLogin()), { code_verifier: '' })
  t.match(noVerifier.json, { error: 'invalid_request' }, 'missing verifier refused')

  // A configured client is trusted with error redirects (a registered one is not: see the open redirect test).
  const base = { response_type: 'code', client_id: 'team-tool', redirect_uri: 'http://127.0.0.1/callback', state: 'xyz' }
  const plain = await openPage(s.url, { ...base, code_challenge: pkce().verifier, code_challenge_method: 'plain' })
  t.equal(plain.status, 303, 'plain PKCE: back to the client')
  const p = new URL(plain.html).searchParams
  t.same([p.get('error'), p.get('state')], ['invalid_request', 'xyz'], 'with invalid_request and the state')
  t.match(p.get('error_description'), /S256/)
  const long = await openPage(s.url, { ...base, state: 'x'.repeat(1025), code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  t.match(new URL(long.html).searchParams.get('error_description'), /state must be at most 1024/, 'an oversized state is refused')
  const missing = await openPage(s.url, base)
  t.equal(new URL(missing.html).searchParams.get('error'), 'invalid_request', 'no PKCE: refused')
  t.match(new URL(missing.html).searchParams.get('error_description'), /PKCE is required/)
})

t.test('a replayed code is refused and revokes what it issued', async (t) => {
  const s = await startOAuthServer(t)
  const client = await newClient(s.url)
  const a = await authorize(s.url, client, tmpLogin())
  const first = await exchange(s.url, client, a)
  t.ok((await s.ctx.bearer(first.json.access_token as string, req(s))).ok, 'first exchange works')
  const replay = await exchange(s.url, client, a)
  t.match(replay.json, { error: 'invalid_grant', error_description: /already used/ }, 'the replay is refused')
  t.match(await s.ctx.bearer(first.json.access_token as string, req(s)), { ok: false, reason: 'invalid' }, 'the access token it issued is revoked')
  const refresh = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token as string, client_id: client })
  t.match(refresh.json, { error: 'invalid_grant' }, 'and its refresh token')
})

t.test('a code issued by one node is exchanged at another; replayed at a third, it is refused and revokes what it issued everywhere', async (t) => {
  const origin = 'http://files.example.test'
  const resource = `${origin}/mcp`
  const a = await startOAuthServer(t, { public_url: origin })
  const b = await startOAuthServer(t, { public_url: origin, data_dir: a.dataDir })
  const c = await startOAuthServer(t, { public_url: origin, data_dir: a.dataDir })
  const client = await newClient(a.url)
  const code = await authorize(a.url, client, tmpLogin(), { resource })
  const first = await exchange(b.url, client, code, { resource })
  t.equal(first.status, 200, 'exchanged at another node')
  const access = first.json.access_token as string
  t.ok((await c.ctx.bearer(access, { resource, address: '127.0.0.1', requestId: 'test' })).ok, 'its access token works at a third')
  const replay = await exchange(c.url, client, code, { resource })
  t.match(replay.json, { error: 'invalid_grant', error_description: /already used/ }, 'the replay at the third node is refused')
  for (const [name, node] of [['a', a], ['b', b], ['c', c]] as const) {
    t.match(await node.ctx.bearer(access, { resource, address: '127.0.0.1', requestId: 'test' }), { ok: false, reason: 'invalid' }, `the access token it issued is revoked at node ${name}`)
  }
  const refresh = await tokenRequest(a.url, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token as string, client_id: client })
  t.match(refresh.json, { error: 'invalid_grant' }, 'and its refresh token')
})

t.test('redirect URIs: foreign ones shown on the page, never redirected to; loopback on any port', async (t) => {
  const s = await startOAuthServer(t)
  const loopback = await newClient(s.url)
  const web = await newClient(s.url, 'https://app.example.com/cb')
  const q = (client_id: string, redirect_uri: string) => ({ response_type: 'code', client_id, redirect_uri, code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  for (const [client, uri] of [
    [loopback, 'https://evil.example.com/callback'],
    [loopback, 'http://127.0.0.1/other-path'],
    [web, 'https://app.example.com:8443/cb'],
    [web, 'https://app.example.com/cb/../evil'],
  ] as const) {
    const page = await openPage(s.url, q(client, uri))
    t.equal(page.status, 400, `refused: ${uri}`)
    t.match(page.html, /is not one this client registered/, 'said on the page')
  }
  const unknown = await openPage(s.url, q('fgc_nobody', 'http://127.0.0.1/callback'))
  t.match([unknown.status, unknown.html], [400, /unknown client/], 'an unknown client is shown on the page too')
  const other = await authorize(s.url, loopback, tmpLogin(), { redirect: 'http://127.0.0.1:49152/callback' })
  t.ok(other.code, 'a loopback redirect on another port is accepted (RFC 8252)')
  const mismatch = await exchange(s.url, loopback, { ...other, redirect: 'http://127.0.0.1:49153/callback' })
  t.match(mismatch.json, { error: 'invalid_grant', error_description: /redirect_uri/ }, 'but the token request must name the same one')
})

t.test('open redirect: a registered client\'s request errors are shown on the page, never redirected (RFC 9700 §4.11.2)', async (t) => {
  const s = await startOAuthServer(t, { oauth: { clients: [{ ...TEAM_TOOL, redirect_uris: ['https://team.example.com/cb'] }] } })
  // Anyone may register a client whose redirect URI is a site of theirs, then send a victim a link that fails on purpose.
  const evil = await newClient(s.url, 'https://evil.example.com/landing')
  const bad = [
    { response_type: 'token', code_challenge: pkce().challenge, code_challenge_method: 'S256' },
    { response_type: 'code' },
    { response_type: 'code', code_challenge: pkce().verifier, code_challenge_method: 'plain' },
    { response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: 'https://other.example.com/mcp' },
    { response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'x'.repeat(2000) },
  ]
  for (const q of bad) {
    const page = await openPage(s.url, { client_id: evil, redirect_uri: 'https://evil.example.com/landing', ...q })
    t.equal(page.status, 400, `no redirect for ${JSON.stringify(q).slice(0, 80)}`)
    t.notMatch(page.html, /evil\.example\.com/, 'the page does not send the browser there either')
    t.match(page.html, /Authorization failed/, 'the error is on the page')
  }
  const configured = await openPage(s.url, { client_id: 'team-tool', redirect_uri: 'https://team.example.com/cb', response_type: 'token', state: 's1' })
  t.equal(configured.status, 303, 'a configured client (the operator\'s) still gets its errors back')
  t.same([new URL(configured.html).origin, new URL(configured.html).searchParams.get('error')], ['https://team.example.com', 'unsupported_response_type'])
  const ok = await openPage(s.url, { client_id: evil, redirect_uri: 'https://evil.example.com/landing', response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  t.match([ok.status, ok.html], [200, /evil\.example\.com/], 'a valid request from a registered client shows the login page, naming where it goes back to')
})

t.test('the wrong client, an unknown client, another resource', async (t) => {
  const s = await startOAuthServer(t)
  const one = await newClient(s.url)
  const two = await newClient(s.url)
  const a = await authorize(s.url, one, tmpLogin())
  t.match((await exchange(s.url, two, a)).json, { error: 'invalid_grant', error_description: /another client/ }, 'a code of another client is refused')
  const unknown = await exchange(s.url, 'fgc_nobody', await authorize(s.url, one, tmpLogin()))
  t.equal(unknown.status, 401)
  t.match(unknown.json, { error: 'invalid_client' }, 'an unknown client is invalid_client (401)')

  const target = await openPage(s.url, { response_type: 'code', client_id: one, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: 'https://other.example.com/mcp' })
  t.match([target.status, target.html], [400, /MCP endpoint[\s\S]*invalid_target/], 'a request for another resource is refused (on the page: a registered client)')
  const ok = await exchange(s.url, one, await authorize(s.url, one, tmpLogin()))
  t.match(await s.ctx.bearer(ok.json.access_token as string, req(s, 'https://other.example.com/mcp')), { ok: false, reason: 'audience' }, 'a token used for another resource: audience')
  const refresh = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: ok.json.refresh_token as string, client_id: two })
  t.match(refresh.json, { error: 'invalid_grant', error_description: /another client/ }, 'a refresh token of another client is refused')
})

t.test('expiry: codes and access tokens', async (t) => {
  const s = await startOAuthServer(t, { oauth: { code_seconds: 1, access_token_seconds: 1 } })
  const client = await newClient(s.url)
  const late = await authorize(s.url, client, tmpLogin())
  await new Promise((r) => setTimeout(r, 1500))
  t.match((await exchange(s.url, client, late)).json, { error: 'invalid_grant', error_description: /expired/ }, 'an expired code is refused')
  const ok = await exchange(s.url, client, await authorize(s.url, client, tmpLogin()))
  t.equal(ok.json.expires_in, 1)
  await new Promise((r) => setTimeout(r, 1500))
  t.match(await s.ctx.bearer(ok.json.access_token as string, req(s)), { ok: false, reason: 'expired' }, 'an expired access token: expired')
  const refreshed = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: ok.json.refresh_token as string, client_id: client })
  t.ok((await s.ctx.bearer(refreshed.json.access_token as string, req(s))).ok, 'a refresh gives a working one')
})

t.test('revocation: a revoked token and its family are refused', async (t) => {
  const s = await startOAuthServer(t)
  const client = await newClient(s.url)
  const other = await newClient(s.url)
  const tok = (await exchange(s.url, client, await authorize(s.url, client, tmpLogin()))).json
  const byOther = await fetch(`${s.url}/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tok.refresh_token as string, client_id: other }).toString() })
  t.equal(byOther.status, 200, 'RFC 7009: 200 whatever the token')
  t.ok((await s.ctx.bearer(tok.access_token as string, req(s))).ok, 'another client cannot revoke it')
  const res = await fetch(`${s.url}/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tok.refresh_token as string, client_id: client }).toString() })
  t.equal(res.status, 200)
  t.match(await s.ctx.bearer(tok.access_token as string, req(s)), { ok: false, reason: 'invalid', message: /revoked/ }, 'the access token is refused')
  t.match((await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: tok.refresh_token as string, client_id: client })).json, { error: 'invalid_grant' }, 'the refresh token too')

  const tok2 = (await exchange(s.url, client, await authorize(s.url, client, tmpLogin()))).json
  await fetch(`${s.url}/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tok2.access_token as string, client_id: client }).toString() })
  t.match((await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: tok2.refresh_token as string, client_id: client })).json, { error: 'invalid_grant' }, 'revoking the access token revokes its refresh token')
})

t.test('the page: CSRF, foreign origins, an escaped client name, its headers', async (t) => {
  const s = await startOAuthServer(t)
  const res = await registerClient(s.url, { client_name: '<img src=x onerror=alert(1)>"Evil"', redirect_uris: ['http://127.0.0.1/callback'] })
  const client = ((await res.json()) as { client_id: string }).client_id
  const page = await openPage(s.url, { response_type: 'code', client_id: client, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  t.equal(page.status, 200)
  t.notMatch(page.html, /<img/, 'the client-supplied name is not markup')
  t.match(page.html, /&#60;img src=x onerror=alert\(1\)&#62;&#34;Evil&#34;/, 'it is shown escaped')
  t.match(page.html, /<code id="redirect-host">127\.0\.0\.1<\/code>/, 'with its redirect host')
  t.notMatch(page.html, /<script/, 'no script at all')
  const head = await fetch(`${s.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`)
  t.equal(head.headers.get('x-frame-options'), 'DENY')
  t.match(head.headers.get('content-security-policy'), /default-src 'none'.*frame-ancestors 'none'/)
  t.match(head.headers.get('set-cookie'), /HttpOnly; SameSite=Strict/)

  const flow = flowOf(page.html, 'tmp-form')
  const noCookie = await postPage(s.url, '', { flow, action: 'tmp', userID: 'alice' })
  t.equal(noCookie.status, 403, 'a form without this browser\'s cookie is refused')
  const otherCookie = await postPage(s.url, 'filegate_oauth=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', { flow, action: 'tmp', userID: 'alice' })
  t.equal(otherCookie.status, 403, 'another browser\'s cookie too')
  const foreign = await postPage(s.url, page.cookie, { flow, action: 'tmp', userID: 'alice' }, { origin: 'https://evil.example.com' })
  t.equal(foreign.status, 403, 'a post from another origin is refused')
  const forged = await postPage(s.url, page.cookie, { flow: flow.slice(0, -4) + 'AAAA', action: 'allow' })
  t.equal(forged.status, 400, 'a tampered flow is refused')
  const skip = await postPage(s.url, page.cookie, { flow, action: 'allow' })
  t.match([skip.status, skip.html], [400, /log in first/], 'consent without a login is refused')
  const deny = await postPage(s.url, page.cookie, { flow: flowOf((await postPage(s.url, page.cookie, { flow, action: 'tmp', userID: 'alice' })).html, 'deny-form'), action: 'deny' })
  t.equal(deny.status, 303)
  t.equal(new URL(deny.html).searchParams.get('error'), 'access_denied', 'deny: access_denied back to the client')
})

t.test('logins on the page: a local connection\'s password, throttled like the API\'s', async (t) => {
  const dir = t.testdir({ files: { 'hello.txt': 'hi' }, data: {}, data2: {} })
  const conf = { connections: [{ label: 'disk', type: 'local', path: join(dir, 'files'), password: 'the right password' }], tmp_sessions: false }
  const s = await startOAuthServer(t, { ...conf, data_dir: join(dir, 'data') })
  const client = await newClient(s.url)
  const q = { response_type: 'code', client_id: client, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256' }
  const page = await openPage(s.url, q)
  t.notMatch(page.html, /tmp-form/, 'no tmp login where tmp sessions are off')
  const flow = flowOf(page.html, 'connection-form')
  for (let i = 0; i < LOCAL_PASSWORD_FAILURES; i++) {
    const wrong = await postPage(s.url, page.cookie, { flow, action: 'connection', label: 'disk', password: `wrong ${i}` })
    t.equal(wrong.status, 401)
    t.match(wrong.html, /wrong password for connection &#34;disk&#34;/, 'a wrong password is said on the page')
  }
  const locked = await postPage(s.url, page.cookie, { flow, action: 'connection', label: 'disk', password: 'the right password' })
  t.equal(locked.status, 429, 'then the address is throttled, as POST /api/session is')
  const api = await fetch(`${s.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk', password: 'the right password' }) })
  t.equal(api.status, 429, 'one throttle for both')

  const s2 = await startOAuthServer(t, { ...conf, data_dir: join(dir, 'data2') })
  const c2 = await newClient(s2.url)
  const tok = (await exchange(s2.url, c2, await authorize(s2.url, c2, { action: 'connection', label: 'disk', password: 'the right password' }))).json
  t.same(await names(await s2.ctx.bearer(tok.access_token as string, req(s2))), ['hello.txt'], 'the right password opens the connection')
})

t.test('pre-registered clients only: registration off, configured clients checked at start-up', async (t) => {
  const s = await startOAuthServer(t, { oauth: { dynamic_registration: false, clients: [{ client_id: 'team-tool', redirect_uris: ['http://127.0.0.1/callback'], name: 'Team tool' }] } })
  const m = (await (await fetch(`${s.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
  t.equal(m.registration_endpoint, undefined, 'no registration endpoint announced')
  const res = await registerClient(s.url, { redirect_uris: ['http://127.0.0.1/callback'] })
  t.equal(res.status, 403, 'and registration is refused')
  t.match(await res.json(), { error: 'access_denied', error_description: /registration is off/ })
  const tok = await exchange(s.url, 'team-tool', await authorize(s.url, 'team-tool', tmpLogin()))
  t.equal(tok.status, 200, 'the configured client goes through the dance')
  t.ok((await s.ctx.bearer(tok.json.access_token as string, req(s))).ok)
  for (const bad of [
    { clients: [{ client_id: 'x', redirect_uris: ['http://app.example.com/cb'] }] },
    { clients: [{ client_id: 'x', redirect_uris: [] }] },
    { clients: [{ client_id: 'has space', redirect_uris: ['https://a.example.com/cb'] }] },
    { clients: [{ client_id: 'x', redirect_uris: ['https://a.example.com/cb'], secret: 's' }] },
    { code_seconds: 0 },
    { code_seconds: 61 },
  ]) {
    t.throws(() => validateConfig({ oauth: bad }), { name: 'ConfigError', message: /^oauth/ }, `refused: ${JSON.stringify(bad)}`)
  }
})

t.test('registration is bounded per address', async (t) => {
  const s = await startOAuthServer(t)
  for (let i = 0; i < REGISTRATIONS_PER_HOUR; i++) await newClient(s.url)
  const over = await registerClient(s.url, { redirect_uris: ['http://127.0.0.1/callback'] })
  t.equal(over.status, 429)
  t.match(await over.json(), { error: 'too_many_requests' }, `the ${REGISTRATIONS_PER_HOUR + 1}th registration within an hour is refused`)
})

t.test('a registration flood from many addresses: counted per network, unused clients make room, real clients keep working', async (t) => {
  const PER_HOUR = 4
  const MAX = 30
  const s = await startOAuthServer(t, { trust_proxy: ['127.0.0.1'], oauth: { max_clients: MAX, registrations_per_hour: PER_HOUR } })
  const from = (address: string) =>
    fetch(`${s.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify({ client_name: 'flood', redirect_uris: ['http://127.0.0.1/callback'] }),
    })
  // One network's addresses count together: an IPv4 /24, an IPv6 /56.
  for (let i = 1; i <= PER_HOUR; i++) t.equal((await from(`198.51.100.${i}`)).status, 201, `198.51.100.${i} registers`)
  const sameNet = await from('198.51.100.200')
  t.equal(sameNet.status, 429, 'another address of the same /24 is refused')
  t.match(await sameNet.json(), { error: 'too_many_requests', error_description: /too many client registrations from this network \(198\.51\.100\.0\/24\): try again in \d+ minutes/ })
  for (let i = 1; i <= PER_HOUR; i++) t.equal((await from(`2001:db8:0:${i}::1`)).status, 201, `2001:db8:0:${i}::1 registers`)
  t.equal((await from('2001:db8:0:ff::9')).status, 429, 'another /64 of the same IPv6 /56 is refused')
  t.equal((await from('2001:db8:0:100::1')).status, 201, 'the next /56 is another network')

  // A real client: registered, then used (a token issued to it).
  const real = await newClient(s.url)
  t.equal((await exchange(s.url, real, await authorize(s.url, real, tmpLogin()))).status, 200, 'a real client gets its tokens')

  // The flood: several times the table's size, from many networks (each within its hourly count).
  let refused = 0
  for (let n = 0; n < 3 * MAX; n++) if ((await from(`203.0.${n / PER_HOUR | 0}.${(n % PER_HOUR) + 1}`)).status !== 201) refused++
  t.equal(refused, 0, `a full table takes new registrations (${3 * MAX} made past a table of ${MAX}): unused clients make room`)

  const again = await exchange(s.url, real, await authorize(s.url, real, tmpLogin()))
  t.equal(again.status, 200, 'the client in use was kept: it still goes through the dance')
  const late = await registerClient(s.url, { client_name: 'late', redirect_uris: ['http://127.0.0.1/callback'] })
  t.equal(late.status, 201, 'a new real client registers during the flood…')
  const lateId = ((await late.json()) as { client_id: string }).client_id
  t.equal((await exchange(s.url, lateId, await authorize(s.url, lateId, tmpLogin('bob')))).status, 200, '…and gets its tokens')

  // Only a table full of clients in use refuses.
  const full = await startOAuthServer(t, { oauth: { max_clients: 2 } })
  for (const user of ['u1', 'u2']) {
    const c = await newClient(full.url)
    await exchange(full.url, c, await authorize(full.url, c, tmpLogin(user)))
  }
  const none = await registerClient(full.url, { redirect_uris: ['http://127.0.0.1/callback'] })
  t.equal(none.status, 503, 'every client in use: no room')
  t.match(await none.json(), { error: 'temporarily_unavailable', error_description: /in use/ })
})

t.test('gateway user logins on the page are throttled as the gateways\' are', async (t) => {
  const s = await startOAuthServer(t, { admin_password: ADMIN_PASSWORD })
  const admin = await adminToken(s.url)
  await fetch(`${s.url}/admin/api/users`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: JSON.stringify({ name: 'erin', password: 'erin password', connection: 'tmp', root: '/' }) })
  const client = await newClient(s.url)
  const page = await openPage(s.url, { response_type: 'code', client_id: client, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  const flow = flowOf(page.html, 'gateway-form')
  const passthrough = await postPage(s.url, page.cookie, { flow, action: 'gateway', user: 'erin@disk', password: 'x' })
  t.match([passthrough.status, passthrough.html], [400, /pass-through login/], 'a pass-through name is sent to the connection form')
  for (let i = 0; i < GATEWAY_LOGIN_FAILURES; i++) {
    const wrong = await postPage(s.url, page.cookie, { flow, action: 'gateway', user: 'erin', password: `wrong ${i}` })
    t.equal(wrong.status, 401, `wrong password ${i + 1}`)
  }
  const locked = await postPage(s.url, page.cookie, { flow, action: 'gateway', user: 'erin', password: 'erin password' })
  t.equal(locked.status, 429, 'then the address is throttled')
  t.match(locked.html, /too many failed gateway logins/)
})

t.test('the secrets of the dance never reach the log', async (t) => {
  const dir = t.testdir({ files: {}, data: {} })
  const lines: string[] = []
  const s = await startOAuthServer(
    t,
    { data_dir: join(dir, 'data'), admin_password: ADMIN_PASSWORD, connections: [{ label: 'disk', type: 'local', path: join(dir, 'files'), password: 'disk password 123' }] },
    createLogger('debug', (line) => lines.push(line)),
  )
  const admin = await adminToken(s.url)
  await fetch(`${s.url}/admin/api/users`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: JSON.stringify({ name: 'gus', password: 'gus password 456', connection: 'tmp', root: '/' }) })
  const client = await newClient(s.url)
  const secrets: Record<string, string> = { 'admin password': ADMIN_PASSWORD, 'local password': 'disk password 123', 'gateway password': 'gus password 456' }
  const page = await openPage(s.url, { response_type: 'code', client_id: client, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  await postPage(s.url, page.cookie, { flow: flowOf(page.html, 'connection-form'), action: 'connection', label: 'disk', password: 'wrong disk guess' })
  await postPage(s.url, page.cookie, { flow: flowOf(page.html, 'gateway-form'), action: 'gateway', user: 'gus', password: 'wrong gus guess' })
  secrets['wrong passwords'] = 'wrong disk guess'
  secrets['wrong gateway password'] = 'wrong gus guess'
  secrets.cookie = page.cookie.split('=')[1]!
  secrets.flow = flowOf(page.html, 'tmp-form')
  for (const login of [
    { action: 'connection', label: 'disk', password: 'disk password 123' },
    { action: 'gateway', user: 'gus', password: 'gus password 456' },
  ]) {
    const a = await authorize(s.url, client, login)
    const tok = (await exchange(s.url, client, a)).json
    const next = (await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: tok.refresh_token as string, client_id: client })).json
    t.ok((await s.ctx.bearer(next.access_token as string, req(s))).ok, `${login.action}: the dance went through`)
    Object.assign(secrets, { [`${login.action} code`]: a.code, [`${login.action} verifier`]: a.verifier, [`${login.action} access`]: tok.access_token, [`${login.action} refresh`]: tok.refresh_token, [`${login.action} refresh 2`]: next.refresh_token })
    await exchange(s.url, client, a) // a replay, refused
  }
  const log = lines.join('\n')
  t.ok(lines.some((l) => /gateway login/.test(l)), 'the log was captured')
  for (const [what, secret] of Object.entries(secrets)) t.notOk(log.includes(secret), `${what} is not in the log`)
})

t.test("a gateway user's OAuth logins end when the admin changes its password", async (t) => {
  const s = await startOAuthServer(t, { admin_password: ADMIN_PASSWORD })
  const admin = await adminToken(s.url)
  await fetch(`${s.url}/admin/api/users`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: JSON.stringify({ name: 'hal', password: 'hal password 789', connection: 'tmp', root: '/' }) })
  const client = await newClient(s.url)
  const tok = (await exchange(s.url, client, await authorize(s.url, client, { action: 'gateway', user: 'hal', password: 'hal password 789' }))).json
  t.ok((await s.ctx.bearer(tok.access_token as string, req(s))).ok, 'the token works')
  const reset = await fetch(`${s.url}/admin/api/users/hal`, { method: 'PATCH', headers: { authorization: `Bearer ${admin}` }, body: JSON.stringify({ password: 'a new password 123' }) })
  t.equal(reset.status, 200, 'the admin resets the password')
  t.match(await s.ctx.bearer(tok.access_token as string, req(s)), { ok: false, reason: 'invalid' }, 'the access token opens nothing any more')
  const refreshed = await tokenRequest(s.url, { grant_type: 'refresh_token', refresh_token: tok.refresh_token as string, client_id: client })
  t.match([refreshed.status, refreshed.json], [400, { error: 'invalid_grant' }], 'nor can it be refreshed')
  const again = (await exchange(s.url, client, await authorize(s.url, client, { action: 'gateway', user: 'hal', password: 'a new password 123' }))).json
  t.ok((await s.ctx.bearer(again.access_token as string, req(s))).ok, 'a login with the new password works')
})

/**
 * @module test/reliability/secrets.test
 * Secrets stay secret through every door (issue 16, item 7). One filegate, its log
 * captured at debug level, with its SFTP and S3 gateways, the MCP gateway and its OAuth
 * server, a local connection with a password and two SFTP connections to a real sshd
 * (one with its password in the configuration, one taking the user's), is taken
 * through a whole session: admin login, HTTP logins (local, SFTP backend), a share with
 * a password, an API key, a gateway user logging in over SFTP, its S3 key (signed
 * requests, a presigned URL), the OAuth dance (registration, code, access and refresh
 * tokens) and MCP calls; each with its failures (wrong passwords, wrong keys, a bad
 * signature, an expired presigned URL, a used code, a revoked, an expired and a tampered
 * session token).
 * Then every secret, as sent and URL-encoded and in base64, is looked for in the log,
 * in GET /metrics, in every answer received (status, headers and body; SFTP error
 * messages) and in the admin API's listings: none may appear, except in the one answer
 * that hands it out.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SignatureV4 } from '@smithy/signature-v4'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import ssh2 from 'ssh2'
import t from 'tap'
import { createLogger } from '../../front/log.js'
import { Sha256 } from '../../gateways/s3/auth/sigv4.js'
import { startTestServer } from '../helpers/filegate.js'
import { authorize, exchange, flowOf, newClient, openPage, pkce, postPage, tokenRequest } from '../helpers/oauth.js'
import { ADMIN_PASSWORD } from '../helpers/share.js'
import { mcpTransport } from '../gateways/mcp/client.js'
import { rawS3 } from '../gateways/s3/raw.js'
import { startSshd } from '../servers/sshd.js'

/** Every form a secret could be written in: as sent, URL-encoded (both ways), base64 and base64url. */
function forms(secret: string): string[] {
  const b = Buffer.from(secret)
  return [...new Set([secret, encodeURIComponent(secret), new URLSearchParams({ v: secret }).toString().slice(2), b.toString('base64').replace(/=+$/, ''), b.toString('base64url')])]
}

function headerText(headers: Headers): string {
  const out: string[] = []
  headers.forEach((v, k) => out.push(`${k}: ${v}`))
  return out.join('\n')
}

interface Seen {
  readonly what: string
  readonly text: string
  /** Secrets this answer hands out (by name): expected in it, and only there. */
  readonly carries: readonly string[]
}

t.test('a full session through every door leaves its secrets in no log, metric, answer or listing', async (t) => {
  const sshd = await startSshd(t)
  const top = t.testdir({ data: {}, files: { 'a.txt': 'a local file' } })
  const lines: string[] = []
  const secrets = new Map<string, string>()
  const secret = (name: string, value: string): string => {
    secrets.set(name, value)
    return value
  }
  const localPassword = secret('local connection password', `local-${randomBytes(12).toString('hex')}`)
  secret('SFTP backend password', sshd.password)
  secret('admin password', ADMIN_PASSWORD)
  const { app, url, dataDir } = await startTestServer(
    t,
    {
      data_dir: join(top, 'data'),
      admin_password: ADMIN_PASSWORD,
      sftp: { port: 0 },
      s3: { port: 0 },
      connections: [
        { label: 'files', type: 'local', path: join(top, 'files'), password: localPassword },
        { label: 'nas', type: 'sftp', hostname: '127.0.0.1', port: sshd.port },
        { label: 'nas-fixed', type: 'sftp', hostname: '127.0.0.1', port: sshd.port, username: sshd.username, password: sshd.password },
      ],
    },
    createLogger('debug', (line) => lines.push(line)),
  )
  const serverSecret = readFileSync(join(dataDir, 'state', 'secret'))
  secret('server secret (hex)', serverSecret.toString('hex'))
  secret('server secret (base64)', serverSecret.toString('base64'))
  secret('server secret (base64url)', serverSecret.toString('base64url'))

  const seen: Seen[] = []
  /** Keeps an answer (status, every header, body) for the search; returns its body. */
  const keep = async (what: string, res: Response, carries: readonly string[] = []): Promise<string> => {
    const body = await res.text()
    seen.push({ what, text: `${res.status}\n${headerText(res.headers)}\n${body}`, carries })
    return body
  }
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const result = (body: string) => (JSON.parse(body) as { result: Record<string, unknown> }).result

  // Admin login: a wrong password, then the right one.
  t.equal((await fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: secret('wrong admin password', 'not the admin password, 1') }) })).status, 401)
  await keep('admin login, wrong', await post('/admin/api/session', { password: 'not the admin password, 2' }))
  secret('wrong admin password 2', 'not the admin password, 2')
  const admin = secret('admin token', result(await keep('admin login', await post('/admin/api/session', { password: ADMIN_PASSWORD }), ['admin token'])).authorization as string)

  // HTTP sessions: the local connection's password, the SFTP backend's (given and configured).
  await keep('local login, wrong', await post('/api/session', { label: 'files', password: secret('wrong local password', 'not the local password') }))
  const local = secret('local session token', result(await keep('local login', await post('/api/session', { label: 'files', password: localPassword }), ['local session token'])).authorization as string)
  await keep('sftp backend login, wrong', await post('/api/session', { label: 'nas', username: sshd.username, password: secret('wrong SFTP backend password', 'not the sftp password') }))
  const nas = secret('SFTP session token', result(await keep('sftp backend login', await post('/api/session', { label: 'nas', username: sshd.username, password: sshd.password }), ['SFTP session token'])).authorization as string)
  const fixed = secret('configured SFTP session token', result(await keep('configured sftp login', await post('/api/session', { label: 'nas-fixed' }), ['configured SFTP session token'])).authorization as string)
  for (const [who, token] of [['local', local], ['sftp', nas], ['configured sftp', fixed]] as const) {
    t.equal((await fetch(`${url}/api/files/cat?path=/hello.txt`, { method: 'POST', headers: bearer(token), body: 'hello' })).status, 200, `${who}: an upload`)
    t.equal((await fetch(`${url}/api/files/ls?path=/`, { headers: bearer(token) })).status, 200, `${who}: a listing`)
    await keep(`${who}: a missing file`, await fetch(`${url}/api/files/cat?path=/missing.txt`, { headers: bearer(token) }))
  }

  // A share with a password: right, wrong, as Basic credentials; an API key on an open share.
  const sharePassword = secret('share password', `share-${randomBytes(9).toString('hex')}`)
  const locked = result(await keep('share made', await post('/api/share', { path: '/', can_read: true, password: sharePassword }, bearer(local)))).id as string
  t.equal((await fetch(`${url}/api/files/cat?path=/hello.txt&share=${locked}`, { headers: { 'x-share-password': sharePassword } })).status, 200, 'the share opens with its password')
  await keep('share, wrong password', await fetch(`${url}/api/files/ls?path=/&share=${locked}`, { headers: { 'x-share-password': secret('wrong share password', 'not the share password') } }))
  const basic = secret('share Basic credentials', Buffer.from(`anyone:${sharePassword}`).toString('base64'))
  await keep('share, Basic', await fetch(`${url}/api/files/ls?path=/&share=${locked}`, { headers: { authorization: `Basic ${basic}` } }))
  await keep('share, no password', await fetch(`${url}/api/files/ls?path=/&share=${locked}`))
  const open = result(await keep('open share made', await post('/api/share', { path: '/', can_read: true }, bearer(local)))).id as string
  const apiKey = secret('API key', result(await keep('API key made', await post('/admin/api/keys', { name: 'secrets test' }, bearer(admin)), ['API key'])).key as string)
  t.equal((await fetch(`${url}/api/files/cat?path=/hello.txt&key=${encodeURIComponent(apiKey)}&share=${open}`)).status, 200, 'the API key works')
  const wrongKey = secret('wrong API key', `fgk_${randomBytes(32).toString('base64url')}`)
  await keep('wrong API key', await fetch(`${url}/api/files/ls?path=/&key=${wrongKey}&share=${open}`))

  // A gateway user, over SFTP: a wrong password, the right one, an error.
  const gwPassword = secret('gateway user password', `gw-${randomBytes(12).toString('hex')}`)
  await keep('gateway user made', await post('/admin/api/users', { name: 'gw', password: gwPassword, connection: 'files', root: '/' }, bearer(admin)))
  const sftpPort = app.gateways.find((g) => g.name === 'sftp')!.port!
  const sftpLogin = (password: string) =>
    new Promise<{ client: ssh2.Client; sftp: ssh2.SFTPWrapper }>((resolve, reject) => {
      const client = new ssh2.Client()
      client.once('error', reject)
      client.once('ready', () => client.sftp((err, sftp) => (err ? reject(err) : resolve({ client, sftp }))))
      client.connect({ host: '127.0.0.1', port: sftpPort, username: 'gw', password, readyTimeout: 20_000 })
    })
  const refused = await sftpLogin(secret('wrong gateway password', 'not the gateway password')).then(
    () => null,
    (err: Error) => err,
  )
  t.ok(refused, 'a wrong gateway password is refused')
  seen.push({ what: 'sftp login, wrong', text: String(refused), carries: [] })
  const { client, sftp } = await sftpLogin(gwPassword)
  const listed = await new Promise<ssh2.FileEntry[]>((resolve, reject) => sftp.readdir('/', (err, list) => (err ? reject(err) : resolve(list))))
  t.ok(listed.some((e) => e.filename === 'hello.txt'), 'the gateway user lists its root over SFTP')
  const missing = await new Promise<Error | null>((resolve) => sftp.stat('/missing.txt', (err) => resolve(err ?? null)))
  seen.push({ what: 'sftp stat, missing', text: String(missing), carries: [] })
  client.end()

  // Its S3 key: signed requests, a presigned URL, a bad signature, an expired URL.
  const made = result(await keep('S3 key made', await post('/admin/api/users/gw/s3-keys', {}, bearer(admin)), ['S3 secret']))
  const key = { accessKeyId: made.access_key_id as string, secretAccessKey: secret('S3 secret', made.secret_access_key as string) }
  const endpoint = `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`
  t.equal((await rawS3(endpoint, key, 'PUT', '/bucket')).status, 200, 'S3: a bucket made')
  t.equal((await rawS3(endpoint, key, 'PUT', '/bucket/k.txt', { body: 'over S3' })).status, 200, 'S3: a signed PUT')
  for (const [what, r] of [
    ['S3 list', await rawS3(endpoint, key, 'GET', '/bucket', { query: { 'list-type': '2' } })],
    ['S3 missing key', await rawS3(endpoint, key, 'GET', '/bucket/missing')],
    ['S3 bad signature', await rawS3(endpoint, { ...key, secretAccessKey: secret('wrong S3 secret', randomBytes(30).toString('base64')) }, 'GET', '/bucket/k.txt')],
    ['S3 unknown key id', await rawS3(endpoint, { accessKeyId: 'FGNOTAKEY0000000', secretAccessKey: key.secretAccessKey }, 'GET', '/bucket/k.txt')],
  ] as const) {
    seen.push({ what, text: `${r.status}\n${headerText(r.headers)}\n${r.text}`, carries: [] })
  }
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: key, sha256: Sha256, uriEscapePath: false })
  const host = new URL(endpoint).host
  const presign = async (opts: { expiresIn?: number; signingDate?: Date }) => {
    const r = await signer.presign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', path: '/bucket/k.txt', query: {}, headers: { host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, opts)
    return `${endpoint}/bucket/k.txt?${new URLSearchParams(r.query as Record<string, string>)}`
  }
  t.equal(await keep('S3 presigned GET', await fetch(await presign({ expiresIn: 300 }))), 'over S3', 'S3: a presigned GET')
  const expired = await fetch(await presign({ expiresIn: 60, signingDate: new Date(Date.now() - 600_000) }))
  t.equal(expired.status, 403, 'S3: an expired presigned URL is refused')
  await keep('S3 expired presigned URL', expired)

  // MCP over OAuth: a wrong login on the page, the code, tokens, a refresh, their failures.
  const clientId = await newClient(url)
  const { challenge } = pkce()
  const page = await openPage(url, { response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1/callback', code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource: `${url}/mcp` })
  const wrongLogin = await postPage(url, page.cookie, { flow: flowOf(page.html, 'gateway-form'), action: 'gateway', user: 'gw', password: secret('wrong OAuth password', 'not the gateway password either') })
  seen.push({ what: 'OAuth page, wrong password', text: `${wrongLogin.status}\n${wrongLogin.html}`, carries: [] })
  const granted = await authorize(url, clientId, { action: 'gateway', user: 'gw', password: gwPassword })
  secret('OAuth code', granted.code)
  secret('PKCE verifier', granted.verifier)
  const tokens = await exchange(url, clientId, granted)
  t.equal(tokens.status, 200, 'OAuth: the code is exchanged')
  const access = secret('OAuth access token', tokens.json.access_token as string)
  const refresh = secret('OAuth refresh token', tokens.json.refresh_token as string)
  const mcp = new McpClient({ name: 'secrets-test', version: '1.0.0' })
  await mcp.connect(mcpTransport(url, access, 'streamable'))
  const ls = (await mcp.callTool({ name: 'ls', arguments: { path: '/' } })) as CallToolResult
  t.notOk(ls.isError, 'MCP: a tool call with the access token')
  seen.push({ what: 'MCP ls', text: JSON.stringify(ls), carries: [] })
  seen.push({ what: 'MCP cat, missing', text: JSON.stringify(await mcp.callTool({ name: 'cat', arguments: { path: '/missing.txt' } })), carries: [] })
  await mcp.close()
  await keep('MCP, wrong token', await fetch(`${url}/mcp`, { method: 'POST', headers: { ...bearer(`${access.slice(0, -4)}AAAA`), 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }))
  const renewed = await tokenRequest(url, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId })
  t.equal(renewed.status, 200, 'OAuth: the refresh token is exchanged')
  secret('OAuth access token 2', renewed.json.access_token as string)
  secret('OAuth refresh token 2', renewed.json.refresh_token as string)
  seen.push({ what: 'OAuth refresh token reused', text: JSON.stringify(await tokenRequest(url, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId })), carries: [] })

  // A code used twice revokes what it gave (RFC 6749, 4.1.2).
  seen.push({ what: 'OAuth code reused', text: JSON.stringify(await exchange(url, clientId, granted)), carries: [] })

  // A revoked session token and a tampered one.
  t.equal((await fetch(`${url}/api/session`, { method: 'DELETE', headers: bearer(nas) })).status, 200, 'the SFTP session is revoked')
  await keep('revoked token', await fetch(`${url}/api/files/ls?path=/`, { headers: bearer(nas) }))
  await keep('tampered token', await fetch(`${url}/api/files/ls?path=/`, { headers: bearer(`${local.slice(0, -6)}AAAAAA`) }))

  // An expired session token: a second filegate, logging to the same log, whose sessions last a second.
  const short = await startTestServer(t, { data_dir: join(top, 'data-short'), session: { ttl_seconds: 1 } }, createLogger('debug', (line) => lines.push(line)))
  const shortLived = secret('expired session token', result(await keep('short session', await fetch(`${short.url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID: 'carol' }) }), ['expired session token'])).authorization as string)
  await new Promise((r) => setTimeout(r, 2100))
  const stale = await fetch(`${short.url}/api/files/ls?path=/`, { headers: bearer(shortLived) })
  t.equal(stale.status, 401, 'an expired session token is refused')
  await keep('expired token', stale)

  // What the admin sees, and the metrics.
  for (const path of ['keys', 'shares', 'users', 'users/gw/s3-keys', 'status']) {
    const res = await fetch(`${url}/admin/api/${path}`, { headers: bearer(admin) })
    t.equal(res.status, 200, `the admin lists ${path}`)
    await keep(`admin ${path}`, res)
  }
  const metrics = await fetch(`${url}/metrics`)
  t.equal(metrics.status, 200, 'the metrics are scraped')
  t.match(await keep('metrics', metrics), /filegate_http_requests_total/)

  // The request log line of a last request, made after all others, ends the log.
  await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'last-request' } })
  while (!lines.some((l) => l.includes('"last-request"'))) await new Promise((r) => setTimeout(r, 20))
  t.ok(lines.length >= 60, `${lines.length} log lines captured`)
  t.ok(seen.length >= 40, `${seen.length} answers and messages kept`)
  const log = lines.join('\n')
  const leaks: string[] = []
  for (const [name, value] of secrets) {
    for (const form of forms(value)) {
      if (log.includes(form)) leaks.push(`the log holds the ${name}`)
      for (const s of seen) if (!s.carries.includes(name) && s.text.includes(form)) leaks.push(`"${s.what}" holds the ${name}`)
    }
  }
  for (const s of seen) for (const name of s.carries) t.ok(forms(secrets.get(name)!).some((f) => s.text.includes(f)), `"${s.what}" hands out the ${name}`)
  t.strictSame([...new Set(leaks)], [], `${secrets.size} secrets (${[...secrets.keys()].join(', ')}) in none of ${lines.length} log lines and ${seen.length} answers`)
})

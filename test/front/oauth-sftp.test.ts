/**
 * @module test/front/oauth-sftp.test
 * The login page with a remote storage's own credentials: an `sftp` connection to a
 * real OpenSSH sshd on 127.0.0.1. A wrong password is refused on the page (the backend
 * itself checks it, as for POST /api/session); the right one gives tokens that open
 * the account's folder.
 */
import { chownSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startSshd } from '../servers/sshd.js'
import { authorize, exchange, flowOf, newClient, openPage, pkce, postPage, startOAuthServer } from '../helpers/oauth.js'

t.test('an sftp account logs in on the page with its own password', async (t) => {
  const sshd = await startSshd(t)
  const file = join(sshd.root, 'oauth-sftp.txt')
  writeFileSync(file, 'remote')
  chownSync(file, sshd.uid, sshd.gid)
  const s = await startOAuthServer(t, { connections: [{ label: 'files', type: 'sftp', hostname: '127.0.0.1', port: sshd.port, hostkey: sshd.hostkeyFingerprint }] })
  const client = await newClient(s.url)

  const page = await openPage(s.url, { response_type: 'code', client_id: client, redirect_uri: 'http://127.0.0.1/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256' })
  t.match(page.html, /<option value="files">files \(sftp\)<\/option>/, 'the connection is offered')
  const wrong = await postPage(s.url, page.cookie, { flow: flowOf(page.html, 'connection-form'), action: 'connection', label: 'files', username: sshd.username, password: 'not the password' })
  t.equal(wrong.status, 401, 'a wrong password is refused by the server, on the page')
  t.notMatch(wrong.html, /consent-form/)

  const tok = (await exchange(s.url, client, await authorize(s.url, client, { action: 'connection', label: 'files', username: sshd.username, password: sshd.password }))).json
  const r = await s.ctx.bearer(tok.access_token as string, { resource: `${s.url}/mcp`, address: '127.0.0.1', requestId: 'test' })
  if (!r.ok) throw new Error(r.message)
  const names = (await r.fs.list({ requestId: 'test', signal: new AbortController().signal }, '/')).entries.map((e) => e.name)
  r.fs.close()
  t.ok(names.includes('oauth-sftp.txt'), 'the token opens the account\'s home on the sftp server')
})

/**
 * @module test/front/throttle-right-password.test
 * A right password never locks an address out (issue 23, item 9). The attack: one
 * failed login short of the throttle's limit, then a client opening many sessions at
 * once with the right password (rclone, a backup job). The logins in flight were
 * counted, those the throttle refused were never taken back, and the address stayed
 * locked on every gateway for 15 minutes. Real logins: OpenSSH-compatible ssh2 on the
 * SFTP gateway, the AWS SDK on the S3 gateway, the OAuth login page of the MCP gateway.
 */
import { ListBucketsCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { GATEWAY_LOGIN_FAILURES } from '../../front/gateway-login.js'
import { call, ssh2Sftp } from '../gateways/sftp/clients.js'
import { api, startTestServer } from '../helpers/filegate.js'
import { authorize, exchange, newClient } from '../helpers/oauth.js'
import { s3Client } from '../helpers/s3-client.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'

t.test('after one failure short of the limit, many right-password logins at once all log in and lock nothing', async (t) => {
  const { app, url } = await startTestServer(t, { sftp: { port: 0 }, s3: { port: 0 }, admin_password: ADMIN_PASSWORD, shutdown_grace_seconds: 1 })
  const admin = api(url, await adminToken(url))
  const password = 'alice-right-password'
  const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password, connection: 'tmp' }) })
  t.equal(made.status, 200, 'a gateway user')
  const keyRes = await admin('POST', '/admin/api/users/alice/s3-keys')
  const key = ((await keyRes.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const port = app.gateways.find((g) => g.name === 'sftp')!.port!
  const s3Port = app.gateways.find((g) => g.name === 's3')!.port!
  const sftpLogin = (pw: string) => ssh2Sftp(t, { port, user: 'alice', password: pw })

  const wrong = await Promise.allSettled(Array.from({ length: GATEWAY_LOGIN_FAILURES - 1 }, () => sftpLogin('a wrong guess')))
  t.ok(wrong.every((r) => r.status === 'rejected'), `${GATEWAY_LOGIN_FAILURES - 1} wrong passwords are refused`)

  // Twelve sessions at once with the right password (more than the four checked at a time).
  const right = await Promise.allSettled(Array.from({ length: 12 }, () => sftpLogin(password)))
  const failed = right.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))
  t.same(failed, [], 'every right-password login succeeds')
  for (const r of right) {
    if (r.status === 'fulfilled') t.same(await call(r.value.sftp.readdir.bind(r.value.sftp), '/'), [], 'and is served')
  }

  // The address is not locked: every door still takes the right credentials.
  const s3 = s3Client(t, `http://127.0.0.1:${s3Port}`, { accessKeyId: key.access_key_id, secretAccessKey: key.secret_access_key })
  const buckets = await s3.send(new ListBucketsCommand({}))
  t.equal(buckets.$metadata.httpStatusCode, 200, 'S3 serves the signed requests of the same address')
  const client = await newClient(url)
  const code = await authorize(url, client, { action: 'gateway', user: 'alice', password })
  t.equal((await exchange(url, client, code)).status, 200, 'MCP: the login page takes the right password')
  await t.resolves(sftpLogin(password), 'SFTP: one more session logs in')

  // The failures before are not forgiven either: one more is allowed, then the address is locked.
  await t.rejects(sftpLogin('the last guess allowed'), 'the tenth wrong password is checked and refused')
  await t.rejects(sftpLogin(password), 'then the throttle holds, even for the right password')
  const locked = await authorize(url, client, { action: 'gateway', user: 'alice', password }).then(
    () => 'logged in',
    (err: Error) => err.message,
  )
  t.match(locked, /429|too many failed gateway logins/, 'on every door')
})

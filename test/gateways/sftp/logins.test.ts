/**
 * Logging in at the SFTP gateway through the gateway login: users made with the admin
 * API (tmp spaces, share-style roots), pass-through logins on a real sshd, and failed
 * logins delayed and throttled.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { serverDir } from '../../servers/process.js'
import { sftpBatch, ssh2Sftp } from './clients.js'
import { sharedSshd, startGateway } from './fixture.js'

t.test('a user made through the admin API logs in with sftp -P <port> user@127.0.0.1', async (t) => {
  const g = await startGateway(t)
  await g.addUser({ name: 'tmpuser', password: 'tmp user password', connection: 'tmp' })
  const local = serverDir(t, 'logins')
  writeFileSync(join(local, 'hello.txt'), 'hello from sftp')
  const r = await sftpBatch(t, { ...g.login, user: 'tmpuser', password: 'tmp user password' }, `put ${join(local, 'hello.txt')}\nls -1\n`)
  t.equal(r.code, 0, `logged in: ${r.stderr}`)
  t.match(r.stdout, /^hello\.txt\s*$/m, 'ls shows the top of the user root')
  const spaces = readdirSync(join(g.dataDir, 'gateway-tmp'))
  t.equal(spaces.length, 1, 'a tmp space of its own')
  t.equal(readFileSync(join(g.dataDir, 'gateway-tmp', spaces[0]!, 'hello.txt'), 'utf8'), 'hello from sftp', 'the upload landed there')
})

t.test('a share-style root: only what is below it', async (t) => {
  const g = await startGateway(t)
  g.put('home/bob/notes.txt', 'bob')
  g.put('home/carol/secret.txt', 'carol')
  g.put('top.txt', 'top')
  await g.addUser({ name: 'bob', password: 'bob password!', connection: 'disk', root: '/home/bob' })
  const bob = { ...g.login, user: 'bob', password: 'bob password!' }
  const r = await sftpBatch(t, bob, 'ls -1 /\nls -1 ..\nls -1 /../carol\n')
  t.not(r.code, 0, 'the last listing fails')
  t.match(r.stdout, /^\/notes\.txt\s*$/m, '/ is bob\'s folder')
  t.match(r.stdout, /^\.\.\/notes\.txt\s*$/m, '.. at the root is the root')
  t.notMatch(r.stdout, /secret|top\.txt/, 'nothing of the rest')
})

t.test('pass-through: <user>@<connection> with the account on a real sshd', async (t) => {
  const sshd = await sharedSshd()
  const folder = `pt-${randomBytes(5).toString('hex')}`
  mkdirSync(join(sshd.root, folder))
  chownSync(join(sshd.root, folder), sshd.uid, sshd.gid)
  writeFileSync(join(sshd.root, folder, 'on-the-nas.txt'), 'nas')
  const g = await startGateway(t, { connections: [{ label: 'nas-pt', type: 'sftp', hostname: '127.0.0.1', port: sshd.port, path: folder }] })
  const local = serverDir(t, 'pt')
  writeFileSync(join(local, 'up.txt'), 'uploaded by the nas user')
  const me = { ...g.login, user: `${sshd.username}@nas-pt`, password: sshd.password }
  const r = await sftpBatch(t, me, `ls -1\nput ${join(local, 'up.txt')} up.txt\n`)
  t.equal(r.code, 0, `logged in with the NAS account: ${r.stderr}`)
  t.match(r.stdout, /on-the-nas\.txt/, 'sees the connection\'s folder')
  t.equal(readFileSync(join(sshd.root, folder, 'up.txt'), 'utf8'), 'uploaded by the nas user', 'the upload is on the NAS')
  const wrong = await sftpBatch(t, { ...me, password: 'not the nas password' }, 'ls\n')
  t.not(wrong.code, 0, 'a password the NAS refuses is a failed login')
  t.match(wrong.stderr, /Permission denied/, 'the usual refusal')
})

t.test('failed logins are delayed, then throttled per address', async (t) => {
  const lines: { level: string; msg: string; reason?: string }[] = []
  const logger = { log: (level: string, msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, ...fields }) }
  const g = await startGateway(t, { logger })
  const started = Date.now()
  await t.rejects(ssh2Sftp(t, { ...g.login, password: 'not alice password' }), /authentication methods failed/, 'refused')
  t.ok(Date.now() - started >= 300, `a refusal waits (${Date.now() - started} ms)`)
  // Two connections of 6 attempts: past the throttle's 10 failures.
  for (let i = 0; i < 2; i++) await sftpBatch(t, { ...g.login, password: 'still not it' }, 'ls\n', ['-o', 'NumberOfPasswordPrompts=6'])
  const right = await sftpBatch(t, g.login, 'ls\n')
  t.not(right.code, 0, 'then even the right password is refused from this address')
  t.match(right.stderr, /Permission denied/, 'with the same answer')
  t.ok(lines.some((l) => l.msg === 'sftp login refused' && l.reason === 'throttled' && l.level === 'warn'), 'the gateway logs the throttled refusal as a warning')
})

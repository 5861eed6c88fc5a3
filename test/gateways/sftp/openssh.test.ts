/**
 * The SFTP gateway with OpenSSH's own clients: `sftp -b` batches, `ssh` for the
 * refusals (shell, exec, old algorithms).
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCommand, sftpBatch, sshExec } from './clients.js'
import { serverDir } from '../../servers/process.js'
import { execFileSync } from 'node:child_process'
import { BACKENDS, startGateway } from './fixture.js'

for (const backend of BACKENDS) {
  t.test(`${backend}: sftp -b: put, get, ls -l, mkdir, rename, chmod, rm, rmdir`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    const local = t.testdir()
    const payload = randomBytes(3 * 1024 * 1024 + 17)
    writeFileSync(join(local, 'up.bin'), payload)
    put('there.txt', 'already here\n')
    mkdir('sub dir')
    const r = await sftpBatch(
      t,
      login,
      [
        `lcd ${local}`,
        'ls -l',
        'put up.bin',
        'get there.txt back.txt',
        'mkdir new',
        'rename up.bin new/moved.bin',
        'chmod 600 new/moved.bin',
        'ls -l new',
        'get new/moved.bin moved-back.bin',
        'cd "sub dir"',
        'put up.bin inside.bin',
        'cd ..',
        'rm "sub dir/inside.bin"',
        'rmdir "sub dir"',
        'ls -1',
        '',
      ].join('\n'),
    )
    t.equal(r.code, 0, `the batch succeeds: ${r.stderr}`)
    t.match(r.stdout, /^-rw-r--r-- +1 +\S+ +\S+ +13 \w{3} [ \d]\d [\d:]+ there\.txt$/m, 'ls -l: a long name like ls -l')
    t.match(r.stdout, /^drwxr-xr-x .* sub dir$/m, 'ls -l: directories')
    t.match(r.stdout, /^-rw------- .* moved\.bin$/m, 'chmod shows in ls -l')
    t.same(readFileSync(join(root, 'new', 'moved.bin')), payload, 'the upload landed, renamed, byte for byte')
    t.equal(statSync(join(root, 'new', 'moved.bin')).mode & 0o777, 0o600, 'chmod applied on disk')
    t.equal(readFileSync(join(local, 'back.txt'), 'utf8'), 'already here\n', 'get')
    t.same(readFileSync(join(local, 'moved-back.bin')), payload, 'a 3 MiB get, byte for byte')
    t.notOk(existsSync(join(root, 'sub dir')), 'rm and rmdir')
    t.same(readdirSync(root).sort(), ['new', 'there.txt'], 'nothing else left in the root')
  })

  t.test(`${backend}: sftp -b: reput and reget resume where the copy stopped`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    const local = t.testdir()
    const full = randomBytes(2 * 1024 * 1024 + 5)
    writeFileSync(join(local, 'full.bin'), full)
    put('half-up.bin', full.subarray(0, 1024 * 1024))
    put('remote.bin', full)
    writeFileSync(join(local, 'half-down.bin'), full.subarray(0, 700_000))
    const r = await sftpBatch(t, login, [`lcd ${local}`, 'reput full.bin half-up.bin', 'reget remote.bin half-down.bin', ''].join('\n'))
    t.equal(r.code, 0, `the batch succeeds: ${r.stderr}`)
    t.same(readFileSync(join(root, 'half-up.bin')), full, 'reput appended the rest')
    t.same(readFileSync(join(local, 'half-down.bin')), full, 'reget fetched the rest')
  })

  t.test(`${backend}: sftp -b: errors are reported, and the batch stops at the first`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    put('a.txt', 'a')
    mkdir('full')
    put('full/x', 'x')
    for (const [cmd, msg] of [
      ['get nothing-here.txt', /not found|No such file/i],
      ['rmdir full', /Failure|not empty/i],
      ['mkdir full', /Failure|exists/i],
      ['ls /../../etc/passwd', /not found/i],
    ] as const) {
      const r = await sftpBatch(t, login, `${cmd}\n`)
      t.not(r.code, 0, `${cmd}: the batch fails`)
      t.match(r.stderr, msg, `${cmd}: ${r.stderr.trim()}`)
    }
    t.equal(readFileSync(join(root, 'a.txt'), 'utf8'), 'a', 'nothing changed')
  })

  t.test(`${backend}: read-only users: every write is PERMISSION_DENIED, reads work`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend, readOnly: true })
    put('keep.txt', 'keep')
    mkdir('dir')
    const local = t.testdir()
    writeFileSync(join(local, 'x.txt'), 'x')
    const ok = await sftpBatch(t, login, `lcd ${local}\nget keep.txt\nls -l\n`)
    t.equal(ok.code, 0, `reads work: ${ok.stderr}`)
    for (const cmd of [`put ${join(local, 'x.txt')} x.txt`, 'rm keep.txt', 'mkdir new', 'rmdir dir', 'rename keep.txt moved.txt', 'chmod 600 keep.txt']) {
      const r = await sftpBatch(t, login, `${cmd}\n`)
      t.not(r.code, 0, `${cmd}: refused`)
      t.match(r.stderr, /Permission denied/i, `${cmd}: ${r.stderr.trim()}`)
    }
    t.same(readdirSync(root).sort(), ['dir', 'keep.txt'], 'nothing changed')
  })
}

t.test('public key logins: an authorized key logs in, another is refused', async (t) => {
  const dir = serverDir(t, 'keys')
  const key = (name: string) => {
    execFileSync('/usr/bin/ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)])
    return readFileSync(join(dir, `${name}.pub`), 'utf8').trim()
  }
  const mine = key('mine')
  key('other')
  const lines: { msg: string; method?: string }[] = []
  const logger = { log: (_l: string, msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, ...fields }) }
  const { login } = await startGateway(t, { authorizedKey: mine, logger })
  const withKey = (name: string) =>
    runCommand('/usr/bin/sftp', ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'IdentitiesOnly=yes', '-o', 'PasswordAuthentication=no', '-i', join(dir, name), '-P', String(login.port), '-b', '-', `${login.user}@127.0.0.1`], { input: 'ls\n' })
  const ok = await withKey('mine')
  t.equal(ok.code, 0, `the authorized key logs in: ${ok.stderr}`)
  t.ok(lines.some((l) => l.msg === 'sftp login' && l.method === 'publickey'), 'logged as a public key login')
  const other = await withKey('other')
  t.not(other.code, 0, 'another key is refused')
  t.match(other.stderr, /Permission denied \(publickey,password\)/, 'the usual refusal')
})

t.test('shell and exec get a one-line refusal', async (t) => {
  const { login } = await startGateway(t)
  const r = await sshExec(t, login, 'cat /etc/passwd')
  t.equal(r.code, 1, 'exit status 1')
  t.equal(r.stdout, '', 'nothing ran')
  t.match(r.stderr, /^filegate: only the sftp subsystem is served$/m, 'the refusal on stderr')
  const shell = await sshExec(t, login, '', ['-T'])
  t.not(shell.code, 0, 'a shell is refused too')
  const fwd = await sshExec(t, login, 'true', ['-o', 'ExitOnForwardFailure=yes', '-R', '0:127.0.0.1:9'])
  t.not(fwd.code, 0, 'remote port forwarding is refused')
  t.match(fwd.stderr, /forwarding failed/, fwd.stderr.trim())
  const local = await sshExec(t, login, 'true', ['-o', 'ExitOnForwardFailure=yes', '-W', '127.0.0.1:9'])
  t.match(local.stderr, /forwarding failed|open failed|administratively prohibited/, `a TCP connection through the gateway is refused: ${local.stderr.trim()}`)
})

t.test('only modern algorithms: CBC ciphers and SHA-1 MACs are refused', async (t) => {
  const { login } = await startGateway(t)
  const cbc = await sshExec(t, login, 'true', ['-c', 'aes128-cbc', '-o', 'LogLevel=INFO'])
  t.match(cbc.stderr, /no matching cipher/, 'aes128-cbc')
  const sha1 = await sshExec(t, login, 'true', ['-c', 'aes128-ctr', '-o', 'MACs=hmac-sha1', '-o', 'LogLevel=INFO'])
  t.match(sha1.stderr, /no matching MAC/, 'hmac-sha1')
  const kex = await sshExec(t, login, 'true', ['-o', 'KexAlgorithms=diffie-hellman-group14-sha1', '-o', 'LogLevel=INFO'])
  t.match(kex.stderr, /no matching key exchange/, 'SHA-1 key exchange')
  const hostKey = await sshExec(t, login, 'true', ['-o', 'HostKeyAlgorithms=rsa-sha2-256,ssh-rsa', '-o', 'LogLevel=INFO'])
  t.match(hostKey.stderr, /no matching host key type/, 'host key: ed25519 only')
  for (const c of ['aes128-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes256-ctr']) {
    const r = await sftpBatch(t, login, 'ls\n', ['-c', c])
    t.equal(r.code, 0, `${c} works: ${r.stderr}`)
  }
})

t.test('the host key is made once, private, and kept across restarts', async (t) => {
  const dataDir = join(t.testdir(), 'data')
  const lines: string[] = []
  const logger = { log: (level: string, msg: string, fields?: Record<string, unknown>) => void lines.push(JSON.stringify({ level, msg, ...fields })) }
  const first = await startGateway(t, { dataDir, logger })
  const keyFile = join(dataDir, 'sftp', 'host_ed25519_key')
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'mode 0600')
  const fp = (l: string[]) => l.map((x) => JSON.parse(x) as { msg: string; host_key?: string }).filter((x) => x.msg === 'sftp gateway listening').map((x) => x.host_key)
  const printed = fp(lines)[0]!
  t.match(printed, /^SHA256:[A-Za-z0-9+/]{43}$/, 'its fingerprint is logged')
  const seen = await sshExec(t, first.login, 'true', ['-v'])
  t.match(seen.stderr, `Server host key: ssh-ed25519 ${printed}`, 'the logged fingerprint is the one clients see')
  await first.app.close(0)
  lines.length = 0
  const second = await startGateway(t, { dataDir, logger })
  t.equal(fp(lines)[0], printed, 'the same key after a restart')
  t.notOk(lines.some((l) => l.includes('host key created')), 'not made again')
  await second.app.close(0)
  chmodSync(keyFile, 0o644)
  lines.length = 0
  await startGateway(t, { dataDir, logger })
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'a key others could read is made private again')
  t.ok(lines.some((l) => l.includes('readable by others')), '... with a warning')
  t.equal(fp(lines)[0], printed, '... and kept')
})

t.test('a port in use stops start-up with an error naming sftp.port', async (t) => {
  const { gateway } = await startGateway(t)
  const { startTestServer } = await import('../../helpers/filegate.js')
  await t.rejects(startTestServer(t, { sftp: { port: gateway.port } }), { message: /sftp\.port.*in use/ })
})

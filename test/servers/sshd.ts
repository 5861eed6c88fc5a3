/**
 * @module test/servers/sshd
 * A throwaway OpenSSH sshd for tests (SERVERS.md): a local user with a random name
 * and password, a host key generated for this run, `internal-sftp`, on 127.0.0.1 and
 * a free port; the user (home included) is deleted and the server stopped when the
 * test ends. Needs root (tests and CI run as root) and the Debian package
 * `openssh-server`. Safe to run in parallel: every instance has its own user, port
 * and folder.
 */
import { createHash, randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { type Started, freePort, requireBinary, run, startServer } from './process.js'

export interface TestUser {
  readonly username: string
  readonly password: string
  readonly uid: number
  readonly gid: number
  /** The user's home folder (created by useradd -m). */
  readonly home: string
}

/** /etc/passwd is locked by each useradd/userdel: parallel test files retry. */
function retrying(cmd: string, args: readonly string[], input?: string): string {
  for (let attempt = 0; ; attempt++) {
    try {
      return run(cmd, args, input)
    } catch (err) {
      const msg = String((err as { stderr?: unknown }).stderr ?? err)
      if (attempt >= 40 || !/lock|try again/i.test(msg)) throw new Error(`${cmd} ${args.join(' ')} failed: ${msg}`)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50 + Math.floor(Math.random() * 100))
    }
  }
}

/**
 * A local user `fgtest_<random>` with a password and a home folder, removed (with
 * its home) at `t`'s teardown. Its shell is /bin/bash, which /etc/shells lists
 * (vsftpd's PAM stack refuses users whose shell is not listed).
 */
export function createTestUser(t: Test): TestUser {
  const username = `fgtest_${randomBytes(5).toString('hex')}`
  const password = randomBytes(12).toString('base64url')
  retrying('useradd', ['-m', '-s', '/bin/bash', username])
  t.teardown(() => {
    try {
      retrying('userdel', ['-r', '-f', username])
    } catch {
      // Already gone: nothing to clean.
    }
  })
  retrying('chpasswd', [], `${username}:${password}\n`)
  const [uid, gid, home] = run('getent', ['passwd', username]).trim().split(':').filter((_, i) => i === 2 || i === 3 || i === 5)
  return { username, password, uid: Number(uid), gid: Number(gid), home: home! }
}

/**
 * A folder of its own for a server's config and keys, removed at teardown. Not
 * `t.testdir()`: a second call in the same test (startTestServer's data folder)
 * would wipe it.
 */
export function serverDir(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `filegate-${prefix}-`))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export interface Sshd {
  readonly port: number
  readonly username: string
  readonly password: string
  /** The user's home folder: what an sftp session with an empty `path` serves. */
  readonly root: string
  readonly uid: number
  readonly gid: number
  /** `SHA256:<base64, no padding>`, as `ssh-keygen -l` prints it. */
  readonly hostkeyFingerprint: string
  /** A private key (OpenSSH format, no passphrase) that the user's authorized_keys accepts. */
  readonly privateKey: string
  /** Stops the server (the user stays until teardown); `start` runs it again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  output(): string
}

/** Starts sshd for a fresh user; everything is removed at `t`'s teardown. */
export async function startSshd(t: Test): Promise<Sshd> {
  const sshd = requireBinary('/usr/sbin/sshd', 'openssh-server')
  const keygen = requireBinary('/usr/bin/ssh-keygen', 'openssh-client')
  const user = createTestUser(t)
  const dir = serverDir(t, 'sshd')
  const hostKey = join(dir, 'host_ed25519')
  run(keygen, ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey])
  const fingerprint = run(keygen, ['-l', '-E', 'sha256', '-f', `${hostKey}.pub`]).split(' ')[1]!

  // A client key for private-key logins.
  const userKey = join(dir, 'user_ed25519')
  run(keygen, ['-q', '-t', 'ed25519', '-N', '', '-f', userKey])
  const sshDir = join(user.home, '.ssh')
  mkdirSync(sshDir, { recursive: true, mode: 0o700 })
  writeFileSync(join(sshDir, 'authorized_keys'), readFileSync(`${userKey}.pub`), { mode: 0o600 })
  run('chown', ['-R', `${user.uid}:${user.gid}`, sshDir])

  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }) // privilege separation folder
  chmodSync(dir, 0o755)
  const port = await freePort()
  const config = join(dir, 'sshd_config')
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PasswordAuthentication yes',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'AuthorizedKeysFile .ssh/authorized_keys',
      'UsePAM no',
      'PermitRootLogin no',
      `AllowUsers ${user.username}`,
      'Subsystem sftp internal-sftp',
      // Tests open many connections at once (several drivers, several workers).
      'MaxStartups 200',
      'MaxSessions 100',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  )
  let server: Started | null = null
  const start = async (): Promise<void> => {
    server = await startServer(t, sshd, ['-D', '-e', '-f', config], { port })
  }
  // A stopped server drops its connections too (sshd's per-connection children would
  // otherwise outlive the listener), as a machine going down does.
  const stop = async (): Promise<void> => {
    const pid = server?.child.pid
    if (pid !== undefined) killDescendants(pid)
    await server?.stop()
  }
  t.teardown(stop)
  await start()
  return {
    port,
    username: user.username,
    password: user.password,
    root: user.home,
    uid: user.uid,
    gid: user.gid,
    hostkeyFingerprint: fingerprint,
    privateKey: readFileSync(userKey, 'utf8'),
    stop,
    start,
    output: () => server?.output() ?? '',
  }
}

/** SIGKILLs every descendant of `pid` (found through /proc), deepest first. */
export function killDescendants(pid: number): void {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = children.get(ppid) ?? []
      list.push(Number(name))
      children.set(ppid, list)
    } catch {
      // The process ended meanwhile.
    }
  }
  const kill = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      kill(c)
      try {
        process.kill(c, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }
  kill(pid)
}

/** The fingerprint ssh-keygen prints for a public key blob (for tests that compute one). */
export function fingerprintOf(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`
}

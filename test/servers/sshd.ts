/**
 * @module test/servers/sshd
 * A throwaway OpenSSH sshd for tests (docs/testing.md): a local user with a random name
 * and password, a host key generated for this run, `internal-sftp`, on 127.0.0.1 and
 * a free port; the user (home included) is deleted and the server stopped when the
 * test ends. Needs root (tests and CI run as root) and the Debian package
 * `openssh-server`. Safe to run in parallel: every instance has its own user, port
 * and folder.
 */
import { createHash } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort, requireBinary, run, serverDir, startRestartable } from './process.js'
import { createTestUser } from './users.js'

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
  const server = await startRestartable(t, sshd, ['-D', '-e', '-f', config], port)
  return {
    port,
    username: user.username,
    password: user.password,
    root: user.home,
    uid: user.uid,
    gid: user.gid,
    hostkeyFingerprint: fingerprint,
    privateKey: readFileSync(userKey, 'utf8'),
    stop: server.stop,
    start: server.start,
    output: server.output,
  }
}

/** The fingerprint ssh-keygen prints for a public key blob (for tests that compute one). */
export function fingerprintOf(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`
}

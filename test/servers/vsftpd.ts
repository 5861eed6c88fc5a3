/**
 * @module test/servers/vsftpd
 * A throwaway vsftpd for tests (docs/testing.md): a local user with a random name and
 * password (users.ts), its own config, on 127.0.0.1, a free
 * control port and a passive port range; stopped, with its per-connection processes,
 * and the user deleted when the test ends. Optionally FTPS (explicit AUTH TLS) with
 * a self-signed certificate made for this run. Needs root and the Debian package
 * `vsftpd`. Safe to run in parallel.
 */
import { randomInt } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort, requireBinary, run, serverDir, startRestartable } from './process.js'
import { createTestUser } from './users.js'

export interface Vsftpd {
  readonly port: number
  readonly username: string
  readonly password: string
  /** The user's home folder: where a login lands (no chroot). */
  readonly root: string
  readonly uid: number
  readonly gid: number
  /** PEM of the self-signed certificate when started with `tls`. */
  readonly cert?: string
  /** Stops the server and drops its connections; `start` runs it again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  output(): string
}

/** The folder vsftpd drops into for unprivileged work; must exist, owned by root, not writable. */
const SECURE_CHROOT = '/var/run/vsftpd/empty'

export async function startVsftpd(t: Test, opts: { tls?: boolean } = {}): Promise<Vsftpd> {
  const vsftpd = requireBinary('/usr/sbin/vsftpd', 'vsftpd')
  const user = createTestUser(t)
  mkdirSync(SECURE_CHROOT, { recursive: true, mode: 0o755 })
  const dir = serverDir(t, 'vsftpd')
  const port = await freePort()
  // vsftpd picks a random passive port in the range and retries on EADDRINUSE, so
  // ranges of parallel instances may overlap.
  const pasvMin = randomInt(20000, 30000)
  const lines = [
    'listen=YES',
    'listen_ipv6=NO',
    'background=NO',
    'listen_address=127.0.0.1',
    `listen_port=${port}`,
    'anonymous_enable=NO',
    'local_enable=YES',
    'write_enable=YES',
    'local_umask=022',
    'pasv_enable=YES',
    'pasv_address=127.0.0.1',
    `pasv_min_port=${pasvMin}`,
    `pasv_max_port=${pasvMin + 500}`,
    'pam_service_name=vsftpd',
    `secure_chroot_dir=${SECURE_CHROOT}`,
    'seccomp_sandbox=NO',
    'xferlog_enable=NO',
    'syslog_enable=NO',
    'max_clients=200',
    'max_per_ip=200',
    `userlist_enable=YES`,
    'userlist_deny=NO',
    `userlist_file=${join(dir, 'users')}`,
  ]
  writeFileSync(join(dir, 'users'), `${user.username}\n`)
  let cert: string | undefined
  if (opts.tls) {
    const pem = join(dir, 'cert.pem')
    run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', pem, '-out', pem])
    cert = readFileSync(pem, 'utf8')
    lines.push('ssl_enable=YES', `rsa_cert_file=${pem}`, 'force_local_logins_ssl=YES', 'force_local_data_ssl=YES', 'require_ssl_reuse=NO', 'ssl_ciphers=HIGH')
  }
  const config = join(dir, 'vsftpd.conf')
  writeFileSync(config, lines.join('\n') + '\n', { mode: 0o600 })
  const server = await startRestartable(t, vsftpd, [config], port)
  return {
    port,
    username: user.username,
    password: user.password,
    root: user.home,
    uid: user.uid,
    gid: user.gid,
    ...(cert === undefined ? {} : { cert }),
    stop: server.stop,
    start: server.start,
    output: server.output,
  }
}

/**
 * A real Samba smbd for tests: on 127.0.0.1 and a free port, one share backed by a
 * temporary folder, a throwaway unix user with a Samba password, every state
 * directory under a temporary base. Authentication settings are Samba's defaults
 * (NTLMv2 only, SMB2_02..SMB3, signing as the client asks): what the smb driver
 * must work against. `extraGlobal` adds lines to [global] (e.g. to test a refusal).
 *
 * Needs root (useradd, smbpasswd) and the Debian packages `samba` and `smbclient`
 * (.ci/run installs them). Never `--no-process-group`: smbd then signals its
 * caller's whole process group when it stops.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort, killDescendants, requireBinary, run, startServer, untilServing } from './process.js'
import { retryingPasswdLock } from './users.js'

export interface SambaServer {
  readonly hostname: '127.0.0.1'
  readonly port: number
  readonly share: string
  readonly domain: string
  readonly username: string
  readonly password: string
  /** The share's folder on this machine (owned by the throwaway user). */
  readonly dir: string
  /** The generated smb.conf, for tools such as smbclient. */
  readonly conf: string
  /** The `type: 'smb'` session parameters of docs/configuration.md, "Backends" for this share. */
  readonly params: Readonly<Record<string, string | number>>
  /** Stops smbd (the user and folders stay until the test ends). */
  stop(): Promise<void>
  /** Starts smbd again on the same port and share, after `stop`. */
  restart(): Promise<void>
}

export interface SambaOptions {
  /** Extra `key = value` lines for [global]. */
  readonly extraGlobal?: Readonly<Record<string, string>>
}

export async function startSamba(t: Test, opts: SambaOptions = {}): Promise<SambaServer> {
  const smbd = requireBinary('/usr/sbin/smbd', 'samba')
  const smbpasswd = requireBinary('/usr/bin/smbpasswd', 'samba')
  const smbclient = requireBinary('/usr/bin/smbclient', 'smbclient')
  const base = mkdtempSync(join(tmpdir(), 'fg-samba-'))
  chmodSync(base, 0o711) // the share's user must traverse it to reach the share
  const username = `fgsmb${randomBytes(4).toString('hex')}`
  const password = `pw-${randomBytes(9).toString('base64url')}`
  const share = 'files'
  const dir = join(base, 'share')
  const port = await freePort()
  for (const d of ['state', 'lock', 'cache', 'private', 'pid', 'ncalrpc', 'log', 'share']) mkdirSync(join(base, d), { recursive: true })

  retryingPasswdLock('useradd', ['-M', '-N', '-s', '/usr/sbin/nologin', '-d', '/nonexistent', username])
  t.teardown(() => {
    try {
      retryingPasswdLock('userdel', [username])
    } catch {
      // The user may already be gone; nothing else depends on it.
    }
    rmSync(base, { recursive: true, force: true })
  })
  const uid = Number(run('id', ['-u', username]).trim())
  const gid = Number(run('id', ['-g', username]).trim())
  chownSync(dir, uid, gid)

  const global: Record<string, string> = {
    'server role': 'standalone server',
    workgroup: 'WORKGROUP',
    interfaces: 'lo',
    'bind interfaces only': 'yes',
    'smb ports': String(port),
    'disable netbios': 'yes',
    'passdb backend': `tdbsam:${join(base, 'private', 'passdb.tdb')}`,
    'private dir': join(base, 'private'),
    'pid directory': join(base, 'pid'),
    'lock directory': join(base, 'lock'),
    'state directory': join(base, 'state'),
    'cache directory': join(base, 'cache'),
    'ncalrpc dir': join(base, 'ncalrpc'),
    'log file': join(base, 'log', 'smbd.log'),
    'load printers': 'no',
    printing: 'bsd',
    'printcap name': '/dev/null',
    'disable spoolss': 'yes',
    ...opts.extraGlobal,
  }
  const conf = join(base, 'smb.conf')
  const lines = ['[global]', ...Object.entries(global).map(([k, v]) => `  ${k} = ${v}`), '', `[${share}]`, `  path = ${dir}`, '  read only = no', `  valid users = ${username}`, '']
  writeFileSync(conf, lines.join('\n'))
  run(smbpasswd, ['-c', conf, '-s', '-a', username], `${password}\n${password}\n`)

  const args = ['--foreground', '--debug-stdout', '-s', conf]
  // The port opens before smbd serves every session well: right after a restart that
  // follows killed connections, new ones may be closed or answered NO_MEMORY for a moment.
  // Ready means smbclient logs in and lists the share.
  const ready = (): Promise<void> =>
    untilServing(() => run(smbclient, [`//127.0.0.1/${share}`, '-p', String(port), '-s', conf, '-U', username, '-c', 'ls'], undefined, { ...process.env, PASSWD: password }))
  let server = await startServer(t, smbd, args, { port })
  await ready()
  const params = { hostname: '127.0.0.1', port, share, domain: 'WORKGROUP', username, password }
  // With its per-connection children, as a machine going down drops its connections (test/servers/process.ts's Restartable).
  const stop = async (): Promise<void> => {
    if (server.child.pid !== undefined) killDescendants(server.child.pid)
    await server.stop()
  }
  return {
    hostname: '127.0.0.1',
    port,
    share,
    domain: 'WORKGROUP',
    username,
    password,
    dir,
    conf,
    params,
    stop,
    restart: async () => {
      await stop()
      server = await startServer(t, smbd, args, { port })
      await ready()
    },
  }
}

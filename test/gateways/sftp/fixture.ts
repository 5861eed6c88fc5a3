/**
 * A real filegate with its SFTP gateway on a free port, and a user who logs in to a
 * folder: of the test's (`local`), or of a real OpenSSH sshd's user (`sftp`: the
 * gateway in front of a remote backend). `root` is that folder on this machine's disk,
 * so tests look at what really happened; `put` and `mkdir` seed it as the backend's
 * owner.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import tap, { type Test } from 'tap'
import type { BackendSpec } from '../../../core/backend.js'
import { validateConfig } from '../../../core/config.js'
import type { Gateway } from '../../../core/gateway.js'
import { type Filegate, startFilegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import { createSftpGateway } from '../../../gateways/sftp/index.js'
import { serverDir } from '../../servers/process.js'
import { type Sshd, startSshd } from '../../servers/sshd.js'
import { startS3rver } from '../../servers/s3rver.js'
import type { Login } from './clients.js'
import { withTempLogin } from './temp-login.js'

/** `s3`: an s3rver bucket (no modes, no settable times); `put` and `mkdir` are not available there. */
export type Backend = 'local' | 'sftp' | 's3'
export const BACKENDS: readonly Backend[] = ['local', 'sftp']

export interface Gw {
  readonly app: Filegate
  readonly gateway: Gateway
  readonly login: Login
  /** The user's root on disk. */
  readonly root: string
  readonly dataDir: string
  /** Seeds a file (parents made), owned as the backend's own files are. */
  put(rel: string, data: string | Uint8Array): void
  mkdir(rel: string): void
}

export interface GatewayOptions {
  readonly backend?: Backend
  readonly readOnly?: boolean
  readonly dataDir?: string
  readonly logger?: Logger
  readonly loginGraceMs?: number
  /** A public key (SSH wire format) the user may log in with. */
  readonly key?: Buffer
}

/** One sshd per test file, started on first use. */
let sshd: Promise<Sshd> | null = null

export async function startGateway(t: Test, opts: GatewayOptions = {}): Promise<Gw> {
  const base = serverDir(t, 'sftp-gw')
  const dataDir = opts.dataDir ?? join(base, 'data')
  let root: string
  let spec: BackendSpec
  let own = (_abs: string): void => {}
  if ((opts.backend ?? 'local') === 'sftp') {
    sshd ??= startSshd(tap) // stopped when the test file ends
    const s = await sshd
    const name = `gw-${randomBytes(6).toString('hex')}`
    root = join(s.root, name)
    own = (abs) => chownSync(abs, s.uid, s.gid)
    mkdirSync(root)
    own(root)
    spec = { type: 'sftp', hostname: '127.0.0.1', port: s.port, username: s.username, password: s.password, root: name }
  } else if (opts.backend === 's3') {
    const s3 = await startS3rver(t)
    root = ''
    own = () => {
      throw new Error('an s3 backend is not seeded from the disk')
    }
    spec = { type: 's3', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, root: await s3.bucket() }
  } else {
    root = join(base, 'root')
    mkdirSync(root)
    spec = { type: 'local', root }
  }
  const user = 'alice'
  const password = 'alice-password-1'
  const gateway = withTempLogin(t, createSftpGateway({ port: 0, host: '127.0.0.1', ...(opts.loginGraceMs ? { loginGraceMs: opts.loginGraceMs } : {}) }), {
    spec,
    dataDir,
    user,
    password,
    readOnly: opts.readOnly ?? false,
    ...(opts.key ? { key: opts.key } : {}),
  })
  const app = await startFilegate(validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 1, data_dir: dataDir, sftp: { port: 'off' } }), {
    logger: opts.logger ?? silentLogger,
    gateways: [gateway],
  })
  t.teardown(() => app.close(0))
  const mkdir = (rel: string): void => {
    const parts = rel.split('/').filter(Boolean)
    for (let i = 1; i <= parts.length; i++) {
      const abs = join(root, ...parts.slice(0, i))
      mkdirSync(abs, { recursive: true })
      own(abs)
    }
  }
  return {
    app,
    gateway,
    login: { port: gateway.port!, user, password },
    root,
    dataDir,
    put(rel, data) {
      if (dirname(rel) !== '.') mkdir(dirname(rel))
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    mkdir,
  }
}

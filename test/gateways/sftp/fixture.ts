/**
 * A real filegate (admin API on) with its SFTP gateway on a free port, and a gateway
 * user made through the admin API who logs in to a folder: of the test's (`local`, a
 * local connection), of a real OpenSSH sshd's user (`sftp`: the gateway in front of a
 * remote backend, through an sftp connection with fixed credentials), or an s3rver
 * bucket (`s3`). `root` is the folder on this machine's disk, so tests look at what
 * really happened; `put` and `mkdir` seed it as the backend's owner.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import tap, { type Test } from 'tap'
import type { ConnectionConfig } from '../../../core/config.js'
import type { Gateway } from '../../../core/gateway.js'
import type { Filegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { startS3rver } from '../../servers/s3rver.js'
import { type Sshd, startSshd } from '../../servers/sshd.js'
import type { Login } from './clients.js'

/** `s3`: an s3rver bucket (no modes, no settable times); `put` and `mkdir` are not available there. */
export type Backend = 'local' | 'sftp' | 's3'
export const BACKENDS: readonly Backend[] = ['local', 'sftp']

export interface Gw {
  readonly app: Filegate
  readonly gateway: Gateway
  readonly url: string
  readonly login: Login
  /** The user's root on disk. */
  readonly root: string
  readonly dataDir: string
  /** Seeds a file (parents made), owned as the backend's own files are. */
  put(rel: string, data: string | Uint8Array): void
  mkdir(rel: string): void
  /** Adds another gateway user through the admin API. */
  addUser(body: Record<string, unknown>, again?: boolean): Promise<void>
}

export interface GatewayOptions {
  readonly backend?: Backend
  readonly readOnly?: boolean
  readonly dataDir?: string
  readonly logger?: Logger
  /** A public key line (`ssh-ed25519 AAAA... comment`) the user may log in with. */
  readonly authorizedKey?: string
  /** More connections (e.g. one for pass-through logins). */
  readonly connections?: readonly Record<string, unknown>[]
}

/** One sshd per test file, started on first use. */
let sshd: Promise<Sshd> | null = null
export const sharedSshd = (): Promise<Sshd> => (sshd ??= startSshd(tap)) // stopped when the test file ends

export async function startGateway(t: Test, opts: GatewayOptions = {}): Promise<Gw> {
  const base = serverDir(t, 'sftp-gw')
  const dataDir = opts.dataDir ?? join(base, 'data')
  let root: string
  let connection: ConnectionConfig
  let userRoot = '/'
  let own = (_abs: string): void => {}
  if ((opts.backend ?? 'local') === 'sftp') {
    const s = await sharedSshd()
    const name = `gw-${randomBytes(6).toString('hex')}`
    root = join(s.root, name)
    own = (abs) => chownSync(abs, s.uid, s.gid)
    mkdirSync(root)
    own(root)
    userRoot = `/${name}`
    connection = { label: 'nas', type: 'sftp', hostname: '127.0.0.1', port: s.port, username: s.username, password: s.password }
  } else if (opts.backend === 's3') {
    const s3 = await startS3rver(t)
    root = ''
    own = () => {
      throw new Error('an s3 backend is not seeded from the disk')
    }
    connection = { label: 'bucket', type: 's3', endpoint: s3.endpoint, region: 'us-east-1', path_style: true, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, path: await s3.bucket() }
  } else {
    root = join(base, 'root')
    mkdirSync(root)
    connection = { label: 'disk', type: 'local', path: root }
  }
  const { app, url } = await startTestServer(
    t,
    { sftp: { port: 0 }, admin_password: ADMIN_PASSWORD, data_dir: dataDir, shutdown_grace_seconds: 1, connections: [connection, ...(opts.connections ?? [])] },
    opts.logger ?? silentLogger,
  )
  const admin = api(url, await adminToken(url))
  const addUser = async (body: Record<string, unknown>, again = false): Promise<void> => {
    const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify(body) })
    // `again`: a filegate restarted on the same data folder still has its users.
    if (res.status !== 200 && !(again && res.status === 409)) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
  }
  const user = 'alice'
  const password = 'alice-password-1'
  await addUser({
    name: user,
    password,
    connection: connection.label,
    root: userRoot,
    read_only: opts.readOnly ?? false,
    ...(opts.authorizedKey ? { authorized_keys: [opts.authorizedKey] } : {}),
  }, opts.dataDir !== undefined)
  const gateway = app.gateways.find((g) => g.name === 'sftp')!
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
    url,
    login: { port: gateway.port!, user, password },
    root,
    dataDir,
    put(rel, data) {
      if (dirname(rel) !== '.') mkdir(dirname(rel))
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    mkdir,
    addUser,
  }
}

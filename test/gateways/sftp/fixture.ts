/**
 * A real filegate (admin API on) with its SFTP gateway on a free port, and a gateway
 * user made through the admin API who logs in to a folder: of the test's (`local`, a
 * local connection), of a real OpenSSH sshd's user (`sftp`: the gateway in front of a
 * remote backend, through an sftp connection with fixed credentials), or an s3rver
 * bucket (`s3`). `root` is the folder on this machine's disk, so tests look at what
 * really happened; `put` and `mkdir` seed it as the backend's owner.
 */
import { join } from 'node:path'
import type { Test } from 'tap'
import type { Gateway } from '../../../core/gateway.js'
import type { Filegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { type Backend, sharedSshd, userStorage } from '../../helpers/user-storage.js'
import type { Login } from './clients.js'

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
  /** The user's permission bits (the admin API's `permissions`), instead of `readOnly`. */
  readonly permissions?: Record<string, boolean>
  readonly dataDir?: string
  readonly logger?: Logger
  /** A public key line (`ssh-ed25519 AAAA... comment`) the user may log in with. */
  readonly authorizedKey?: string
  /** More connections (e.g. one for pass-through logins). */
  readonly connections?: readonly Record<string, unknown>[]
  /** SFTP settings beyond the port (`max_startups`, graces, ...). */
  readonly sftp?: Record<string, unknown>
  /** Other settings (e.g. `transfers_per_address`). */
  readonly config?: Record<string, unknown>
}

export { sharedSshd }
export type { Backend }

export async function startGateway(t: Test, opts: GatewayOptions = {}): Promise<Gw> {
  const base = serverDir(t, 'sftp-gw')
  const dataDir = opts.dataDir ?? join(base, 'data')
  const storage = await userStorage(t, base, opts.backend ?? 'local')
  const { connection, userRoot, root } = storage
  const { app, url } = await startTestServer(
    t,
    { ...opts.config, sftp: { port: 0, ...opts.sftp }, admin_password: ADMIN_PASSWORD, data_dir: dataDir, shutdown_grace_seconds: 1, connections: [connection, ...(opts.connections ?? [])] },
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
    ...(opts.permissions ? { permissions: opts.permissions } : { read_only: opts.readOnly ?? false }),
    ...(opts.authorizedKey ? { authorized_keys: [opts.authorizedKey] } : {}),
  }, opts.dataDir !== undefined)
  const gateway = app.gateways.find((g) => g.name === 'sftp')!
  return {
    app,
    gateway,
    url,
    login: { port: gateway.port!, user, password },
    root,
    dataDir,
    put: storage.put,
    mkdir: storage.mkdir,
    addUser,
  }
}

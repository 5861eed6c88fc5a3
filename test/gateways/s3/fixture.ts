/**
 * A real filegate (admin API on) with its S3 gateway on a free port, and a gateway user
 * made through the admin API whose root is a folder: of the test's (`local`, a local
 * connection) or of a real OpenSSH sshd's user (`sftp`). `root` is that folder on this
 * machine's disk, so tests look at what really happened. The user's S3 key is made
 * through the admin API, as an admin would.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { S3Client } from '@aws-sdk/client-s3'
import type { Test } from 'tap'
import type { Filegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import { createS3Gateway } from '../../../gateways/s3/index.js'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { userStorage } from '../../helpers/user-storage.js'
import { s3Client } from '../../helpers/s3-client.js'

export type Backend = 'local' | 'sftp'
export const BACKENDS: readonly Backend[] = ['local', 'sftp']

export interface Key {
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

export interface S3Gw {
  readonly app: Filegate
  readonly url: string
  /** `http://127.0.0.1:<port>` of the S3 gateway. */
  readonly endpoint: string
  readonly port: number
  readonly key: Key
  /** The user's root on disk. */
  readonly root: string
  /** An AWS SDK v3 client with the user's key (path-style). */
  client(opts?: { key?: Key; checksums?: 'default' | 'when-required' }): S3Client
  /** Seeds a file (parents made), owned as the backend's own files are. */
  put(rel: string, data: string | Uint8Array): void
  mkdir(rel: string): void
  /** Another gateway user on the same connection and root, with a key. */
  addUser(name: string, opts?: { readOnly?: boolean; permissions?: Record<string, boolean>; keyPermissions?: Record<string, boolean> }): Promise<Key>
}

export interface S3GwOptions {
  readonly backend?: Backend
  readonly readOnly?: boolean
  readonly logger?: Logger
  /** `s3.base_domain` (virtual-hosted style). */
  readonly baseDomain?: string
  /** `staging_dir`. */
  readonly stagingDir?: string
  /** `cors.origins`: browser origins the S3 gateway answers preflights for. */
  readonly corsOrigins?: readonly string[]
  /** `http_engine` (default: FILEGATE_HTTP_ENGINE, else auto). */
  readonly httpEngine?: 'uws' | 'node'
}

export async function startS3Gateway(t: Test, opts: S3GwOptions = {}): Promise<S3Gw> {
  const base = serverDir(t, 's3-gw')
  const storage = await userStorage(t, base, opts.backend ?? 'local')
  const { connection, userRoot, root } = storage
  const { app, url } = await startTestServer(
    t,
    {
      s3: { port: 0, ...(opts.baseDomain ? { base_domain: opts.baseDomain } : {}) },
      admin_password: ADMIN_PASSWORD,
      data_dir: join(base, 'data'),
      shutdown_grace_seconds: 1,
      connections: [connection],
      ...(opts.stagingDir ? { staging_dir: opts.stagingDir } : {}),
      ...(opts.corsOrigins ? { cors: { origins: opts.corsOrigins } } : {}),
      ...(opts.httpEngine ? { http_engine: opts.httpEngine } : {}),
    },
    opts.logger ?? silentLogger,
  )
  const gateway = app.gateways.find((g) => g.name === 's3')!
  const admin = api(url, await adminToken(url))
  const addUser = async (name: string, o: { readOnly?: boolean; permissions?: Record<string, boolean>; keyPermissions?: Record<string, boolean> } = {}): Promise<Key> => {
    const password = `${name}-password-${randomBytes(4).toString('hex')}`
    const rights = o.permissions ? { permissions: o.permissions } : { read_only: o.readOnly ?? false }
    const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name, password, connection: connection.label, root: userRoot, ...rights }) })
    if (res.status !== 200) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
    // `keyPermissions`: the key narrows its user's bits.
    const made = await admin('POST', `/admin/api/users/${name}/s3-keys`, {}, o.keyPermissions ? { body: JSON.stringify({ permissions: o.keyPermissions }) } : {})
    if (made.status !== 201) throw new Error(`making an S3 key: ${made.status} ${await made.text()}`)
    const k = ((await made.json()) as { result: { access_key_id: string; secret_access_key: string } }).result
    return { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }
  }
  const key = await addUser(`alice${randomBytes(3).toString('hex')}`, { readOnly: opts.readOnly ?? false })
  const endpoint = `http://127.0.0.1:${gateway.port}`
  return {
    app,
    url,
    endpoint,
    port: gateway.port!,
    key,
    root,
    client: (o = {}) => {
      const k = o.key ?? key
      return s3Client(t, endpoint, { accessKeyId: k.accessKeyId, secretAccessKey: k.secretAccessKey }, { checksums: o.checksums === 'default' ? 'default' : 'when-required' })
    },
    put: storage.put,
    mkdir: storage.mkdir,
    addUser,
  }
}

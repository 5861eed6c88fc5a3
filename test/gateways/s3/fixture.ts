/**
 * A real filegate (admin API on) with its S3 gateway on a free port, and a gateway user
 * made through the admin API whose root is a folder: of the test's (`local`, a local
 * connection) or of a real OpenSSH sshd's user (`sftp`). `root` is that folder on this
 * machine's disk, so tests look at what really happened.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { S3Client } from '@aws-sdk/client-s3'
import type { Test } from 'tap'
import type { ConnectionConfig } from '../../../core/config.js'
import { validateConfig } from '../../../core/config.js'
import { type Filegate, startFilegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import type { Authenticate } from '../../../gateways/s3/caller.js'
import { createS3Gateway } from '../../../gateways/s3/index.js'
import { api } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { serverDir } from '../../servers/process.js'
import { sharedSshd } from '../sftp/fixture.js'

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
  addUser(name: string, opts?: { readOnly?: boolean }): Promise<Key>
}

export interface S3GwOptions {
  readonly backend?: Backend
  readonly readOnly?: boolean
  readonly logger?: Logger
}

// Until authentication lands: the access key id is the gateway user's name, its password the secret.
const PASSWORDS = new Map<string, string>()
const testAuth: Authenticate = async (req, login) => {
  const m = /Credential=([^/]+)\//.exec(req.header('authorization') ?? '') ?? /^([^/]+)\//.exec(req.query.get('X-Amz-Credential') ?? '')
  const { S3Error } = await import('../../../gateways/s3/errors.js')
  if (!m) throw new S3Error('AccessDenied', 'Access Denied', 403)
  const res = await login.login({ door: 's3', user: m[1]!, password: PASSWORDS.get(m[1]!) ?? 'x', address: req.remoteAddress, requestId: req.requestId })
  if (!res.ok) throw new S3Error('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', 403)
  return { accessKeyId: m[1]!, user: res.user, fs: res.fs, body: req.body, contentLength: req.contentLength }
}

export async function startS3Gateway(t: Test, opts: S3GwOptions = {}): Promise<S3Gw> {
  const base = serverDir(t, 's3-gw')
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
  } else {
    root = join(base, 'root')
    mkdirSync(root)
    connection = { label: 'disk', type: 'local', path: root, public: true }
  }
  const gateway = createS3Gateway({ port: 0, host: '127.0.0.1', region: 'us-east-1', baseDomain: null, authenticate: testAuth, graceMs: 500 })
  const app = await startFilegate(
    validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 1, admin_password: ADMIN_PASSWORD, sftp: { port: 'off' }, s3: { port: 'off' }, data_dir: join(base, 'data'), connections: [connection] }),
    { logger: opts.logger ?? silentLogger, gateways: [gateway] },
  )
  t.teardown(() => app.close(0))
  const url = `http://127.0.0.1:${app.port}`
  const admin = api(url, await adminToken(url))
  const addUser = async (name: string, o: { readOnly?: boolean } = {}): Promise<Key> => {
    const password = `${name}-password-${randomBytes(4).toString('hex')}`
    const res = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name, password, connection: connection.label, root: userRoot, read_only: o.readOnly ?? false }) })
    if (res.status !== 200) throw new Error(`adding a user: ${res.status} ${await res.text()}`)
    PASSWORDS.set(name, password)
    return { accessKeyId: name, secretAccessKey: password }
  }
  const key = await addUser(`alice${randomBytes(3).toString('hex')}`, { readOnly: opts.readOnly ?? false })
  const endpoint = `http://127.0.0.1:${gateway.port}`
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
    url,
    endpoint,
    port: gateway.port!,
    key,
    root,
    client: (o = {}) => {
      const k = o.key ?? key
      const c = new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: k.accessKeyId, secretAccessKey: k.secretAccessKey },
        ...(o.checksums === 'default' ? {} : { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }),
      })
      t.teardown(() => c.destroy())
      return c
    },
    put(rel, data) {
      if (dirname(rel) !== '.') mkdir(dirname(rel))
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    mkdir,
    addUser,
  }
}

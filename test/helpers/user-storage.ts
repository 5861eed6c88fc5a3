/**
 * The storage a gateway test's user logs in to, on a real backend: a folder of the
 * test's (`local`), a folder of a real OpenSSH sshd's user (`sftp`: a remote backend
 * through an sftp connection with fixed credentials), or an s3rver bucket (`s3`).
 * `root` is the folder on this machine's disk, so tests look at what really happened;
 * `put` and `mkdir` seed it as the backend's owner.
 */
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import tap, { type Test } from 'tap'
import type { ConnectionConfig } from '../../core/config.js'
import { startS3rver } from '../servers/s3rver.js'
import { type Sshd, startSshd } from '../servers/sshd.js'

/** `s3`: an s3rver bucket (no modes, no settable times); `put` and `mkdir` are not available there. */
export type Backend = 'local' | 'sftp' | 's3'

export interface UserStorage {
  /** The connection to configure; its label is what a gateway user names. */
  readonly connection: ConnectionConfig
  /** The user's root inside the connection. */
  readonly userRoot: string
  /** The user's root on disk ('' for s3). */
  readonly root: string
  /** Seeds a file (parents made), owned as the backend's own files are. */
  put(rel: string, data: string | Uint8Array): void
  mkdir(rel: string): void
}

/** One sshd per test file, started on first use. */
let sshd: Promise<Sshd> | null = null
export const sharedSshd = (): Promise<Sshd> => (sshd ??= startSshd(tap)) // stopped when the test file ends

/** `base`: a folder of the test's for the local root. */
export async function userStorage(t: Test, base: string, backend: Backend): Promise<UserStorage> {
  let root: string
  let connection: ConnectionConfig
  let userRoot = '/'
  let own = (_abs: string): void => {}
  if (backend === 'sftp') {
    const s = await sharedSshd()
    const name = `gw-${randomBytes(6).toString('hex')}`
    root = join(s.root, name)
    own = (abs) => chownSync(abs, s.uid, s.gid)
    mkdirSync(root)
    own(root)
    userRoot = `/${name}`
    connection = { label: 'nas', type: 'sftp', hostname: '127.0.0.1', port: s.port, username: s.username, password: s.password }
  } else if (backend === 's3') {
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
  const mkdir = (rel: string): void => {
    const parts = rel.split('/').filter(Boolean)
    for (let i = 1; i <= parts.length; i++) {
      const abs = join(root, ...parts.slice(0, i))
      mkdirSync(abs, { recursive: true })
      own(abs)
    }
  }
  return {
    connection,
    userRoot,
    root,
    put(rel, data) {
      if (dirname(rel) !== '.') mkdir(dirname(rel))
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    mkdir,
  }
}

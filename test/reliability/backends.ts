/**
 * The four remote backends of the fault matrix (test/reliability/faults.ts), each a
 * real server (test/servers/) that the tests stop and start again on the same port,
 * with what the matrix needs to look at it directly: a file's bytes, the temporary
 * names left on it, and seeding (a big sparse file, a big folder).
 */
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import type { Test } from 'tap'
import type { ConnectionConfig } from '../../core/config.js'
import { startS3rver } from '../servers/s3rver.js'
import { startSamba } from '../servers/samba.js'
import { startSshd } from '../servers/sshd.js'
import { startVsftpd } from '../servers/vsftpd.js'
import { s3Client } from '../helpers/s3-client.js'

/** Hidden upload names of the drivers (`.filegate-<id>.part`) and the gateways. */
export const TEMP_NAME = /(^|\/)\.filegate-[^/]*$/

export interface FaultBackend {
  readonly name: 'sftp' | 'ftp' | 'smb' | 's3'
  /** The connection to configure, reaching the server through `port` (the fault proxy). */
  connection(port: number): ConnectionConfig
  /** The server's own port. */
  readonly port: number
  /** Stops the server and drops its connections, as a machine going down does. */
  stop(): Promise<void>
  start(): Promise<void>
  put(rel: string, data: string | Uint8Array): Promise<void>
  /** A file of `size` bytes (sparse where the server stores files on this disk). */
  putBig(rel: string, size: number): Promise<void>
  /** `count` small files in the folder `rel`. */
  putMany(rel: string, count: number): Promise<void>
  /** The file's bytes as the server has them, or null when it is absent. */
  read(rel: string): Promise<Buffer | null>
  /** Temporary upload objects left anywhere under the root (names, and S3's unfinished multipart uploads). */
  temps(): Promise<string[]>
}

/** A backend whose root is a folder of this machine's disk (sftp, ftp, smb). */
function diskBackend(
  name: FaultBackend['name'],
  root: string,
  owner: { uid: number; gid: number },
  server: { port: number; stop(): Promise<void>; start(): Promise<void> },
  connection: (port: number) => ConnectionConfig,
): FaultBackend {
  const own = (abs: string): void => chownSync(abs, owner.uid, owner.gid)
  const mkdirs = (rel: string): void => {
    let abs = root
    for (const part of rel.split('/').filter(Boolean)) {
      abs = join(abs, part)
      if (!existsSync(abs)) mkdirSync(abs)
      own(abs)
    }
  }
  const walk = (abs: string, rel: string, out: string[]): string[] => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name
      if (TEMP_NAME.test(r)) out.push(r)
      if (e.isDirectory()) walk(join(abs, e.name), r, out)
    }
    return out
  }
  return {
    name,
    port: server.port,
    connection,
    stop: () => server.stop(),
    start: () => server.start(),
    async put(rel, data) {
      mkdirs(dirname(rel))
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    async putBig(rel, size) {
      await this.put(rel, '')
      truncateSync(join(root, rel), size)
    },
    async putMany(rel, count) {
      mkdirs(rel)
      for (let i = 0; i < count; i++) {
        const abs = join(root, rel, `entry-with-a-longish-name-${String(i).padStart(5, '0')}.txt`)
        writeFileSync(abs, 'x')
        own(abs)
      }
    },
    async read(rel) {
      return existsSync(join(root, rel)) ? readFileSync(join(root, rel)) : null
    },
    async temps() {
      return walk(root, '', [])
    },
  }
}

/** A fresh folder of the backend's user under `root` for one fault run. @returns its name */
function faultsFolder(root: string, uid: number, gid: number): string {
  const dir = `faults-${randomBytes(4).toString('hex')}`
  mkdirSync(join(root, dir))
  chownSync(join(root, dir), uid, gid)
  return dir
}

export async function sftpBackend(t: Test): Promise<FaultBackend> {
  const s = await startSshd(t)
  const dir = faultsFolder(s.root, s.uid, s.gid)
  return diskBackend('sftp', join(s.root, dir), s, s, (port) => ({ label: 'faulty', type: 'sftp', hostname: '127.0.0.1', port, username: s.username, password: s.password, path: dir }))
}

export async function ftpBackend(t: Test): Promise<FaultBackend> {
  const s = await startVsftpd(t)
  const dir = faultsFolder(s.root, s.uid, s.gid)
  return diskBackend('ftp', join(s.root, dir), s, s, (port) => ({ label: 'faulty', type: 'ftp', hostname: '127.0.0.1', port, username: s.username, password: s.password, path: dir }))
}

export async function smbBackend(t: Test): Promise<FaultBackend> {
  const s = await startSamba(t)
  const { uid, gid } = statSync(s.dir)
  const dir = faultsFolder(s.dir, uid, gid)
  return diskBackend('smb', join(s.dir, dir), { uid, gid }, { port: s.port, stop: () => s.stop(), start: () => s.restart() }, (port) => ({
    label: 'faulty',
    type: 'smb',
    hostname: '127.0.0.1',
    port,
    share: s.share,
    domain: s.domain,
    username: s.username,
    password: s.password,
    path: dir,
  }))
}

export async function s3Backend(t: Test): Promise<FaultBackend> {
  const s = await startS3rver(t)
  const bucket = await s.bucket()
  const client = s3Client(t, s.endpoint, { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey })
  const keys = async (): Promise<string[]> => {
    const out: string[] = []
    let token: string | undefined
    do {
      const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
      for (const o of r.Contents ?? []) out.push(o.Key!)
      token = r.NextContinuationToken
    } while (token)
    return out
  }
  const put = async (rel: string, data: string | Uint8Array): Promise<void> => void (await client.send(new PutObjectCommand({ Bucket: bucket, Key: rel, Body: data })))
  return {
    name: 's3',
    port: s.port,
    connection: (port) => ({ label: 'faulty', type: 's3', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', path_style: true, access_key_id: s.accessKeyId, secret_access_key: s.secretAccessKey, path: bucket }),
    stop: () => s.stop(),
    start: () => s.start(),
    put,
    async putBig(rel, size) {
      // s3rver serves an object's size from its file's: a sparse file, as on the other backends.
      await put(rel, 'x')
      const file = join(s.dir, bucket, `${rel}._S3rver_object`)
      if (!existsSync(file)) throw new Error(`s3rver keeps ${rel} elsewhere than ${file}`)
      truncateSync(file, size)
    },
    async putMany(rel, count) {
      const names = Array.from({ length: count }, (_, i) => `${rel}/entry-with-a-longish-name-${String(i).padStart(5, '0')}.txt`)
      for (let i = 0; i < names.length; i += 32) await Promise.all(names.slice(i, i + 32).map((k) => put(k, 'x')))
    },
    async read(rel) {
      try {
        const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: rel }))
        return Buffer.from(await r.Body!.transformToByteArray())
      } catch (err) {
        if ((err as { name?: string }).name === 'NoSuchKey') return null
        throw err
      }
    },
    async temps() {
      return [...(await keys()).filter((k) => TEMP_NAME.test(k)), ...s.pendingUploads(bucket).map((u) => `multipart upload ${u}`)]
    },
  }
}

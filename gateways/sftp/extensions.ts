/**
 * @module gateways/sftp/extensions
 * SFTP extended requests: those advertised in VERSION (`ADVERTISED`), and
 * posix-rename@openssh.com's reply. statvfs@openssh.com and fstatvfs@openssh.com answer
 * where the storage tells its size and free space (local folders, tmp), else
 * OP_UNSUPPORTED. Not advertised, and refused: fsync@openssh.com (nothing written is
 * durable before CLOSE commits it, so answering OK would claim what is not true),
 * hardlink@openssh.com (no links are served). See docs/sftp-gateway.md.
 */
import type { Space } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import type { FileHandle, RequestContext, View } from '../../core/view.js'
import { MAX_HANDLES, MAX_PACKET, MAX_READ, MAX_WRITE } from './limits.js'
import { Fields, Malformed } from './wire/codec.js'
import { changesNothing } from '../../core/permissions.js'

/** name → version, as VERSION lists them. */
export const ADVERTISED: Readonly<Record<string, string>> = {
  'posix-rename@openssh.com': '1',
  'limits@openssh.com': '1',
  'copy-data': '1',
  'statvfs@openssh.com': '2',
  'fstatvfs@openssh.com': '2',
}

export interface ExtensionContext {
  readonly fs: View
  ctx(): RequestContext
  /** A raw protocol path → canonical (throws EINVAL). */
  path(raw: string): string
  /** An open file of this session, by handle (throws EINVAL, EISDIR). */
  file(handle: Buffer): FileHandle
  /** Waits for this session's OPEN and CLOSE of these paths that came before (call it before any await). */
  settled(paths: readonly string[]): Promise<void>
  ok(): void
  reply(data: Buffer): void
}

/** copy-data moves this much at a time: one read in memory per copy. */
const COPY_CHUNK = MAX_READ

/** max-packet-length, max-read-length, max-write-length, max-open-handles: uint64 each. */
function limitsReply(): Buffer {
  const b = Buffer.alloc(32)
  for (const [i, v] of [MAX_PACKET, MAX_READ, MAX_WRITE, MAX_HANDLES].entries()) b.writeBigUInt64BE(BigInt(v), i * 8)
  return b
}

/** statvfs's f_flag bits. */
const ST_RDONLY = 1
const ST_NOSUID = 2

/** statvfs@openssh.com's reply: eleven uint64 (bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax). */
function statvfsReply(s: Space, readOnly: boolean): Buffer {
  const frsize = Math.max(1, s.blockSize)
  const blocks = (n: number) => Math.floor(n / frsize)
  const values = [frsize, frsize, blocks(s.totalBytes), blocks(s.freeBytes), blocks(readOnly ? 0 : s.availableBytes), s.totalFiles, s.freeFiles, s.freeFiles, 0, ST_NOSUID | (readOnly ? ST_RDONLY : 0), s.maxNameBytes]
  const b = Buffer.alloc(values.length * 8)
  for (const [i, v] of values.entries()) b.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(v))), i * 8)
  return b
}

/** Reads an extension's fields; a malformed one is this request's error, not the session's. */
function fields<T>(data: Buffer, read: (f: Fields) => T): T {
  try {
    return read(new Fields(data))
  } catch (err) {
    if (err instanceof Malformed) throw new FsError('EINVAL', 'malformed extended request')
    throw err
  }
}

export async function handleExtended(name: string, data: Buffer, x: ExtensionContext): Promise<void> {
  switch (name) {
    case 'posix-rename@openssh.com': {
      // Unlike SFTP v3's RENAME, replaces an existing file target.
      const [from, to] = fields(data, (f) => [x.path(f.string()), x.path(f.string())] as const)
      await x.settled([from, to])
      await x.fs.rename(x.ctx(), from, to, { overwrite: true })
      return x.ok()
    }
    case 'limits@openssh.com':
      return x.reply(limitsReply())
    case 'copy-data':
      await copyData(data, x)
      return x.ok()
    case 'statvfs@openssh.com': {
      const raw = fields(data, (f) => f.string())
      return x.reply(statvfsReply(await x.fs.space(x.ctx(), x.path(raw)), changesNothing(x.fs.permissions)))
    }
    case 'fstatvfs@openssh.com': {
      const handle = fields(data, (f) => f.bytes())
      return x.reply(statvfsReply(await x.fs.space(x.ctx(), x.file(handle).path), changesNothing(x.fs.permissions)))
    }
    case 'fsync@openssh.com':
      throw new FsError('ENOTSUP', 'written data is committed when the file is closed')
    default:
      throw new FsError('ENOTSUP', `${name} is not supported`)
  }
}

/**
 * copy-data (draft-ietf-secsh-filexfer-extensions): from one open handle to another, as
 * a series of READs and WRITEs would, through the storage's own handles (so it is right
 * on every backend), one chunk in memory at a time. A length of 0 copies to the end.
 */
async function copyData(data: Buffer, x: ExtensionContext): Promise<void> {
  const req = fields(data, (f) => ({ from: f.bytes(), readAt: f.u64(), length: f.u64(), to: f.bytes(), writeAt: f.u64() }))
  const src = x.file(req.from)
  const dst = x.file(req.to)
  if (!src.flags.read) throw new FsError('EACCES', 'the source was not opened for reading')
  if (!dst.flags.write) throw new FsError('EACCES', 'the target was not opened for writing')
  const span = req.length === 0 ? Infinity : req.length
  if (src === dst && req.readAt < req.writeAt + span && req.writeAt < req.readAt + span) {
    throw new FsError('EINVAL', 'copy-data: overlapping ranges of one file')
  }
  const { signal } = x.ctx()
  let left = span
  let readAt = req.readAt
  let writeAt = req.writeAt
  while (left > 0) {
    const chunk = await src.read(readAt, Math.min(COPY_CHUNK, left))
    if (chunk.byteLength === 0) break
    if (signal.aborted) throw new FsError('ECANCELED', 'the session ended')
    await dst.write(writeAt, chunk)
    readAt += chunk.byteLength
    writeAt += chunk.byteLength
    left -= chunk.byteLength
  }
}

/**
 * @module gateways/sftp/extensions
 * SFTP extended requests. ssh2 1.17's server sends a fixed VERSION packet (no
 * extension list) and has no public way to send an EXTENDED_REPLY, so: no extension
 * is advertised (OpenSSH's `sftp` and rclone then do without), and only extensions
 * whose answer is a plain status are served to clients that send them anyway
 * (paramiko's `posix_rename`). Those needing a reply (statvfs@openssh.com,
 * limits@openssh.com) are OP_UNSUPPORTED. See docs/gateways.md, "SFTP gateway".
 */
import { FsError } from '../../core/errors.js'
import type { ProtocolFs } from '../../core/protocol-fs.js'
import type { RequestContext } from '../../core/storage.js'

export interface ExtensionContext {
  readonly fs: ProtocolFs
  ctx(): RequestContext
  /** A raw protocol path → canonical (throws EINVAL). */
  path(raw: string): string
  ok(): void
}

/** The SSH `string`s at the start of an extension's data. */
function strings(data: Buffer | undefined, count: number): string[] {
  const out: string[] = []
  let p = 0
  for (let i = 0; i < count; i++) {
    if (data === undefined || p + 4 > data.length) throw new FsError('EINVAL', 'malformed extended request')
    const len = data.readUInt32BE(p)
    if (p + 4 + len > data.length) throw new FsError('EINVAL', 'malformed extended request')
    out.push(data.toString('utf8', p + 4, p + 4 + len))
    p += 4 + len
  }
  return out
}

export async function handleExtended(name: string, data: Buffer | undefined, x: ExtensionContext): Promise<void> {
  switch (name) {
    case 'posix-rename@openssh.com': {
      // Unlike SFTP v3's RENAME, replaces an existing file target.
      const [from, to] = strings(data, 2)
      await x.fs.rename(x.ctx(), x.path(from!), x.path(to!), { overwrite: true })
      return x.ok()
    }
    case 'fsync@openssh.com':
      // Nothing written is durable before CLOSE commits it (uploads are atomic):
      // answering OK here would claim what is not true.
      throw new FsError('ENOTSUP', 'written data is committed when the file is closed')
    default:
      throw new FsError('ENOTSUP', `${name} is not supported`)
  }
}

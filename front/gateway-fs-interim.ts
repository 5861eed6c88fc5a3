/**
 * @module front/gateway-fs-interim
 * TEMPORARY (issue 13): a minimal ProtocolFs over `Storage`, so gateway logins can be
 * wired and tested before the real one (front/gateway-fs.ts, `createProtocolFs`)
 * lands. Reads, listings (one page) and single mkdirs only; every other call is
 * ENOTSUP. Delete this file when front/app.ts uses `createProtocolFs`.
 */
import { FsError } from '../core/errors.js'
import type { FileHandle, FsEntry, OpenFlags, ProtocolFs } from '../core/protocol-fs.js'
import type { RequestContext, Storage } from '../core/storage.js'

export function interimProtocolFs(storage: Storage, readOnly: boolean): ProtocolFs {
  const entry = async (ctx: RequestContext, path: string): Promise<FsEntry> => ({ ...(await storage.stat(ctx, path)), mode: null })
  const writable = () => {
    if (readOnly) throw new FsError('EACCES', 'read-only')
  }
  const unsupported = async (): Promise<never> => {
    writable()
    throw new FsError('ENOTSUP', 'not yet')
  }
  return {
    readOnly,
    abilities: { setTimes: false, modes: false, serverSideCopy: false, emptyDirs: true },
    stat: entry,
    lstat: entry,
    async list(ctx, dir) {
      return { entries: (await storage.list(ctx, dir)).map((e) => ({ ...e, mode: null })), cursor: null }
    },
    async mkdir(ctx, dir) {
      writable()
      await storage.mkdir(ctx, dir)
    },
    rmdir: unsupported,
    unlink: unsupported,
    rename: unsupported,
    setTimes: unsupported,
    setMode: unsupported,
    truncate: unsupported,
    copy: unsupported,
    async open(ctx: RequestContext, path: string, flags: OpenFlags): Promise<FileHandle> {
      if (flags.write) writable()
      if (flags.write) throw new FsError('ENOTSUP', 'not yet')
      const st = await entry(ctx, path)
      if (st.kind === 'dir') throw new FsError('EISDIR', 'a directory')
      return {
        path,
        flags,
        async read(offset, length) {
          if (offset >= st.size || length === 0) return new Uint8Array(0)
          const r = await storage.read(ctx, path, { start: offset, end: Math.min(st.size, offset + length) - 1 })
          const chunks: Uint8Array[] = []
          for await (const c of r.body) chunks.push(c)
          return Buffer.concat(chunks)
        },
        write: unsupported,
        stat: async () => st,
        close: async () => {},
        abort() {},
      }
    },
    close() {},
  }
}

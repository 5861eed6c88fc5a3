/**
 * TEMPORARY (until front/gateway-fs.ts and the gateway login land on main): a
 * ProtocolFs over a local folder with node:fs, and a login that accepts one user, so
 * the SFTP gateway's protocol handling can be tested with real clients meanwhile.
 */
import { type FileHandle as NodeHandle, constants, lstat, mkdir, open, opendir, realpath, rename, rmdir, stat, truncate, unlink, utimes, chmod, copyFile } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join } from 'node:path'
import { FsError } from '../../../core/errors.js'
import type { Gateway, GatewayLogin } from '../../../core/gateway.js'
import type { FileHandle, FsEntry, OpenFlags, ProtocolFs } from '../../../core/protocol-fs.js'

const classify = (err: unknown): FsError => {
  const code = (err as NodeJS.ErrnoException).code
  const map: Record<string, FsError['code']> = { ENOENT: 'ENOENT', EEXIST: 'EEXIST', ENOTDIR: 'ENOTDIR', EISDIR: 'EISDIR', ENOTEMPTY: 'ENOTEMPTY', EACCES: 'EACCES', EPERM: 'EACCES', EINVAL: 'EINVAL' }
  return err instanceof FsError ? err : new FsError(map[code ?? ''] ?? 'EIO', (err as Error).message)
}
const wrap = <T>(p: Promise<T>): Promise<T> => p.catch((e: unknown) => Promise.reject(classify(e)))

export function tempFs(root: string, readOnly = false): ProtocolFs {
  const abs = (p: string) => join(root, p)
  const w = () => {
    if (readOnly) throw new FsError('EACCES', 'read-only')
  }
  const entry = (p: string, s: Stats, link = false): FsEntry => ({
    path: p,
    name: p.slice(p.lastIndexOf('/') + 1),
    kind: s.isDirectory() ? 'dir' : 'file',
    size: s.isDirectory() ? 0 : s.size,
    mtimeMs: s.mtimeMs,
    mode: s.mode & 0o7777,
    ...(link ? { link } : {}),
  })
  const inside = async (p: string) => {
    const real = await wrap(realpath(abs(p)))
    const r = await realpath(root)
    if (real !== r && !real.startsWith(r + '/')) throw new FsError('EACCES', 'outside')
  }
  return {
    readOnly,
    abilities: { setTimes: true, modes: true, serverSideCopy: true, emptyDirs: true },
    async stat(_c, p) {
      await inside(p)
      return entry(p, await wrap(stat(abs(p))))
    },
    async lstat(_c, p) {
      return entry(p, await wrap(lstat(abs(p))))
    },
    async list(_c, dir, opts) {
      await inside(dir)
      const names: string[] = []
      for await (const d of await wrap(opendir(abs(dir)))) names.push(d.name)
      names.sort()
      const start = opts?.cursor ? Number(opts.cursor) : 0
      const limit = opts?.limit ?? 1000
      const slice = names.slice(start, start + limit)
      const entries: FsEntry[] = []
      for (const n of slice) {
        const p = dir === '/' ? `/${n}` : `${dir}/${n}`
        entries.push(entry(p, await wrap(stat(abs(p)).catch(() => lstat(abs(p))))))
      }
      return { entries, cursor: start + limit < names.length ? String(start + limit) : null }
    },
    async mkdir(_c, p) {
      w()
      await wrap(mkdir(abs(p)))
    },
    async rmdir(_c, p) {
      w()
      if (p === '/') throw new FsError('EACCES', 'root')
      await wrap(rmdir(abs(p)))
    },
    async unlink(_c, p) {
      w()
      await wrap(unlink(abs(p)))
    },
    async rename(_c, from, to, o) {
      w()
      if (!o.overwrite) {
        const exists = await lstat(abs(to)).then(() => true, () => false)
        if (exists) throw new FsError('EEXIST', `${to} exists`)
      }
      await wrap(rename(abs(from), abs(to)))
    },
    async setTimes(_c, p, t) {
      w()
      await wrap(utimes(abs(p), (t.atimeMs ?? t.mtimeMs) / 1000, t.mtimeMs / 1000))
    },
    async setMode(_c, p, m) {
      w()
      await wrap(chmod(abs(p), m))
    },
    async truncate(_c, p, size) {
      w()
      await wrap(truncate(abs(p), size))
    },
    async copy(_c, from, to, o) {
      w()
      await wrap(copyFile(abs(from), abs(to), o.overwrite ? 0 : constants.COPYFILE_EXCL))
      return entry(to, await stat(abs(to)))
    },
    async open(_c, p, flags: OpenFlags): Promise<FileHandle> {
      if (flags.write) w()
      await inside(p).catch((e: FsError) => {
        if (e.code !== 'ENOENT' || !flags.create) throw e
      })
      let f = flags.write ? (flags.read ? 'r+' : 'r+') : 'r'
      let n: NodeHandle
      if (flags.write && flags.create) {
        n = await wrap(open(abs(p), (flags.exclusive ? constants.O_EXCL : 0) | constants.O_CREAT | constants.O_RDWR | (flags.truncate ? constants.O_TRUNC : 0) | (flags.append ? constants.O_APPEND : 0)))
      } else {
        if (flags.truncate) f = 'r+'
        n = await wrap(open(abs(p), f))
        if (flags.truncate && flags.write) await n.truncate(0)
      }
      if ((await n.stat()).isDirectory()) {
        await n.close()
        throw new FsError('EISDIR', 'dir')
      }
      return {
        path: p,
        flags,
        async read(offset, length) {
          const buf = Buffer.alloc(length)
          const { bytesRead } = await n.read(buf, 0, length, offset)
          return buf.subarray(0, bytesRead)
        },
        async write(offset, data) {
          await n.write(data, 0, data.byteLength, flags.append ? null : offset)
        },
        async stat() {
          return entry(p, await n.stat())
        },
        async close() {
          await n.close()
        },
        abort() {
          void n.close().catch(() => {})
        },
      }
    },
    close() {},
  }
}

/** The gateway, logging `user`/`password` into `root` (TEMPORARY, see above). */
export function withTempLogin(g: Gateway, root: string, user: string, password: string, readOnly = false): Gateway {
  const login: GatewayLogin = {
    async login(req) {
      if (req.user === user && req.password === password) return { ok: true, user, fs: tempFs(root, readOnly) }
      await new Promise((r) => setTimeout(r, 200))
      return { ok: false, reason: 'refused', message: 'refused' }
    },
    keyAuthorized: async () => false,
  }
  return {
    name: g.name,
    get port() {
      return g.port ?? 0
    },
    start: (ctx) => g.start({ ...ctx, login }),
    stop: () => g.stop(),
  }
}

/**
 * @module gateways/sftp/session
 * One SFTP v3 session (a `sftp` subsystem channel) over a logged-in user's
 * `ProtocolFs`: each request's path goes through `resolveProtocolPath` (the working
 * directory is `/`, the user's root), each failure through the one status table
 * (./errors.ts). The session holds its handle table and nothing else; its end aborts
 * every handle still open, so a transfer cut before CLOSE commits nothing.
 */
import { setMaxListeners } from 'node:events'
import { FsError } from '../../core/errors.js'
import { resolveProtocolPath } from '../../core/paths.js'
import type { FileHandle, FsEntry, OpenFlags, ProtocolFs } from '../../core/protocol-fs.js'
import type { RequestContext } from '../../core/storage.js'
import { longName, toAttrs } from './attrs.js'
import { toStatus } from './errors.js'
import { ADVERTISED, handleExtended } from './extensions.js'
import { HandleTable } from './handles.js'
import { MAX_HANDLES, MAX_PACKET, MAX_READ } from './limits.js'
import type { SendBudget } from './send-budget.js'
import { type Attrs, OPEN_MODE, STATUS } from './wire/codec.js'
import { type SftpChannel, SftpServer } from './wire/server.js'
/** Entries fetched from the storage per listing page, and sent per READDIR answer. */
const LIST_PAGE = 1000
const NAMES_PER_READDIR = 100


interface FileState {
  readonly kind: 'file'
  readonly file: FileHandle
  /** FSETSTAT on a handle open for writing: applied once CLOSE has committed the file. */
  after?: Attrs
}

interface DirState {
  readonly kind: 'dir'
  readonly path: string
  /** Entries fetched and not yet sent. */
  pending: FsEntry[]
  cursor: string | null
  done: boolean
}

type Open = FileState | DirState

export interface SessionOptions {
  readonly fs: ProtocolFs
  /** The logged-in user, shown as owner in long names. */
  readonly user: string
  readonly connId: string
  readonly address: string
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void
  readonly socket?: { cork(): void; uncork(): void }
  /** The connection's work: requests in flight and files open, all its sessions together (a shutdown waits for it). */
  readonly work?: Work
  /** The connection's cap on bytes on their way to the client: READs wait for room in it. */
  readonly sendBudget?: SendBudget
}

export function flagsOf(pflags: number): OpenFlags {
  const write = (pflags & OPEN_MODE.WRITE) !== 0
  return {
    // Neither READ nor WRITE: a client that only means to look (treated as READ).
    read: (pflags & OPEN_MODE.READ) !== 0 || !write,
    write,
    append: (pflags & OPEN_MODE.APPEND) !== 0,
    create: (pflags & OPEN_MODE.CREAT) !== 0,
    truncate: (pflags & OPEN_MODE.TRUNC) !== 0,
    exclusive: (pflags & OPEN_MODE.EXCL) !== 0,
  }
}

/** What a connection has under way: requests in flight plus files open. */
export interface Work {
  busy: number
}

/** Serves SFTP on `channel` (an accepted `sftp` subsystem) until it ends. */
export function serveSftp(channel: SftpChannel, opts: SessionOptions): void {
  const { fs } = opts
  const life = new AbortController()
  const sftp = new SftpServer(channel, {
    maxPacket: MAX_PACKET,
    extensions: ADVERTISED,
    onClose: () => end(),
    ...(opts.socket ? { socket: opts.socket } : {}),
    log: (level, msg, fields) => opts.log(level, msg, { connId: opts.connId, ...fields }),
  })
  // Every open handle, and every request in flight, listens to the session's end.
  setMaxListeners(MAX_HANDLES + 1024, life.signal)
  const handles = new HandleTable<Open>(MAX_HANDLES)
  let seq = 0
  const ctx = (): RequestContext => ({
    requestId: `${opts.connId}.${++seq}`,
    signal: life.signal,
    client: { address: opts.address, credential: `sftp:${opts.user}` },
  })
  const path = (raw: string): string => resolveProtocolPath('/', raw)

  const work = opts.work ?? { busy: 0 }
  /** Runs one request: its answer, or its error as a status. */
  const run = (reqid: number, op: string, fn: () => Promise<void> | void): void => {
    work.busy++
    void (async () => {
      try {
        await fn()
      } catch (err) {
        const st = toStatus(err)
        if (st.bug) opts.log('error', 'sftp request failed', { op, connId: opts.connId, err: String((err as Error)?.stack ?? err) })
        sftp.status(reqid, st.code, st.message)
      } finally {
        work.busy--
      }
    })()
  }
  const ok = (reqid: number) => sftp.status(reqid, STATUS.OK)
  /** READs' reservations in the send budget not yet given back (the channel may end before taking an answer). */
  const reserved = new Set<() => void>()
  const end = (): void => {
    if (life.signal.aborted) return
    life.abort()
    for (const release of reserved) release()
    reserved.clear()
    for (const h of handles.drain()) {
      if (h.kind !== 'file') continue
      work.busy--
      h.file.abort()
    }
  }

  const fileOf = (id: Buffer): FileState => {
    const h = handles.get(id)
    if (h === undefined) throw new FsError('EINVAL', 'no such handle')
    if (h.kind !== 'file') throw new FsError('EISDIR', 'the handle is a directory')
    return h
  }
  const dirOf = (id: Buffer): DirState => {
    const h = handles.get(id)
    if (h === undefined) throw new FsError('EINVAL', 'no such handle')
    if (h.kind !== 'dir') throw new FsError('ENOTDIR', 'the handle is a file')
    return h
  }
  const newHandle = (state: Open): Buffer => {
    const id = handles.add(state)
    if (id === null) throw new FsError('EINVAL', `too many open handles (at most ${MAX_HANDLES} per session)`)
    if (state.kind === 'file') work.busy++
    return id
  }

  /**
   * SETSTAT and FSETSTAT: everything asked is checked against what the storage can do
   * before anything changes, so a refused request changes nothing.
   */
  const checkSettable = (a: Attrs): void => {
    if (fs.readOnly) throw new FsError('EACCES', 'read-only: nothing can be changed')
    if (a.uid !== undefined || a.gid !== undefined) throw new FsError('ENOTSUP', 'file owners cannot be changed on this server')
    if (a.mode !== undefined && !fs.abilities.modes) throw new FsError('ENOTSUP', 'this storage keeps no permission bits')
    if (a.mtime !== undefined && !fs.abilities.setTimes) throw new FsError('ENOTSUP', 'this storage does not let modification times be set')
  }
  const applySettable = async (p: string, a: Attrs): Promise<void> => {
    if (a.size !== undefined) await fs.truncate(ctx(), p, a.size)
    if (a.mode !== undefined) await fs.setMode(ctx(), p, a.mode & 0o7777)
    if (a.mtime !== undefined) {
      await fs.setTimes(ctx(), p, { mtimeMs: a.mtime * 1000, ...(a.atime !== undefined ? { atimeMs: a.atime * 1000 } : {}) })
    }
  }

  sftp.on('OPEN', (reqid, filename, pflags) => {
    // Attributes sent with OPEN (OpenSSH sends the local file's permissions) are not
    // applied: a client that means to keep them sends SETSTAT/FSETSTAT (`put -p`).
    run(reqid, 'OPEN', async () => {
      if (handles.size >= MAX_HANDLES) throw new FsError('EINVAL', `too many open handles (at most ${MAX_HANDLES} per session)`)
      const file = await fs.open(ctx(), path(filename), flagsOf(pflags))
      if (life.signal.aborted) return file.abort()
      try {
        sftp.handle(reqid, newHandle({ kind: 'file', file }))
      } catch (err) {
        file.abort()
        throw err
      }
    })
  })

  const answerRead = (reqid: number, data: Uint8Array, len: number, sent?: () => void): void => {
    if (data.byteLength === 0 && len > 0) {
      sent?.()
      return void sftp.status(reqid, STATUS.EOF)
    }
    sftp.data(reqid, data, sent)
  }
  sftp.on('READ', (reqid, id, offset, len) => {
    run(reqid, 'READ', async () => {
      const { file } = fileOf(id)
      if (!file.flags.read) throw new FsError('EACCES', 'the file was not opened for reading')
      const want = Math.min(len, MAX_READ)
      if (opts.sendBudget === undefined) return answerRead(reqid, await file.read(offset, want), len)
      // Room for the answer first: a client that stops reading holds at most the budget.
      const release = await opts.sendBudget.reserve(want)
      reserved.add(release)
      const sent = () => {
        reserved.delete(release)
        release()
      }
      try {
        if (life.signal.aborted) throw new FsError('ECANCELED', 'the session is over')
        answerRead(reqid, await file.read(offset, want), len, sent)
      } catch (err) {
        sent()
        throw err
      }
    })
  })

  sftp.on('WRITE', (reqid, id, offset, data) => {
    run(reqid, 'WRITE', async () => {
      const { file } = fileOf(id)
      if (!file.flags.write) throw new FsError('EACCES', 'the file was not opened for writing')
      await file.write(offset, data)
      ok(reqid)
    })
  })

  sftp.on('CLOSE', (reqid, id) => {
    run(reqid, 'CLOSE', async () => {
      const h = handles.take(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      if (h.kind === 'file') {
        work.busy-- // this CLOSE request counts until its answer is sent
        await h.file.close()
        if (h.after !== undefined) await applySettable(h.file.path, h.after)
      }
      ok(reqid)
    })
  })

  sftp.on('OPENDIR', (reqid, raw) => {
    run(reqid, 'OPENDIR', async () => {
      const p = path(raw)
      const e = await fs.stat(ctx(), p)
      if (e.kind !== 'dir') throw new FsError('ENOTDIR', `${raw} is not a directory`)
      sftp.handle(reqid, newHandle({ kind: 'dir', path: p, pending: [], cursor: null, done: false }))
    })
  })

  sftp.on('READDIR', (reqid, id) => {
    run(reqid, 'READDIR', async () => {
      const d = dirOf(id)
      while (d.pending.length === 0 && !d.done) {
        const page = await fs.list(ctx(), d.path, { cursor: d.cursor, limit: LIST_PAGE })
        d.pending = [...page.entries]
        d.cursor = page.cursor
        d.done = page.cursor === null
      }
      if (d.pending.length === 0) return void sftp.status(reqid, STATUS.EOF)
      const now = Date.now()
      const batch = d.pending.splice(0, NAMES_PER_READDIR)
      sftp.name(
        reqid,
        batch.map((e) => ({ filename: e.name, longname: longName(e, opts.user, now), attrs: toAttrs(e) })),
      )
    })
  })

  sftp.on('STAT', (reqid, raw) => run(reqid, 'STAT', async () => void sftp.attrs(reqid, toAttrs(await fs.stat(ctx(), path(raw))))))
  sftp.on('LSTAT', (reqid, raw) => run(reqid, 'LSTAT', async () => void sftp.attrs(reqid, toAttrs(await fs.lstat(ctx(), path(raw))))))
  sftp.on('FSTAT', (reqid, id) => {
    run(reqid, 'FSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      sftp.attrs(reqid, toAttrs(h.kind === 'file' ? await h.file.stat() : await fs.stat(ctx(), h.path)))
    })
  })

  sftp.on('SETSTAT', (reqid, raw, attrs) => {
    run(reqid, 'SETSTAT', async () => {
      const a = attrs
      checkSettable(a)
      await applySettable(path(raw), a)
      ok(reqid)
    })
  })

  sftp.on('FSETSTAT', (reqid, id, attrs) => {
    run(reqid, 'FSETSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      const a = attrs
      checkSettable(a)
      if (h.kind === 'dir') return void (await applySettable(h.path, a), ok(reqid))
      if (!h.file.flags.write) return void (await applySettable(h.file.path, a), ok(reqid))
      // A file being written is committed at CLOSE: times and modes set now would be
      // replaced then (OpenSSH's `put -p` sends them just before CLOSE), so they are
      // applied after the commit. A size cannot wait: it would undo later writes.
      if (a.size !== undefined) throw new FsError('ENOTSUP', 'a file open for writing cannot be truncated: close it first, or set its size by path')
      h.after = { ...h.after, ...a }
      ok(reqid)
    })
  })

  sftp.on('REMOVE', (reqid, raw) => run(reqid, 'REMOVE', async () => (await fs.unlink(ctx(), path(raw)), ok(reqid))))
  sftp.on('RMDIR', (reqid, raw) => run(reqid, 'RMDIR', async () => (await fs.rmdir(ctx(), path(raw)), ok(reqid))))
  // Attributes sent with MKDIR are not applied (as with OPEN).
  sftp.on('MKDIR', (reqid, raw) => run(reqid, 'MKDIR', async () => (await fs.mkdir(ctx(), path(raw)), ok(reqid))))
  // SFTP v3's RENAME never replaces an existing target (posix-rename@openssh.com does).
  sftp.on('RENAME', (reqid, from, to) => {
    run(reqid, 'RENAME', async () => (await fs.rename(ctx(), path(from), path(to), { overwrite: false }), ok(reqid)))
  })
  sftp.on('REALPATH', (reqid, raw) => {
    run(reqid, 'REALPATH', () => {
      const p = path(raw === '' ? '.' : raw)
      sftp.name(reqid, [{ filename: p, longname: p, attrs: {} }])
    })
  })
  const noLinks = (reqid: number) => sftp.status(reqid, STATUS.OP_UNSUPPORTED, 'symbolic links are not served')
  sftp.on('READLINK', noLinks)
  sftp.on('SYMLINK', noLinks)

  sftp.on('EXTENDED', (reqid, name, data) => {
    run(reqid, name, () =>
      handleExtended(name, data, {
        fs,
        ctx,
        path,
        file: (id) => fileOf(id).file,
        ok: () => ok(reqid),
        reply: (bytes) => sftp.extendedReply(reqid, bytes),
      }),
    )
  })
}

/**
 * @module gateways/sftp/session
 * One SFTP v3 session (a `sftp` subsystem channel) over a logged-in user's
 * `ProtocolFs`: each request's path goes through the SFTP door's rule (core/paths.ts `DOOR_PATH_RULES.sftp`; the working
 * directory is `/`, the user's root), each failure through the one status table
 * (./errors.ts). The session holds its handle table and what it is writing
 * (./own-writes.ts: its own files are visible to it from OPEN on); its end aborts every
 * handle still open, so a transfer cut before CLOSE commits nothing. READDIRs on one
 * handle are answered one after another, each with the next names: clients (paramiko,
 * sshfs) send several at once.
 */
import { setMaxListeners } from 'node:events'
import { FsError } from '../../core/errors.js'
import { DOOR_PATH_RULES } from '../../core/paths.js'
import type { FileHandle, FsEntry, OpenFlags, ProtocolFs } from '../../core/protocol-fs.js'
import type { RequestContext } from '../../core/storage.js'
import { longName, toAttrs } from './attrs.js'
import { toStatus } from './errors.js'
import { ADVERTISED, handleExtended } from './extensions.js'
import { HandleTable } from './handles.js'
import { MAX_HANDLES, MAX_PACKET, MAX_READ } from './limits.js'
import type { SendBudget } from './send-budget.js'
import { type OwnWrite, OwnWrites, ReadAfterWrite } from './own-writes.js'
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
  /** For a file open for writing: what the session's later requests on its path see. */
  own?: OwnWrite<FileState>
}

interface DirState {
  readonly kind: 'dir'
  readonly path: string
  /** Entries fetched and not yet sent. */
  pending: FsEntry[]
  cursor: string | null
  done: boolean
  /** The READDIR before this one (they are answered in turn). */
  turn: Promise<unknown>
  /** Files of the folder this session is writing and no page has shown yet: shown at the end. */
  own: Map<string, FileState>
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
  const path = (raw: string): string => DOOR_PATH_RULES.sftp('/', raw)

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
      h.own?.end()
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
    if (!fs.permissions.can_upload) throw new FsError('EACCES', 'this login may not change files (it has no can_upload)')
    if (a.uid !== undefined || a.gid !== undefined) throw new FsError('ENOTSUP', 'file owners cannot be changed on this server')
    if (a.mode !== undefined && !fs.abilities.modes) throw new FsError('ENOTSUP', 'this storage keeps no permission bits')
    if (a.mtime !== undefined && !fs.abilities.setTimes) throw new FsError('ENOTSUP', 'this storage does not let modification times be set')
  }
  /** A file open for writing: its size now, the rest once CLOSE has committed it. */
  const setOnHandle = async (h: FileState, a: Attrs): Promise<void> => {
    // A size cannot wait (it would undo later writes): the handle sets it (a file being
    // uploaded in order only keeps its size, which is what scp asks after writing).
    if (a.size !== undefined) await h.file.truncate(a.size)
    // Times and modes set now would be replaced by the commit (OpenSSH's `put -p` sends
    // them just before CLOSE), so they are applied after it.
    const { size: _size, ...rest } = a
    if (Object.keys(rest).length > 0) h.after = { ...h.after, ...rest }
  }
  const applySettable = async (p: string, a: Attrs): Promise<void> => {
    if (a.size !== undefined) await fs.truncate(ctx(), p, a.size)
    if (a.mode !== undefined) await fs.setMode(ctx(), p, a.mode & 0o7777)
    if (a.mtime !== undefined) {
      await fs.setTimes(ctx(), p, { mtimeMs: a.mtime * 1000, ...(a.atime !== undefined ? { atimeMs: a.atime * 1000 } : {}) })
    }
  }

  const own = new OwnWrites<FileState>()
  /** Runs `fn` once this session's OPEN and CLOSE of `raw` before now are over; it gets the file if still open for writing. */
  const afterOwn = <T>(raw: string, fn: (p: string, writing: FileState | null) => Promise<T>): Promise<T> => {
    const p = path(raw)
    const before = own.before(p)
    return OwnWrites.settle(before).then((writing) => fn(p, writing))
  }

  /** Waits for this session's OPEN and CLOSE of `paths` that came before now. */
  const settled = (paths: readonly string[]): Promise<void> => {
    const before = paths.map((p) => own.before(p))
    return Promise.all(before.map((b) => OwnWrites.settle(b))).then(() => {})
  }

  sftp.on('OPEN', (reqid, filename, pflags) => {
    // Attributes sent with OPEN (OpenSSH sends the local file's permissions) are not
    // applied: a client that means to keep them sends SETSTAT/FSETSTAT (`put -p`).
    run(reqid, 'OPEN', async () => {
      const p = path(filename)
      const flags = flagsOf(pflags)
      const before = own.before(p)
      const mine = flags.write ? own.begin(p) : undefined
      try {
        if (handles.size >= MAX_HANDLES) throw new FsError('EINVAL', `too many open handles (at most ${MAX_HANDLES} per session)`)
        const writing = await OwnWrites.settle(before)
        const open = () => fs.open(ctx(), p, flags)
        const file = writing && !flags.write ? new ReadAfterWrite(p, flags, writing.file, writing.own!, open) : await open()
        if (life.signal.aborted) {
          file.abort()
          return mine?.settleOpen(null)
        }
        const state: FileState = { kind: 'file', file, ...(mine ? { own: mine } : {}) }
        try {
          sftp.handle(reqid, newHandle(state))
        } catch (err) {
          file.abort()
          throw err
        }
        mine?.settleOpen(state)
      } catch (err) {
        mine?.settleOpen(null)
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
      const h = fileOf(id)
      if (!h.file.flags.write) throw new FsError('EACCES', 'the file was not opened for writing')
      try {
        await h.file.write(offset, data)
      } catch (err) {
        // A failed write breaks the handle for good (its upload is dropped, CLOSE will
        // fail): the file will never be committed, so this session's reads of it no longer
        // wait for a CLOSE that a client whose upload failed may never send.
        h.own?.end()
        throw err
      }
      ok(reqid)
    })
  })

  sftp.on('CLOSE', (reqid, id) => {
    run(reqid, 'CLOSE', async () => {
      const h = handles.take(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      if (h.kind === 'file') {
        work.busy-- // this CLOSE request counts until its answer is sent
        const commit = (async () => {
          await h.file.close()
          if (h.after !== undefined) await applySettable(h.file.path, h.after)
        })()
        if (h.own) h.own.closing = commit.then(() => {}, () => {})
        try {
          await commit
        } finally {
          h.own?.end()
        }
      }
      ok(reqid)
    })
  })

  sftp.on('OPENDIR', (reqid, raw) => {
    run(reqid, 'OPENDIR', async () => {
      const p = path(raw)
      const e = await fs.stat(ctx(), p)
      if (e.kind !== 'dir') throw new FsError('ENOTDIR', `${raw} is not a directory`)
      // This session's files in that folder: their OPENs and CLOSEs in progress are over first.
      const mine = own.inDir(p)
      const ownFiles = new Map<string, FileState>()
      for (const w of mine) {
        const writing = await OwnWrites.settle(w)
        if (writing) ownFiles.set(w.path.slice(w.path.lastIndexOf('/') + 1), writing)
      }
      sftp.handle(reqid, newHandle({ kind: 'dir', path: p, pending: [], cursor: null, done: false, turn: Promise.resolve(), own: ownFiles }))
    })
  })

  /** The next names of a listing (none: its end). */
  const nextNames = async (d: DirState): Promise<FsEntry[]> => {
    while (d.pending.length === 0 && !d.done) {
      const page = await fs.list(ctx(), d.path, { cursor: d.cursor, limit: LIST_PAGE })
      d.cursor = page.cursor
      d.done = page.cursor === null
      d.pending = []
      for (const e of page.entries) {
        // A file this session is writing shows as written so far (its new size).
        const mine = d.own.get(e.name)
        d.own.delete(e.name)
        d.pending.push(mine && !mine.own?.over ? await mine.file.stat() : e)
      }
      // Files this session is writing that the storage does not have yet.
      if (d.done) for (const h of d.own.values()) if (!h.own?.over) d.pending.push(await h.file.stat())
    }
    return d.pending.splice(0, NAMES_PER_READDIR)
  }

  sftp.on('READDIR', (reqid, id) => {
    run(reqid, 'READDIR', async () => {
      const d = dirOf(id)
      // One at a time, in the order they came: each answer holds the names after the last.
      const batch = d.turn.then(() => nextNames(d))
      d.turn = batch.catch(() => {})
      const names = await batch
      if (names.length === 0) return void sftp.status(reqid, STATUS.EOF)
      const now = Date.now()
      sftp.name(
        reqid,
        names.map((e) => ({ filename: e.name, longname: longName(e, opts.user, now), attrs: toAttrs(e) })),
      )
    })
  })

  sftp.on('STAT', (reqid, raw) => {
    run(reqid, 'STAT', () => afterOwn(raw, async (p, w) => void sftp.attrs(reqid, toAttrs(w ? await w.file.stat() : await fs.stat(ctx(), p)))))
  })
  sftp.on('LSTAT', (reqid, raw) => {
    run(reqid, 'LSTAT', () => afterOwn(raw, async (p, w) => void sftp.attrs(reqid, toAttrs(w ? await w.file.stat() : await fs.lstat(ctx(), p)))))
  })
  sftp.on('FSTAT', (reqid, id) => {
    run(reqid, 'FSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      sftp.attrs(reqid, toAttrs(h.kind === 'file' ? await h.file.stat() : await fs.stat(ctx(), h.path)))
    })
  })

  sftp.on('SETSTAT', (reqid, raw, attrs) => {
    run(reqid, 'SETSTAT', () =>
      afterOwn(raw, async (p, w) => {
        checkSettable(attrs)
        await (w ? setOnHandle(w, attrs) : applySettable(p, attrs))
        ok(reqid)
      }),
    )
  })

  sftp.on('FSETSTAT', (reqid, id, attrs) => {
    run(reqid, 'FSETSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      const a = attrs
      checkSettable(a)
      if (h.kind === 'dir') return void (await applySettable(h.path, a), ok(reqid))
      if (!h.file.flags.write) return void (await applySettable(h.file.path, a), ok(reqid))
      await setOnHandle(h, a)
      ok(reqid)
    })
  })

  sftp.on('REMOVE', (reqid, raw) => run(reqid, 'REMOVE', () => afterOwn(raw, async (p) => (await fs.unlink(ctx(), p), ok(reqid)))))
  sftp.on('RMDIR', (reqid, raw) => run(reqid, 'RMDIR', async () => (await fs.rmdir(ctx(), path(raw)), ok(reqid))))
  // Attributes sent with MKDIR are not applied (as with OPEN).
  sftp.on('MKDIR', (reqid, raw) => run(reqid, 'MKDIR', async () => (await fs.mkdir(ctx(), path(raw)), ok(reqid))))
  // SFTP v3's RENAME never replaces an existing target (posix-rename@openssh.com does).
  sftp.on('RENAME', (reqid, from, to) => {
    run(reqid, 'RENAME', async () => {
      const [a, b] = [path(from), path(to)]
      await settled([a, b])
      await fs.rename(ctx(), a, b, { overwrite: false })
      ok(reqid)
    })
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
        settled,
        ok: () => ok(reqid),
        reply: (bytes) => sftp.extendedReply(reqid, bytes),
      }),
    )
  })
}

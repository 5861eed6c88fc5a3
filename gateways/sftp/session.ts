/**
 * @module gateways/sftp/session
 * One SFTP v3 session (a `sftp` subsystem channel) over a logged-in user's
 * `View`: each request's path goes through the SFTP door's rule (core/paths.ts `DOOR_PATH_RULES.sftp`; the working
 * directory is `/`, the user's root), each failure through the one status table
 * (./errors.ts). The session holds its handle table and what it is writing
 * (./own-writes.ts: its own files are visible to it from OPEN on); its end aborts every
 * handle still open, so a transfer cut before CLOSE commits nothing. READDIRs on one
 * handle are answered one after another, each with the next names: clients (paramiko,
 * sshfs) send several at once.
 *
 * This file builds the session (its handles, its own writes, how a request runs and
 * ends); the requests are served by gateways/sftp/requests/: files.ts (OPEN, READ,
 * WRITE, CLOSE), dirs.ts (OPENDIR, READDIR), attrs.ts (STAT and SETSTAT and their
 * kin), names.ts (REMOVE, MKDIR, RENAME, REALPATH, links, extensions).
 */
import { setMaxListeners } from 'node:events'
import { FsError } from '../../core/errors.js'
import { DOOR_PATH_RULES } from '../../core/paths.js'
import type { DoorMeter } from '../../core/doors.js'
import { SFTP_STATUS_NAME, type SftpStatusCode } from '../../core/sftp-status.js'
import type { RequestContext, View } from '../../core/view.js'
import { toStatus } from './errors.js'
import { ADVERTISED } from './extensions.js'
import { HandleTable } from './handles.js'
import { MAX_HANDLES, MAX_PACKET } from './limits.js'
import { OwnWrites } from './own-writes.js'
import { serveAttrs } from './requests/attrs.js'
import type { FileState, Open, Session } from './requests/context.js'
import { serveDirs } from './requests/dirs.js'
import { serveFiles } from './requests/files.js'
import { serveNames } from './requests/names.js'
import type { SendBudget } from './send-budget.js'
import { STATUS } from './wire/codec.js'
import { type SftpChannel, SftpServer } from './wire/server.js'

export { flagsOf } from './requests/files.js'

export interface SessionOptions {
  readonly fs: View
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
  /** The door's counters: a request is a request packet, an error its status, a session this channel. */
  readonly meter?: DoorMeter
}

/** What a connection has under way: requests in flight plus files open. */
export interface Work {
  busy: number
}

/** Serves SFTP on `channel` (an accepted `sftp` subsystem) until it ends. */
export function serveSftp(channel: SftpChannel, opts: SessionOptions): void {
  const sessionEnded = opts.meter?.session()
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
  const s = session(sftp, opts, life.signal)
  const end = (): void => {
    if (life.signal.aborted) return
    life.abort()
    sessionEnded?.()
    for (const release of s.reserved) release()
    s.reserved.clear()
    for (const h of s.handles.drain()) {
      if (h.kind !== 'file') continue
      s.work.busy--
      h.file.abort()
      h.own?.end()
    }
  }
  serveFiles(s)
  serveDirs(s)
  serveAttrs(s)
  serveNames(s)
}

/** The session's state and the helpers every request handler uses. */
function session(sftp: SftpServer, opts: SessionOptions, signal: AbortSignal): Session {
  const handles = new HandleTable<Open>(MAX_HANDLES)
  const own = new OwnWrites<FileState>()
  const work = opts.work ?? { busy: 0 }
  let seq = 0
  const ctx = (): RequestContext => ({
    requestId: `${opts.connId}.${++seq}`,
    signal,
    client: { address: opts.address, credential: `sftp:${opts.user}` },
  })
  const path = (raw: string): string => DOOR_PATH_RULES.sftp('/', raw)
  return {
    sftp,
    fs: opts.meter ? opts.meter.fs(opts.fs) : opts.fs,
    user: opts.user,
    signal,
    handles,
    own,
    sendBudget: opts.sendBudget,
    reserved: new Set(),
    work,
    ctx,
    path,
    run(reqid, op, fn) {
      work.busy++
      void (async () => {
        try {
          await fn()
          opts.meter?.request()
        } catch (err) {
          const st = toStatus(err)
          opts.meter?.request(SFTP_STATUS_NAME[st.code as SftpStatusCode] ?? 'failure')
          if (st.bug) opts.log('error', 'sftp request failed', { op, connId: opts.connId, err: String((err as Error)?.stack ?? err) })
          sftp.status(reqid, st.code, st.message)
        } finally {
          work.busy--
        }
      })()
    },
    ok: (reqid) => sftp.status(reqid, STATUS.OK),
    fileOf(id) {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      if (h.kind !== 'file') throw new FsError('EISDIR', 'the handle is a directory')
      return h
    },
    dirOf(id) {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      if (h.kind !== 'dir') throw new FsError('ENOTDIR', 'the handle is a file')
      return h
    },
    newHandle(state) {
      const id = handles.add(state)
      if (id === null) throw new FsError('EINVAL', `too many open handles (at most ${MAX_HANDLES} per session)`)
      if (state.kind === 'file') work.busy++
      return id
    },
    afterOwn(raw, fn) {
      const p = path(raw)
      const before = own.before(p)
      return OwnWrites.settle(before).then((writing) => fn(p, writing))
    },
    settled(paths) {
      const before = paths.map((p) => own.before(p))
      return Promise.all(before.map((b) => OwnWrites.settle(b))).then(() => {})
    },
  }
}

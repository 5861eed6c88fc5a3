/**
 * @module gateways/sftp/requests/dirs
 * OPENDIR and READDIR. READDIRs on one handle are answered one after another, each with
 * the next names: clients (paramiko, sshfs) send several at once. Files this session is
 * writing in the folder show as written so far, including those the storage does not
 * have yet.
 */
import { FsError } from '../../../core/errors.js'
import type { FsEntry } from '../../../core/view.js'
import { longName, toAttrs } from '../attrs.js'
import { OwnWrites } from '../own-writes.js'
import { STATUS } from '../wire/codec.js'
import type { DirState, FileState, Session } from './context.js'

/** Entries fetched from the storage per listing page, and sent per READDIR answer. */
const LIST_PAGE = 1000
const NAMES_PER_READDIR = 100

export function serveDirs(s: Session): void {
  const { sftp, fs, own, run } = s

  sftp.on('OPENDIR', (reqid, raw) => {
    run(reqid, 'OPENDIR', async () => {
      const p = s.path(raw)
      const e = await fs.stat(s.ctx(), p)
      if (e.kind !== 'dir') throw new FsError('ENOTDIR', `${raw} is not a directory`)
      // This session's files in that folder: their OPENs and CLOSEs in progress are over first.
      const mine = own.inDir(p)
      const ownFiles = new Map<string, FileState>()
      for (const w of mine) {
        const writing = await OwnWrites.settle(w)
        if (writing) ownFiles.set(w.path.slice(w.path.lastIndexOf('/') + 1), writing)
      }
      sftp.handle(reqid, s.newHandle({ kind: 'dir', path: p, pending: [], cursor: null, done: false, turn: Promise.resolve(), own: ownFiles }))
    })
  })

  /** The next names of a listing (none: its end). */
  const nextNames = async (d: DirState): Promise<FsEntry[]> => {
    while (d.pending.length === 0 && !d.done) {
      const page = await fs.list(s.ctx(), d.path, { cursor: d.cursor, limit: LIST_PAGE })
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
      const d = s.dirOf(id)
      // One at a time, in the order they came: each answer holds the names after the last.
      const batch = d.turn.then(() => nextNames(d))
      d.turn = batch.catch(() => {})
      const names = await batch
      if (names.length === 0) return void sftp.status(reqid, STATUS.EOF)
      const now = Date.now()
      sftp.name(
        reqid,
        names.map((e) => ({ filename: e.name, longname: longName(e, s.user, now), attrs: toAttrs(e) })),
      )
    })
  })
}

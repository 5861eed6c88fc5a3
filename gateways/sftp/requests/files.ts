/**
 * @module gateways/sftp/requests/files
 * OPEN, READ, WRITE and CLOSE. A file open for writing is this session's own from OPEN
 * on (gateways/sftp/own-writes.ts): its later requests on the path see it as written so
 * far. READs wait for room in the connection's send budget before reading.
 */
import { FsError } from '../../../core/errors.js'
import type { OpenFlags } from '../../../core/view.js'
import { MAX_HANDLES, MAX_READ } from '../limits.js'
import { OwnWrites, ReadAfterWrite } from '../own-writes.js'
import { OPEN_MODE, STATUS } from '../wire/codec.js'
import { applySettable } from './attrs.js'
import type { FileState, Session } from './context.js'

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

export function serveFiles(s: Session): void {
  const { sftp, fs, handles, own, run, ok } = s

  sftp.on('OPEN', (reqid, filename, pflags) => {
    // Attributes sent with OPEN (OpenSSH sends the local file's permissions) are not
    // applied: a client that means to keep them sends SETSTAT/FSETSTAT (`put -p`).
    run(reqid, 'OPEN', async () => {
      const p = s.path(filename)
      const flags = flagsOf(pflags)
      const before = own.before(p)
      const mine = flags.write ? own.begin(p) : undefined
      try {
        if (handles.size >= MAX_HANDLES) throw new FsError('EINVAL', `too many open handles (at most ${MAX_HANDLES} per session)`)
        const writing = await OwnWrites.settle(before)
        const open = () => fs.open(s.ctx(), p, flags)
        const file = writing && !flags.write ? new ReadAfterWrite(p, flags, writing.file, writing.own!, open) : await open()
        if (s.signal.aborted) {
          file.abort()
          return mine?.settleOpen(null)
        }
        const state: FileState = { kind: 'file', file, ...(mine ? { own: mine } : {}) }
        try {
          sftp.handle(reqid, s.newHandle(state))
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
      const { file } = s.fileOf(id)
      if (!file.flags.read) throw new FsError('EACCES', 'the file was not opened for reading')
      const want = Math.min(len, MAX_READ)
      if (s.sendBudget === undefined) return answerRead(reqid, await file.read(offset, want), len)
      // Room for the answer first: a client that stops reading holds at most the budget.
      const release = await s.sendBudget.reserve(want)
      s.reserved.add(release)
      const sent = () => {
        s.reserved.delete(release)
        release()
      }
      try {
        if (s.signal.aborted) throw new FsError('ECANCELED', 'the session is over')
        answerRead(reqid, await file.read(offset, want), len, sent)
      } catch (err) {
        sent()
        throw err
      }
    })
  })

  sftp.on('WRITE', (reqid, id, offset, data) => {
    run(reqid, 'WRITE', async () => {
      const h = s.fileOf(id)
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
        s.work.busy-- // this CLOSE request counts until its answer is sent
        const commit = (async () => {
          await h.file.close()
          if (h.after !== undefined) await applySettable(s, h.file.path, h.after)
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
}

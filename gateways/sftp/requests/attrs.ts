/**
 * @module gateways/sftp/requests/attrs
 * STAT, LSTAT, FSTAT, SETSTAT and FSETSTAT. What is set is checked against what the
 * storage can do before anything changes, so a refused request changes nothing; on a
 * file this session is writing, times and modes wait for its CLOSE.
 */
import { FsError } from '../../../core/errors.js'
import { toAttrs } from '../attrs.js'
import type { Attrs } from '../wire/codec.js'
import type { FileState, Session } from './context.js'

/**
 * SETSTAT and FSETSTAT: everything asked is checked against what the storage can do
 * before anything changes, so a refused request changes nothing.
 */
function checkSettable(s: Session, a: Attrs): void {
  const { fs } = s
  if (!fs.permissions.can_upload) throw new FsError('EACCES', 'this login may not change files (it has no can_upload)')
  if (a.uid !== undefined || a.gid !== undefined) throw new FsError('ENOTSUP', 'file owners cannot be changed on this server')
  if (a.mode !== undefined && !fs.abilities.modes) throw new FsError('ENOTSUP', 'this storage keeps no permission bits')
  if (a.mtime !== undefined && !fs.abilities.setTimes) throw new FsError('ENOTSUP', 'this storage does not let modification times be set')
}

/** A file open for writing: its size now, the rest once CLOSE has committed it. */
async function setOnHandle(h: FileState, a: Attrs): Promise<void> {
  // A size cannot wait (it would undo later writes): the handle sets it (a file being
  // uploaded in order only keeps its size, which is what scp asks after writing).
  if (a.size !== undefined) await h.file.truncate(a.size)
  // Times and modes set now would be replaced by the commit (OpenSSH's `put -p` sends
  // them just before CLOSE), so they are applied after it.
  const { size: _size, ...rest } = a
  if (Object.keys(rest).length > 0) h.after = { ...h.after, ...rest }
}

/** Applies `a` to the file or folder at `p` (also what CLOSE does with a handle's deferred attributes). */
export async function applySettable(s: Session, p: string, a: Attrs): Promise<void> {
  const { fs } = s
  if (a.size !== undefined) await fs.truncate(s.ctx(), p, a.size)
  if (a.mode !== undefined) await fs.setMode(s.ctx(), p, a.mode & 0o7777)
  if (a.mtime !== undefined) {
    await fs.setTimes(s.ctx(), p, { mtimeMs: a.mtime * 1000, ...(a.atime !== undefined ? { atimeMs: a.atime * 1000 } : {}) })
  }
}

export function serveAttrs(s: Session): void {
  const { sftp, fs, handles, run, ok, afterOwn } = s

  sftp.on('STAT', (reqid, raw) => {
    run(reqid, 'STAT', () => afterOwn(raw, async (p, w) => void sftp.attrs(reqid, toAttrs(w ? await w.file.stat() : await fs.stat(s.ctx(), p)))))
  })
  sftp.on('LSTAT', (reqid, raw) => {
    run(reqid, 'LSTAT', () => afterOwn(raw, async (p, w) => void sftp.attrs(reqid, toAttrs(w ? await w.file.stat() : await fs.lstat(s.ctx(), p)))))
  })
  sftp.on('FSTAT', (reqid, id) => {
    run(reqid, 'FSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      sftp.attrs(reqid, toAttrs(h.kind === 'file' ? await h.file.stat() : await fs.stat(s.ctx(), h.path)))
    })
  })

  sftp.on('SETSTAT', (reqid, raw, attrs) => {
    run(reqid, 'SETSTAT', () =>
      afterOwn(raw, async (p, w) => {
        checkSettable(s, attrs)
        await (w ? setOnHandle(w, attrs) : applySettable(s, p, attrs))
        ok(reqid)
      }),
    )
  })

  sftp.on('FSETSTAT', (reqid, id, attrs) => {
    run(reqid, 'FSETSTAT', async () => {
      const h = handles.get(id)
      if (h === undefined) throw new FsError('EINVAL', 'no such handle')
      const a = attrs
      checkSettable(s, a)
      if (h.kind === 'dir') return void (await applySettable(s, h.path, a), ok(reqid))
      if (!h.file.flags.write) return void (await applySettable(s, h.file.path, a), ok(reqid))
      await setOnHandle(h, a)
      ok(reqid)
    })
  })
}

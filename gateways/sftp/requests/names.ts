/**
 * @module gateways/sftp/requests/names
 * Requests on names: REMOVE, RMDIR, MKDIR, RENAME, REALPATH, the links (not served) and
 * the extensions (gateways/sftp/extensions.ts).
 */
import { handleExtended } from '../extensions.js'
import { FsError } from '../../../core/errors.js'
import type { Session } from './context.js'

export function serveNames(s: Session): void {
  const { sftp, fs, run, ok, afterOwn, path } = s

  sftp.on('REMOVE', (reqid, raw) => run(reqid, 'REMOVE', () => afterOwn(raw, async (p) => (await fs.unlink(s.ctx(), p), ok(reqid)))))
  sftp.on('RMDIR', (reqid, raw) => run(reqid, 'RMDIR', async () => (await fs.rmdir(s.ctx(), path(raw)), ok(reqid))))
  // Attributes sent with MKDIR are not applied (as with OPEN).
  sftp.on('MKDIR', (reqid, raw) => run(reqid, 'MKDIR', async () => (await fs.mkdir(s.ctx(), path(raw)), ok(reqid))))
  // SFTP v3's RENAME never replaces an existing target (posix-rename@openssh.com does).
  sftp.on('RENAME', (reqid, from, to) => {
    run(reqid, 'RENAME', async () => {
      const [a, b] = [path(from), path(to)]
      await s.settled([a, b])
      await fs.rename(s.ctx(), a, b, { overwrite: false })
      ok(reqid)
    })
  })
  sftp.on('REALPATH', (reqid, raw) => {
    run(reqid, 'REALPATH', () => {
      const p = path(raw === '' ? '.' : raw)
      sftp.name(reqid, [{ filename: p, longname: p, attrs: {} }])
    })
  })
  const noLinks = (reqid: number) =>
    run(reqid, 'LINK', () => {
      throw new FsError('ENOTSUP', 'symbolic links are not served')
    })
  sftp.on('READLINK', noLinks)
  sftp.on('SYMLINK', noLinks)

  sftp.on('EXTENDED', (reqid, name, data) => {
    run(reqid, name, () =>
      handleExtended(name, data, {
        fs,
        ctx: s.ctx,
        path,
        file: (id) => s.fileOf(id).file,
        settled: s.settled,
        ok: () => ok(reqid),
        reply: (bytes) => sftp.extendedReply(reqid, bytes),
      }),
    )
  })
}

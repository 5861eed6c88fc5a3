/**
 * What one SFTP session sees of its own requests: pipelined READDIRs on one handle get
 * each name once (paramiko's listdir_iter sends 16 at a time); a file being written
 * exists for its own session from OPEN on, with the bytes written so far, while other
 * sessions see the old content until CLOSE commits it; a size set on an open upload is
 * taken when it is the size written and refused, saying why, otherwise; a session ends
 * with exit-status 0.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { SFTPWrapper } from 'ssh2'
import { call, paramiko, sshExec, ssh2Sftp } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'

for (const backend of BACKENDS) {
  t.test(`${backend}: paramiko listdir_iter on 1,050 entries gets each name once`, async (t) => {
    const { login, put, mkdir } = await startGateway(t, { backend })
    mkdir('big')
    const names: string[] = []
    for (let i = 0; i < 1050; i++) names.push(`entry-${String(i).padStart(5, '0')}.txt`)
    for (const n of names) put(`big/${n}`, '')
    const r = await paramiko(
      login,
      `
got = [a.filename for a in sftp.listdir_iter('big')]
print(len(got))
print('\\n'.join(got))
`,
    )
    t.equal(r.code, 0, r.stderr)
    const lines = r.stdout.trim().split('\n')
    t.equal(lines[0], '1050', 'exactly 1,050 names')
    t.same(lines.slice(1).sort(), names, 'each entry once')
  })
}

const read = async (sftp: SFTPWrapper, handle: Buffer, length = 64): Promise<string> => {
  const buf = Buffer.alloc(length)
  const n = await call<number>(sftp.read.bind(sftp), handle, buf, 0, length, 0)
  return buf.subarray(0, n).toString()
}

const write = (sftp: SFTPWrapper, handle: Buffer, data: string, at = 0) =>
  call<void>(sftp.write.bind(sftp), handle, Buffer.from(data), 0, Buffer.byteLength(data), at)

for (const backend of BACKENDS) {
  t.test(`${backend}: a file being written exists for its own session from OPEN on, for others at CLOSE`, async (t) => {
    const { login, root, put } = await startGateway(t, { backend })
    put('old.txt', 'the old content')
    const { client, sftp: mine } = await ssh2Sftp(t, login)
    // Another session on the same connection, and another connection.
    const other = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))))
    const { sftp: elsewhere } = await ssh2Sftp(t, login)

    // A new file: OPEN and STAT sent back to back (as sshfs does), STAT sees it.
    const opening = call<Buffer>(mine.open.bind(mine), '/new.txt', 'w')
    const seen = call<{ size: number; isFile(): boolean }>(mine.stat.bind(mine), '/new.txt')
    const w = await opening
    t.equal((await seen).size, 0, 'STAT right after OPEN: the new file, empty')
    await write(mine, w, 'hello')
    t.equal((await call<{ size: number }>(mine.stat.bind(mine), '/new.txt')).size, 5, 'STAT: the bytes written so far')
    t.equal((await call<{ size: number }>(mine.lstat.bind(mine), '/new.txt')).size, 5, 'LSTAT too')
    const listed = await call<{ filename: string; attrs: { size: number } }[]>(mine.readdir.bind(mine), '/')
    t.same(listed.map((e) => e.filename).sort(), ['new.txt', 'old.txt'], 'its folder lists it, once')
    for (const s of [other, elsewhere]) {
      await t.rejects(call(s.stat.bind(s), '/new.txt'), { code: 2 }, 'another session does not see it yet')
      t.same((await call<{ filename: string }[]>(s.readdir.bind(s), '/')).map((e) => e.filename), ['old.txt'], 'nor lists it')
    }
    t.notOk(existsSync(join(root, 'new.txt')), 'nothing on disk before CLOSE')

    // Opened for reading while being written: it reads what CLOSE commits.
    const r = await call<Buffer>(mine.open.bind(mine), '/new.txt', 'r')
    t.equal((await call<{ size: number }>(mine.fstat.bind(mine), r)).size, 5, 'FSTAT of the reader: the bytes written so far')
    const reading = read(mine, r)
    await call(mine.close.bind(mine), w)
    t.equal(await reading, 'hello', 'the read waits for the writer’s CLOSE, then reads what it wrote')
    await call(mine.close.bind(mine), r)
    t.equal(readFileSync(join(root, 'new.txt'), 'utf8'), 'hello', 'committed at CLOSE')
    t.equal((await call<{ size: number }>(other.stat.bind(other), '/new.txt')).size, 5, 'then other sessions see it')

    // An existing file overwritten: the old content for others until CLOSE.
    const o = await call<Buffer>(mine.open.bind(mine), '/old.txt', 'w')
    await write(mine, o, 'new')
    t.equal((await call<{ size: number }>(mine.stat.bind(mine), '/old.txt')).size, 3, 'its own session sees the new size')
    const relisted = await call<{ filename: string; attrs: { size: number } }[]>(mine.readdir.bind(mine), '/')
    t.same(relisted.map((e) => [e.filename, e.attrs.size]).sort(), [['new.txt', 5], ['old.txt', 3]], 'and lists it so')
    t.equal((await call<{ size: number }>(elsewhere.stat.bind(elsewhere), '/old.txt')).size, 15, 'another connection the old one')
    const oh = await call<Buffer>(elsewhere.open.bind(elsewhere), '/old.txt', 'r')
    t.equal(await read(elsewhere, oh), 'the old content', 'and reads the old content')
    await call(elsewhere.close.bind(elsewhere), oh)
    // A reader of the same session opened after the writer's CLOSE was sent reads the commit.
    const closing = call(mine.close.bind(mine), o)
    const after = call<Buffer>(mine.open.bind(mine), '/old.txt', 'r')
    await closing
    const ah = await after
    t.equal(await read(mine, ah), 'new', 'OPEN right after CLOSE (not awaited): the committed content')
    await call(mine.close.bind(mine), ah)
  })
}

t.test('a size set on an open upload: the size written is taken, another is refused saying why', async (t) => {
  const { login, root } = await startGateway(t)
  const { sftp } = await ssh2Sftp(t, login)
  const h = await call<Buffer>(sftp.open.bind(sftp), '/up.txt', 'w')
  await write(sftp, h, '0123456789')
  await call(sftp.fsetstat.bind(sftp), h, { size: 10 })
  t.pass('FSETSTAT with the size written: OK (scp sends it after writing)')
  await call(sftp.setstat.bind(sftp), '/up.txt', { size: 10 })
  t.pass('SETSTAT by path, same size: OK')
  const err = await call(sftp.fsetstat.bind(sftp), h, { size: 4 }).then(() => null, (e: Error & { code?: number }) => e)
  t.equal(err?.code, 8, 'another size: OP_UNSUPPORTED')
  t.match(err?.message, /keeps the size written so far \(10 bytes\)/, 'with a message saying why')
  await call(sftp.close.bind(sftp), h)
  t.equal(readFileSync(join(root, 'up.txt'), 'utf8'), '0123456789', 'the upload is whole')

  // A file written in place (opened without truncation) can be cut while open.
  const rw = await call<Buffer>(sftp.open.bind(sftp), '/up.txt', 'r+')
  await write(sftp, rw, 'ab')
  await call(sftp.fsetstat.bind(sftp), rw, { size: 4 })
  t.equal((await call<{ size: number }>(sftp.fstat.bind(sftp), rw)).size, 4, 'r+: FSETSTAT cuts it')
  t.equal(await read(sftp, rw), 'ab23', 'and reads show it')
  await call(sftp.close.bind(sftp), rw)
  t.equal(readFileSync(join(root, 'up.txt'), 'utf8'), 'ab23', 'committed at its new size')
})

t.test('an sftp session ends with an exit-status: 0 when the client ends it, 1 after a protocol error', async (t) => {
  const { login } = await startGateway(t)
  // The client ends the session at once (no input): ssh exits with the server's status.
  const r = await sshExec(t, login, 'sftp', ['-s'])
  t.equal(r.code, 0, `ssh -s sftp exits 0: ${r.stderr}`)
  // INIT asking for SFTP version 2: the channel is closed.
  const init2 = '\x00\x00\x00\x05\x01\x00\x00\x00\x02'
  const bad = await sshExec(t, login, 'sftp', ['-s'], init2)
  t.equal(bad.code, 1, `after a protocol error: exit 1 (${bad.stderr})`)
})

/**
 * The SFTP gateway with paramiko (Debian's python3-paramiko): open flags, offsets
 * with holes, readv, long listings, utime, truncate, rename semantics.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { paramiko } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'

/** Runs `script` (paramiko's `sftp` is open) and returns what it printed as JSON. */
async function observe(t: Test, login: Parameters<typeof paramiko>[0], script: string): Promise<Record<string, unknown>> {
  const r = await paramiko(login, `${script}\nimport json\nprint(json.dumps(out))\n`)
  t.equal(r.code, 0, `paramiko ran: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>
}

const errno = `
def errno_of(fn):
    try:
        fn()
        return 'ok'
    except IOError as e:
        return e.errno if e.errno is not None else str(e)
out = {}
`

for (const backend of BACKENDS) {
  t.test(`${backend}: open flags`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    put('exists.txt', 'hello world')
    const out = await observe(
      t,
      login,
      `${errno}
out['r_missing'] = errno_of(lambda: sftp.open('missing.txt', 'r'))
out['x_existing'] = errno_of(lambda: sftp.open('exists.txt', 'wx'))
with sftp.open('new.txt', 'wx') as f: f.write(b'fresh')
with sftp.open('exists.txt', 'a') as f: f.write(b'!!')
with sftp.open('trunc.txt', 'w') as f: f.write(b'0123456789')
with sftp.open('trunc.txt', 'w') as f: f.write(b'ab')
with sftp.open('rplus.txt', 'w') as f: f.write(b'0123456789')
with sftp.open('rplus.txt', 'r+') as f:
    f.seek(3); f.write(b'XY')
with sftp.open('exists.txt', 'r') as f:
    out['read_only_write'] = errno_of(lambda: (f.write(b'no'), f.flush()))
out['dir_as_file'] = errno_of(lambda: sftp.open('.', 'r').read())
  `,
    )
    t.equal(out.r_missing, 2, 'READ of a missing file: ENOENT')
    t.not(out.x_existing, 'ok', 'CREAT|EXCL on an existing file: refused')
    t.not(out.read_only_write, 'ok', 'WRITE on a handle opened for reading: refused')
    t.not(out.dir_as_file, 'ok', 'a directory cannot be read as a file')
    t.equal(readFileSync(join(root, 'new.txt'), 'utf8'), 'fresh', 'CREAT|EXCL makes a new file')
    t.equal(readFileSync(join(root, 'exists.txt'), 'utf8'), 'hello world!!', 'APPEND appends')
    t.equal(readFileSync(join(root, 'trunc.txt'), 'utf8'), 'ab', 'TRUNC starts from an empty file')
    t.equal(readFileSync(join(root, 'rplus.txt'), 'utf8'), '012XY56789', 'r+ writes in place')
  })

  t.test(`${backend}: offsets with holes, and readv`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    const data = randomBytes(1024 * 1024)
    put('data.bin', data)
    const out = await observe(
      t,
      login,
      `${errno}
with sftp.open('holes.bin', 'w') as f:
    f.seek(1000000); f.write(b'end')
    f.seek(10); f.write(b'start')
with sftp.open('data.bin', 'r') as f:
    parts = list(f.readv([(0, 10), (500000, 70000), (1048570, 6), (3, 4)]))
    out['readv'] = [p.hex() for p in parts]
    f.seek(1048570); out['tail'] = f.read(100).hex()
    f.seek(2000000); out['past_end'] = f.read(10).hex()
  `,
    )
    const holes = readFileSync(join(root, 'holes.bin'))
    t.equal(holes.length, 1_000_003, 'the file reaches the last write')
    t.equal(holes.subarray(10, 15).toString(), 'start', 'the write after a seek back')
    t.equal(holes.subarray(1_000_000).toString(), 'end', 'the write past the end')
    t.ok(holes.subarray(15, 1_000_000).every((b) => b === 0) && holes.subarray(0, 10).every((b) => b === 0), 'holes read as zeros')
    t.same(out.readv, [data.subarray(0, 10), data.subarray(500000, 570000), data.subarray(1048570), data.subarray(3, 7)].map((b) => b.toString('hex')), 'readv: every range')
    t.equal(out.tail, data.subarray(1048570).toString('hex'), 'a read over the end is short')
    t.equal(out.past_end, '', 'a read past the end is empty')
  })

  t.test(`${backend}: READDIR over 1,000 entries, with attributes`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    mkdir('many')
    for (let i = 0; i < 1234; i++) put(`many/f-${String(i).padStart(4, '0')}`, 'x'.repeat(i % 7))
    mkdir('many/a dir')
    const out = await observe(
      t,
      login,
      `${errno}
attrs = sftp.listdir_attr('many')
out['names'] = sorted(a.filename for a in attrs)
out['sizes'] = {a.filename: a.st_size for a in attrs}
out['dirs'] = [a.filename for a in attrs if stat.S_ISDIR(a.st_mode)]
  `,
    )
    t.same(out.names, readdirSync(join(root, 'many')).sort(), 'every entry once')
    t.equal((out.names as string[]).length, 1235, '1,235 entries')
    t.equal((out.sizes as Record<string, number>)['f-0006'], 6, 'sizes come with the names')
    t.same(out.dirs, ['a dir'], 'directories are told apart')
  })

  t.test(`${backend}: utime, truncate, stat`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    put('f.txt', '0123456789')
    put('g.txt', 'g')
    const out = await observe(
      t,
      login,
      `${errno}
sftp.utime('f.txt', (1500000000, 1600000000))
out['mtime'] = sftp.stat('f.txt').st_mtime
sftp.utime('g.txt', (1700000000, 1700000000))
sftp.truncate('f.txt', 4)
out['cut'] = sftp.stat('f.txt').st_size
sftp.truncate('f.txt', 8)
out['grown'] = sftp.stat('f.txt').st_size
out['missing'] = errno_of(lambda: sftp.stat('nope'))
out['root_is_dir'] = stat.S_ISDIR(sftp.stat('/').st_mode)
out['normalize'] = [sftp.normalize('.'), sftp.normalize('a/../b/./c'), sftp.normalize('/../..')]
  `,
    )
    t.equal(out.mtime, 1600000000, 'utime sets the modification time')
    t.equal(statSync(join(root, 'g.txt')).mtimeMs, 1700000000 * 1000, 'on disk')
    t.equal(out.cut, 4, 'truncate cuts')
    t.equal(out.grown, 8, 'truncate extends')
    t.same([...readFileSync(join(root, 'f.txt'))], [...Buffer.from('0123'), 0, 0, 0, 0], 'extended with zeros')
    t.equal(out.missing, 2, 'STAT of nothing: ENOENT')
    t.equal(out.root_is_dir, true, 'the root is a directory')
    t.same(out.normalize, ['/', '/b/c', '/'], 'REALPATH resolves from the root and never above it')
  })

  t.test(`${backend}: rename semantics`, async (t) => {
    const { login, root, put, mkdir } = await startGateway(t, { backend })
    put('a.txt', 'a')
    put('b.txt', 'b')
    put('c.txt', 'c')
    mkdir('d')
    const out = await observe(
      t,
      login,
      `${errno}
out['onto_existing'] = errno_of(lambda: sftp.rename('a.txt', 'b.txt'))
out['posix'] = errno_of(lambda: sftp.posix_rename('c.txt', 'b.txt'))
out['missing'] = errno_of(lambda: sftp.rename('nope', 'x'))
out['into_dir'] = errno_of(lambda: sftp.rename('a.txt', 'd/a.txt'))
out['dir'] = errno_of(lambda: sftp.rename('d', 'e'))
  `,
    )
    t.not(out.onto_existing, 'ok', 'RENAME onto an existing file is refused')
    t.equal(out.posix, 'ok', 'posix-rename@openssh.com replaces it')
    t.equal(readFileSync(join(root, 'b.txt'), 'utf8'), 'c', 'the target was replaced')
    t.equal(out.missing, 2, 'renaming nothing: ENOENT')
    t.equal(out.into_dir, 'ok', 'into a directory')
    t.equal(out.dir, 'ok', 'a directory')
    t.same(readdirSync(root).sort(), ['b.txt', 'e'], 'the tree after')
    t.same(readdirSync(join(root, 'e')), ['a.txt'], 'the moved directory kept its content')
  })
}

/**
 * The SFTP gateway with OpenSSH's `scp` (9.x speaks SFTP): uploads and downloads, with
 * and without `-p`, exit 0, and bytes, times and modes as on the other side. An upload
 * over an existing file is written in place and then cut to its size (FSETSTAT with a
 * size on the open handle): a larger old file ends as the new one.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { remote, scp } from './clients.js'
import { BACKENDS, startGateway } from './fixture.js'

/** A time in the past, in whole seconds (SFTP v3 carries seconds). */
const THEN = new Date('2021-03-04T05:06:07Z')

for (const backend of BACKENDS) {
  t.test(`${backend}: scp up and down, with and without -p, exits 0`, async (t) => {
    const { login, root, put } = await startGateway(t, { backend })
    const local = t.testdir()
    const payload = randomBytes(2 * 1024 * 1024 + 123)
    writeFileSync(join(local, 'up.bin'), payload)
    chmodSync(join(local, 'up.bin'), 0o640)
    utimesSync(join(local, 'up.bin'), THEN, THEN)

    const up = await scp(t, login, [join(local, 'up.bin'), remote(login, 'plain.bin')])
    t.equal(up.code, 0, `scp up exits 0: ${up.stderr}`)
    t.equal(up.stderr, '', 'and says nothing')
    t.same(readFileSync(join(root, 'plain.bin')), payload, 'the upload, byte for byte')
    t.not(statSync(join(root, 'plain.bin')).mtime.getTime(), THEN.getTime(), 'without -p the time is the upload’s')

    const upP = await scp(t, login, ['-p', join(local, 'up.bin'), remote(login, 'kept.bin')])
    t.equal(upP.code, 0, `scp -p up exits 0: ${upP.stderr}`)
    const kept = statSync(join(root, 'kept.bin'))
    t.same(readFileSync(join(root, 'kept.bin')), payload, '-p: the bytes')
    t.equal(kept.mtime.getTime(), THEN.getTime(), '-p: the modification time')
    t.equal(kept.mode & 0o777, 0o640, '-p: the mode')

    // Over a larger file: scp writes in place, then sets the size it wrote.
    put('over.bin', randomBytes(5 * 1024 * 1024))
    const small = randomBytes(70_001)
    writeFileSync(join(local, 'small.bin'), small)
    const over = await scp(t, login, [join(local, 'small.bin'), remote(login, 'over.bin')])
    t.equal(over.code, 0, `scp over a larger file exits 0: ${over.stderr}`)
    t.same(readFileSync(join(root, 'over.bin')), small, 'the old file is replaced, cut to the new size')
    // And over a smaller one.
    put('grow.bin', 'tiny')
    const grow = await scp(t, login, [join(local, 'up.bin'), remote(login, 'grow.bin')])
    t.equal(grow.code, 0, `scp over a smaller file exits 0: ${grow.stderr}`)
    t.same(readFileSync(join(root, 'grow.bin')), payload, 'the smaller file grows to the new one')

    put('down.txt', 'from the gateway\n')
    chmodSync(join(root, 'down.txt'), 0o600)
    utimesSync(join(root, 'down.txt'), THEN, THEN)
    const down = await scp(t, login, [remote(login, 'down.txt'), join(local, 'down.txt')])
    t.equal(down.code, 0, `scp down exits 0: ${down.stderr}`)
    t.equal(readFileSync(join(local, 'down.txt'), 'utf8'), 'from the gateway\n', 'the download')
    t.not(statSync(join(local, 'down.txt')).mtime.getTime(), THEN.getTime(), 'without -p the time is the download’s')

    const downP = await scp(t, login, ['-p', remote(login, 'down.txt'), join(local, 'down-p.txt')])
    t.equal(downP.code, 0, `scp -p down exits 0: ${downP.stderr}`)
    const got = statSync(join(local, 'down-p.txt'))
    t.equal(readFileSync(join(local, 'down-p.txt'), 'utf8'), 'from the gateway\n', '-p: the bytes')
    t.equal(got.mtime.getTime(), THEN.getTime(), '-p: the modification time')
    t.equal(got.mode & 0o777, 0o600, '-p: the mode')

    const big = await scp(t, login, [remote(login, 'kept.bin'), join(local, 'big.bin')])
    t.equal(big.code, 0, `a 2 MiB download exits 0: ${big.stderr}`)
    t.same(readFileSync(join(local, 'big.bin')), payload, 'a 2 MiB download, byte for byte')
  })
}

t.test('scp reports a failure with its message and a non-zero exit', async (t) => {
  const { login } = await startGateway(t)
  const local = t.testdir()
  const r = await scp(t, login, [remote(login, 'missing.txt'), join(local, 'x')])
  t.not(r.code, 0, 'a missing file fails')
  t.match(r.stderr, /No such file/i, 'and scp says why')
})

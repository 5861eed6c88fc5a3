/**
 * The gateway's own SFTP v3 wire layer: the extensions it advertises, as OpenSSH's
 * `sftp` sees and uses them (255 KiB requests through limits@openssh.com, `cp` through
 * copy-data, `rename` through posix-rename@openssh.com), and what a raw client sending
 * bad packets gets (the channel closed, the server still serving).
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, statfsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import ssh2 from 'ssh2'
import { type Login, call, sftpBatch, ssh2Sftp } from './clients.js'
import { startGateway } from './fixture.js'

const { Client } = ssh2

t.test('OpenSSH sftp sees the extensions and moves 255 KiB per request', async (t) => {
  const { login, root, put } = await startGateway(t)
  const local = t.testdir()
  const payload = randomBytes(16 * 1024 * 1024)
  writeFileSync(join(local, 'up.bin'), payload)
  put('down.bin', payload)
  const r = await sftpBatch(t, login, [`lcd ${local}`, 'put up.bin', 'get down.bin back.bin', ''].join('\n'), ['-vvv'])
  t.equal(r.code, 0, r.code === 0 ? "the batch succeeds" : r.stderr.slice(-2000))
  for (const ext of ['limits@openssh.com', 'posix-rename@openssh.com', 'copy-data', 'statvfs@openssh.com', 'fstatvfs@openssh.com']) {
    t.match(r.stderr, `Server supports extension "${ext}"`, `advertised: ${ext}`)
  }
  t.notMatch(r.stderr, /extension "(fsync@openssh.com|hardlink@openssh.com)"/, 'nothing advertised that is not served')
  t.match(r.stderr, /using 261120 \/ 261120/, 'the client uses 255 KiB reads and writes')
  // 16 MiB in 255 KiB requests: 65 each way (in 32 KiB ones: 512).
  const writes = r.stderr.match(/Sent message SSH2_FXP_WRITE/g)?.length ?? 0
  const reads = r.stderr.match(/Request range/g)?.length ?? 0
  t.ok(writes > 0 && writes <= 70, `WRITE requests for 16 MiB: ${writes}`)
  t.ok(reads > 0 && reads <= 70, `READ requests for 16 MiB: ${reads}`)
  t.same(readFileSync(join(root, 'up.bin')), payload, 'uploaded whole')
  t.same(readFileSync(join(local, 'back.bin')), payload, 'downloaded whole')
})

t.test('sftp cp is served by copy-data; rename by posix-rename replaces, as against sshd', async (t) => {
  const { login, root, put } = await startGateway(t)
  const big = randomBytes(3 * 1024 * 1024 + 5)
  put('a.bin', big)
  put('x.txt', 'new')
  put('y.txt', 'old')
  const r = await sftpBatch(t, login, ['cp a.bin copy.bin', 'rename x.txt y.txt', ''].join('\n'))
  t.equal(r.code, 0, `the batch succeeds: ${r.stderr}`)
  t.same(readFileSync(join(root, 'copy.bin')), big, 'copied whole')
  t.same(readFileSync(join(root, 'a.bin')), big, 'the source is unchanged')
  t.equal(readFileSync(join(root, 'y.txt'), 'utf8'), 'new', 'rename replaced the target')
})

t.test("sftp df shows the size and free space of a local folder's file system; a storage that does not tell refuses clearly", async (t) => {
  const { login, root } = await startGateway(t)
  const r = await sftpBatch(t, login, 'df\n')
  t.equal(r.code, 0, `df succeeds: ${r.stderr}`)
  // "Size Used Avail (root) %Capacity", then the figures in KiB.
  const figures = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+%/m.exec(r.stdout)
  t.ok(figures, `df prints its figures: ${r.stdout}`)
  const s = statfsSync(root)
  t.equal(Number(figures![1]), Math.floor((s.blocks * s.bsize) / 1024), 'Size is the size of the file system holding the folder')
  const onSftp = await startGateway(t, { backend: 'sftp' })
  const refused = await sftpBatch(t, onSftp.login, 'df\n')
  t.not(refused.code, 0, 'over the sftp backend df fails')
  const { sftp } = await ssh2Sftp(t, onSftp.login)
  await t.rejects(
    call((sftp as unknown as { ext_openssh_statvfs: (...a: never[]) => void }).ext_openssh_statvfs.bind(sftp), '/'),
    { message: /does not tell its size and free space/ },
    'with a clear message (ssh2 client)',
  )
})

// --- A raw SFTP client: bytes on the `sftp` subsystem channel. ---

function u32(v: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(v)
  return b
}
function u64(v: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64BE(BigInt(v))
  return b
}
function str(v: string | Buffer): Buffer {
  const b = typeof v === 'string' ? Buffer.from(v) : v
  return Buffer.concat([u32(b.length), b])
}
function packet(type: number, ...fields: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from([type]), ...fields])
  return Buffer.concat([u32(body.length), body])
}

interface Raw {
  readonly stream: NodeJS.ReadWriteStream
  /** Resolves with the next whole packet (type first), or null once the channel closed. */
  next(): Promise<Buffer | null>
  readonly closed: Promise<void>
}

async function rawSession(t: Test, l: Login): Promise<Raw> {
  const client = new Client()
  t.teardown(() => client.end())
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.connect({ host: '127.0.0.1', port: l.port, username: l.user, password: l.password, readyTimeout: 20_000 })
  })
  const stream = await new Promise<NodeJS.ReadWriteStream>((resolve, reject) => client.subsys('sftp', (err, s) => (err ? reject(err) : resolve(s))))
  let buf = Buffer.alloc(0)
  let ended = false
  const waiters: (() => void)[] = []
  const wake = () => waiters.splice(0).forEach((w) => w())
  stream.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c])
    wake()
  })
  const closed = new Promise<void>((resolve) => stream.once('close', () => ((ended = true), wake(), resolve())))
  const next = async (): Promise<Buffer | null> => {
    for (;;) {
      if (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const n = buf.readUInt32BE(0)
        const p = buf.subarray(4, 4 + n)
        buf = buf.subarray(4 + n)
        return p
      }
      if (ended) return null
      await new Promise<void>((r) => waiters.push(r))
    }
  }
  return { stream, next, closed }
}

async function initialised(t: Test, l: Login): Promise<Raw> {
  const raw = await rawSession(t, l)
  raw.stream.write(packet(1, u32(3)))
  const v = await raw.next()
  t.equal(v?.[0], 2, 'VERSION')
  return raw
}

t.test('raw clients: bad packets close the channel, the server keeps serving', async (t) => {
  const { login, put } = await startGateway(t)
  put('f.txt', 'x'.repeat(1024 * 1024))

  await t.test('a packet longer than the limit', async (t) => {
    const raw = await initialised(t, login)
    raw.stream.write(Buffer.concat([u32(10 * 1024 * 1024), Buffer.from([6]), u32(1)]))
    await raw.closed
    t.equal(await raw.next(), null, 'closed without an answer')
  })

  await t.test('a request cut short', async (t) => {
    const raw = await initialised(t, login)
    // READ with its id and half a handle length.
    raw.stream.write(packet(5, u32(7), Buffer.from([0, 0])))
    await raw.closed
    t.equal(await raw.next(), null, 'closed without an answer')
  })

  await t.test('a request before INIT, and an INIT of version 2', async (t) => {
    for (const first of [packet(17, u32(1), str('/')), packet(1, u32(2))]) {
      const raw = await rawSession(t, login)
      raw.stream.write(first)
      await raw.closed
      t.equal(await raw.next(), null, 'closed without an answer')
    }
  })

  await t.test('an unknown request type is OP_UNSUPPORTED, and the session goes on', async (t) => {
    const raw = await initialised(t, login)
    raw.stream.write(packet(99, u32(42), str('whatever')))
    const st = (await raw.next())!
    t.equal(st[0], 101, 'STATUS')
    t.equal(st.readUInt32BE(1), 42, 'for that request')
    t.equal(st.readUInt32BE(5), 8, 'OP_UNSUPPORTED')
    raw.stream.write(packet(16, u32(43), str('.')))
    const name = (await raw.next())!
    t.equal(name[0], 104, 'REALPATH still answered (NAME)')
  })

  await t.test('a READ asking more than max-read-length gets a short read', async (t) => {
    const raw = await initialised(t, login)
    raw.stream.write(packet(3, u32(1), str('/f.txt'), u32(1), u32(0)))
    const h = (await raw.next())!
    t.equal(h[0], 102, 'HANDLE')
    const handle = h.subarray(9, 9 + h.readUInt32BE(5))
    raw.stream.write(packet(5, u32(2), str(handle), u64(0), u32(1024 * 1024)))
    const d = (await raw.next())!
    t.equal(d[0], 103, 'DATA')
    t.equal(d.readUInt32BE(5), 255 * 1024, '255 KiB of the 1 MiB asked')
  })

  // The gateway still serves new sessions.
  const { sftp } = await ssh2Sftp(t, login)
  const st = await call<{ size: number }>(sftp.stat.bind(sftp), 'f.txt')
  t.equal(st.size, 1024 * 1024, 'a new session works')
})

t.test('copy-data between two handles: ranges, to the end, closed handles', async (t) => {
  const { login, root, put } = await startGateway(t)
  put('src.txt', '0123456789')
  const raw = await initialised(t, login)
  let id = 0
  const ask = async (type: number, ...fields: Buffer[]): Promise<Buffer> => {
    raw.stream.write(packet(type, u32(++id), ...fields))
    return (await raw.next())!
  }
  const handleOf = (p: Buffer) => p.subarray(9, 9 + p.readUInt32BE(5))
  const statusOf = (p: Buffer) => (p[0] === 101 ? p.readUInt32BE(5) : -1)
  const src = handleOf(await ask(3, str('/src.txt'), u32(0x01), u32(0)))
  const dst = handleOf(await ask(3, str('/dst.txt'), u32(0x02 | 0x08 | 0x10), u32(0)))
  const copy = (from: Buffer, at: number, len: number, to: Buffer, toAt: number) =>
    ask(200, str('copy-data'), str(from), u64(at), u64(len), str(to), u64(toAt)).then(statusOf)
  t.equal(await copy(src, 2, 3, dst, 0), 0, 'a range: OK')
  t.equal(await copy(src, 7, 0, dst, 3), 0, 'to the end: OK')
  t.equal(await copy(dst, 0, 0, src, 0), 3, 'a target not open for writing: PERMISSION_DENIED')
  t.equal(statusOf(await ask(4, str(dst))), 0, 'CLOSE')
  t.equal(readFileSync(join(root, 'dst.txt'), 'utf8'), '234789', 'the ranges asked')
  t.equal(await copy(src, 0, 0, dst, 0), 4, 'a closed handle: FAILURE')
  t.equal(readFileSync(join(root, 'src.txt'), 'utf8'), '0123456789', 'the source is unchanged')
})

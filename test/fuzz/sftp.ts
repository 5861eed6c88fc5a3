/**
 * The SFTP gateway's door: every request a client sends (ssh2's client: open with each
 * flag set then read/write/fstat/close, stat, lstat, setstat, opendir/readdir, mkdir,
 * rmdir, rename, remove, realpath, symlink, readlink, and the extensions
 * posix-rename, statvfs, hardlink, fsync, lsetstat) with fuzzed paths, modes and
 * times, on one logged-in session. After each case: a failure is an SFTP status with
 * a message (never "connection lost"), no answer leaks, nothing outside changed; the
 * session is still up.
 */
import fc from 'fast-check'
import ssh2, { type SFTPWrapper } from 'ssh2'
import { path } from './arbitraries.js'
import { type Door, checkCase } from './door.js'
import { expect, leak, sftpProblem } from './invariants.js'
import { USER, USER_PASSWORD, type World } from './world.js'

const { Client } = ssh2

type Call = (sftp: SFTPWrapper, cb: (err: Error | null | undefined, ...res: unknown[]) => void) => void

interface Session {
  sftp: SFTPWrapper
  /** Why the connection ended, once it has. */
  ended: string | null
  end(): void
}

async function connect(w: World): Promise<Session> {
  const client = new Client()
  const s: Session = { sftp: undefined as unknown as SFTPWrapper, ended: null, end: () => client.end() }
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject)
    client.connect({ host: '127.0.0.1', port: w.sftpPort, username: USER, password: USER_PASSWORD, readyTimeout: 30_000 })
  })
  client.on('error', (e) => (s.ended ??= `the SSH connection failed: ${e.message}`))
  client.on('close', () => (s.ended ??= 'the SSH connection was closed'))
  s.sftp = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, sftp) => (err ? reject(err) : resolve(sftp))))
  s.sftp.on('close', () => (s.ended ??= 'the SFTP channel was closed'))
  return s
}

export async function sftpDoor(w: World): Promise<Door> {
  let s = await connect(w)

  /** One request: its result, or its failure checked for SFTP's shape. A request the client refuses to send is `undefined`. */
  const request = (what: string, fn: Call): Promise<{ ok: true; res: unknown[] } | { ok: false } | undefined> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: no answer within 30 s (a stuck request)`)), 30_000)
      try {
        fn(s.sftp, (err, ...res) => {
          clearTimeout(timer)
          if (!err) return resolve({ ok: true, res })
          const problem = sftpProblem(err)
          if (problem) reject(new Error(`${what}: ${problem}`))
          else resolve({ ok: false })
        })
      } catch {
        clearTimeout(timer)
        resolve(undefined) // the client would not send it (too long, an extension not offered)
      }
    })

  const checkLeak = (what: string, res: unknown[]): void => {
    const text = res.map((r) => (Buffer.isBuffer(r) ? r.toString('latin1') : JSON.stringify(r))).join('\n')
    const leaked = leak(w, text)
    expect(leaked === null, `${what}: ${leaked}`)
  }

  const attrs = fc.record(
    {
      mode: fc.oneof(fc.integer({ min: 0, max: 0o7777 }), fc.constantFrom(0o40777, 0o100777, 0o777, 0xffffffff)),
      mtime: fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.constant(0)),
      atime: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      uid: fc.integer({ min: 0, max: 65535 }),
      gid: fc.integer({ min: 0, max: 65535 }),
      size: fc.integer({ min: 0, max: 2 ** 40 }),
    },
    { requiredKeys: [] },
  )

  const OPS = ['open', 'stat', 'lstat', 'setstat', 'readdir', 'mkdir', 'rmdir', 'rename', 'posix-rename', 'unlink', 'realpath', 'symlink', 'readlink', 'statvfs', 'hardlink', 'lsetstat'] as const

  const operations = fc.asyncProperty(
    fc.constantFrom(...OPS), path, path, fc.constantFrom('r', 'r+', 'w', 'wx', 'a', 'a+', 'w+'), attrs, fc.uint8Array({ maxLength: 64 }), fc.nat({ max: 1 << 20 }),
    async (op, p, p2, flags, a, data, offset) => {
      if (s.ended) s = await connect(w) // a previous case's failure already reported it
      await checkCase(w, async () => {
        const what = `${op} ${JSON.stringify(p)}${['rename', 'posix-rename', 'symlink', 'hardlink'].includes(op) ? ` ${JSON.stringify(p2)}` : ''}`
        let r: Awaited<ReturnType<typeof request>>
        switch (op) {
          case 'open': {
            r = await request(what, (f, cb) => f.open(p, flags, a, cb))
            if (r?.ok) {
              const handle = r.res[0] as Buffer
              const rd = await request(`${what}: read`, (f, cb) => f.read(handle, Buffer.alloc(65536), 0, 65536, offset, cb))
              if (rd?.ok) checkLeak(`${what}: read`, [(rd.res[1] as Buffer).subarray(0, rd.res[0] as number)])
              await request(`${what}: write`, (f, cb) => f.write(handle, Buffer.from(data), 0, data.length, offset, cb))
              const st = await request(`${what}: fstat`, (f, cb) => f.fstat(handle, cb))
              if (st?.ok) checkLeak(`${what}: fstat`, st.res)
              await request(`${what}: fsync`, (f, cb) => f.ext_openssh_fsync(handle, cb))
              await request(`${what}: close`, (f, cb) => f.close(handle, cb))
            }
            break
          }
          case 'readdir':
            r = await request(what, (f, cb) => f.readdir(p, cb))
            break
          case 'stat':
          case 'lstat':
          case 'realpath':
          case 'readlink':
          case 'rmdir':
          case 'unlink':
            r = await request(what, (f, cb) => (f[op] as (p: string, cb: unknown) => void)(p, cb))
            break
          case 'statvfs':
            r = await request(what, (f, cb) => f.ext_openssh_statvfs(p, cb))
            break
          case 'setstat':
            r = await request(what, (f, cb) => f.setstat(p, a, cb))
            break
          case 'lsetstat':
            r = await request(what, (f, cb) => f.ext_openssh_lsetstat(p, a, cb))
            break
          case 'mkdir':
            r = await request(what, (f, cb) => f.mkdir(p, a, cb))
            break
          case 'rename':
            r = await request(what, (f, cb) => f.rename(p, p2, cb))
            break
          case 'posix-rename':
            r = await request(what, (f, cb) => f.ext_openssh_rename(p, p2, cb))
            break
          case 'symlink':
            r = await request(what, (f, cb) => f.symlink(p, p2, cb))
            break
          case 'hardlink':
            r = await request(what, (f, cb) => f.ext_openssh_hardlink(p, p2, cb))
            break
        }
        if (r?.ok) checkLeak(what, r.res)
        // Give the session a moment to report a close the request caused.
        await new Promise((res) => setImmediate(res))
        expect(s.ended === null, `${what}: ${s.ended}`)
      })
    },
  )

  return {
    properties: [{ name: 'operations', property: operations, weight: 1 }],
    async alive() {
      const fresh = await connect(w) // a new login works
      try {
        const r = await new Promise<string>((resolve, reject) => fresh.sftp.realpath('.', (err, p) => (err ? reject(err) : resolve(p))))
        expect(r === '/', `SFTP realpath . after a batch: ${r}`)
      } finally {
        fresh.end()
      }
    },
    async close() {
      s.end()
    },
  }
}

/**
 * @module test/gateway-fs/cases
 * The gateway layer's cases (core/view.ts over gateways/connection/view.ts), written once
 * and run against a real worker pool over each backend (local, sftp, ftp, smb and s3 .test.ts).
 * Each case gets a fresh view over an empty folder, and that folder seen past the view
 * (`read`, `names`: the disk, the bucket) to check what really landed, and that nothing else did.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Test } from 'tap'
import type { FileHandle, OpenFlags, RequestContext, View } from '../../core/view.js'
import type { BackendSpec } from '../../core/backend.js'
import { type ViewStats, openView } from '../../gateways/connection/view.js'
import type { WorkerPool } from '../../workers/pool.js'
import { Channel } from '../../workers/client.js'
import { HOSTILE_NAMES } from '../drivers/suite.js'
import { FULL_ACCESS, READ_ONLY } from '../../core/permissions.js'

export interface Fixture {
  readonly fs: View & { readonly stats: ViewStats }
  /** The same root, read-only. */
  readonly readOnly: View
  /** Live transfers of the pool now. */
  readonly transfers: () => number
  /** Writes that are not a `put` go in place (else through staging). */
  readonly inPlace: boolean
  /** The staging folder's names. */
  readonly staged: () => string[]
  /** What really is in the view's root, seen past the view (the disk, the bucket). */
  read(rel: string): Promise<Buffer>
  /** The names in a folder of the root (`''`: the root), hidden temporary files included, sorted. */
  names(rel?: string): Promise<string[]>
  /** Puts a file straight into the root, owned as the backend needs. */
  put(rel: string, data: Uint8Array | string): Promise<void>
  mkdir(rel: string): Promise<void>
  /** Characters the storage refuses in a name (its driver's `refusedNameChars`): EINVAL, nothing made. */
  readonly refusedNameChars: string
  /** Names of HOSTILE_NAMES the backend cannot keep as given, each with why (a skip that says so). */
  readonly skipNames: readonly NameSkip[]
}

/** The view's root seen past the view: a folder on this machine, or a bucket. */
export interface Backing {
  read(rel: string): Promise<Buffer>
  names(rel?: string): Promise<string[]>
  put(rel: string, data: Uint8Array | string): Promise<void>
  mkdir(rel: string): Promise<void>
}

/** A root that is the folder `root` on this machine; `own` makes what is seeded the backend's (e.g. the sshd user's). */
export function diskBacking(root: string, own: (abs: string) => void = () => {}): Backing {
  return {
    read: async (rel) => readFileSync(join(root, rel)),
    names: async (rel = '') => names(join(root, rel)),
    put: async (rel, data) => {
      mkdirSync(dirname(join(root, rel)), { recursive: true })
      writeFileSync(join(root, rel), data)
      own(join(root, rel))
    },
    mkdir: async (rel) => {
      mkdirSync(join(root, rel), { recursive: true })
      own(join(root, rel))
    },
  }
}

export interface NameSkip {
  readonly names: readonly string[]
  readonly reason: string
  /** Only this step is skipped for those names (else the name altogether). */
  readonly step?: 'rename'
}

export type MakeFixture = (t: Test) => Promise<Fixture>

export const MiB = 1024 * 1024
export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

export function ctx(signal: AbortSignal = new AbortController().signal): RequestContext {
  return { requestId: randomUUID(), signal }
}

export const flags = (f: Partial<OpenFlags>): OpenFlags => ({ read: false, write: false, append: false, create: false, truncate: false, exclusive: false, ...f })
export const R = flags({ read: true })
/** What `put` sends: WRITE | CREAT | TRUNC. */
export const PUT = flags({ write: true, create: true, truncate: true })

/** Rejects with `code`. */
export async function rejects(t: Test, p: Promise<unknown>, code: string, what: string): Promise<void> {
  try {
    await p
    t.fail(`${what}: expected ${code}, it succeeded`)
  } catch (err) {
    t.equal((err as { code?: string }).code, code, `${what}: ${code}`)
    t.equal((err as Error).name, 'FsError', `${what}: an FsError`)
  }
}

export async function readWhole(h: FileHandle, step = 32 * 1024): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for (let off = 0; ; ) {
    const b = await h.read(off, step)
    if (b.byteLength === 0) break
    parts.push(Buffer.from(b))
    off += b.byteLength
  }
  return Buffer.concat(parts)
}

/** Writes `data` as an SFTP client does: `step`-byte writes, `inFlight` at once. */
export async function writeLikeSftp(h: FileHandle, data: Uint8Array, step = 32 * 1024, inFlight = 64, base = 0): Promise<void> {
  const pending = new Set<Promise<void>>()
  for (let off = 0; off < data.byteLength; off += step) {
    const p: Promise<void> = h.write(base + off, data.subarray(off, off + step)).finally(() => pending.delete(p))
    pending.add(p)
    if (pending.size >= inFlight) await Promise.race(pending)
  }
  await Promise.all(pending)
}

/** The backing folder's names, hidden temporary files included. */
export const names = (dir: string): string[] => readdirSync(dir).sort()

export function runCases(t: Test, name: string, make: MakeFixture): Promise<unknown> {
  return t.test(name, async (t) => {
    await t.test('stat, lstat and the root', async (t) => {
      const f = await make(t)
      await f.put('a.txt', 'hello')
      const st = await f.fs.stat(ctx(), '/a.txt')
      t.match(st, { path: '/a.txt', name: 'a.txt', kind: 'file', size: 5 })
      t.type(st.mtimeMs, 'number')
      t.match(await f.fs.lstat(ctx(), '/a.txt'), { kind: 'file', size: 5 })
      t.match(await f.fs.stat(ctx(), '/'), { kind: 'dir' })
      await rejects(t, f.fs.stat(ctx(), '/missing'), 'ENOENT', 'stat of nothing')
      await rejects(t, f.fs.lstat(ctx(), '/missing'), 'ENOENT', 'lstat of nothing')
    })

    await t.test('mkdir and rmdir: one directory each', async (t) => {
      const f = await make(t)
      await f.fs.mkdir(ctx(), '/d')
      t.match(await f.fs.stat(ctx(), '/d'), { kind: 'dir' })
      await rejects(t, f.fs.mkdir(ctx(), '/d'), 'EEXIST', 'mkdir of an existing directory')
      await rejects(t, f.fs.mkdir(ctx(), '/x/y'), 'ENOENT', 'mkdir without its parent (no mkdir -p)')
      t.notOk((await f.names()).includes('x'), 'no parent was made')
      await f.put('d/file', 'x')
      await rejects(t, f.fs.rmdir(ctx(), '/d'), 'ENOTEMPTY', 'rmdir of a non-empty directory')
      await rejects(t, f.fs.rmdir(ctx(), '/d/file'), 'ENOTDIR', 'rmdir of a file')
      await rejects(t, f.fs.rmdir(ctx(), '/'), 'EACCES', 'rmdir of the root')
      await rejects(t, f.fs.rmdir(ctx(), '/none'), 'ENOENT', 'rmdir of nothing')
      await f.fs.unlink(ctx(), '/d/file')
      await f.fs.rmdir(ctx(), '/d')
      t.same((await f.names()), [], 'all gone')
    })

    await t.test('unlink: files only', async (t) => {
      const f = await make(t)
      await f.put('a', 'x')
      await f.mkdir('d')
      await rejects(t, f.fs.unlink(ctx(), '/d'), 'EISDIR', 'unlink of a directory')
      await rejects(t, f.fs.unlink(ctx(), '/none'), 'ENOENT', 'unlink of nothing')
      await f.fs.unlink(ctx(), '/a')
      t.same((await f.names()), ['d'])
    })

    await t.test('rename: parent must exist, overwrite or not, not into itself', async (t) => {
      const f = await make(t)
      await f.put('a', 'A')
      await f.put('b', 'B')
      await f.mkdir('d')
      await rejects(t, f.fs.rename(ctx(), '/a', '/b', { overwrite: false }), 'EEXIST', 'rename onto a file without overwrite')
      t.equal((await f.read('b')).toString('utf8'), 'B', 'target untouched')
      await rejects(t, f.fs.rename(ctx(), '/a', '/x/y', { overwrite: false }), 'ENOENT', 'rename into a missing folder')
      t.notOk((await f.names()).includes('x'), 'no parent was made')
      await rejects(t, f.fs.rename(ctx(), '/d', '/d/e', { overwrite: false }), 'EINVAL', 'a directory into itself')
      await rejects(t, f.fs.rename(ctx(), '/none', '/z', { overwrite: false }), 'ENOENT', 'rename of nothing')
      await f.fs.rename(ctx(), '/a', '/b', { overwrite: true })
      t.equal((await f.read('b')).toString('utf8'), 'A', 'replaced')
      await f.fs.rename(ctx(), '/b', '/d/c', { overwrite: false })
      t.same((await f.names()), ['d'])
      t.same((await f.names('d')), ['c'])
    })

    await t.test('list: 2,500 entries in pages, UTF-8 byte order, with cursors', async (t) => {
      const f = await make(t)
      const want: string[] = []
      for (let i = 0; i < 2500; i++) want.push(`f${String(i).padStart(4, '0')}`)
      // Code-unit order and UTF-8 byte order differ here: U+FF5E sorts after U+1F600 in bytes' order only... not; U+E000 vs surrogate pairs do.
      want.push('\u{E000}x', '\u{1F600}y', 'Zz', 'zz', 'é')
      for (let i = 0; i < want.length; i += 32) await Promise.all(want.slice(i, i + 32).map((n) => f.put(n, n)))
      const seen: string[] = []
      let cursor: string | null = null
      let pages = 0
      do {
        const page = await f.fs.list(ctx(), '/', { cursor, limit: 1000 })
        t.ok(page.entries.length <= 1000, 'at most the limit')
        seen.push(...page.entries.map((e) => e.name))
        cursor = page.cursor
        pages++
      } while (cursor !== null)
      t.equal(pages, 3, 'three pages')
      const sorted = [...want].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
      t.same(seen, sorted, 'every name once, in UTF-8 byte order')
      t.ok(sorted.indexOf('\u{E000}x') < sorted.indexOf('\u{1F600}y'), 'byte order, not UTF-16 code-unit order')
      const first = await f.fs.list(ctx(), '/')
      t.equal(first.entries.length, 1000, 'default page: 1000')
      t.match(first.entries[0], { name: 'Zz', kind: 'file', size: 2 })
      await rejects(t, f.fs.list(ctx(), '/', { cursor: 'not a cursor' }), 'EINVAL', 'a bad cursor')
      await rejects(t, f.fs.list(ctx(), '/f0001'), 'ENOTDIR', 'list of a file')
      await rejects(t, f.fs.list(ctx(), '/none'), 'ENOENT', 'list of nothing')
    })

    await t.test('list: a cursor whose snapshot expired lists again and goes on after its last name', async (t) => {
      const f = await make(t)
      for (const n of ['a', 'b', 'c', 'd']) await f.put(n, n)
      const p1 = await f.fs.list(ctx(), '/', { limit: 2 })
      t.same(p1.entries.map((e) => e.name), ['a', 'b'])
      // A cursor from another listing's snapshot (a forged id) re-lists after its name.
      const forged = Buffer.from(JSON.stringify(['nope', 'b'])).toString('base64url')
      await f.put('bb', 'new')
      const p2 = await f.fs.list(ctx(), '/', { cursor: forged, limit: 10 })
      t.same(p2.entries.map((e) => e.name), ['bb', 'c', 'd'])
      t.equal(p2.cursor, null)
    })

    await t.test('list: after a name (where an S3 listing resumes), from the view\'s fresh snapshot', async (t) => {
      const f = await make(t)
      for (const n of ['a', 'b', 'c', 'd', 'e']) await f.put(n, n)
      const p1 = await f.fs.list(ctx(), '/', { limit: 2 })
      t.same(p1.entries.map((e) => e.name), ['a', 'b'])
      await f.put('bb', 'made after the first page')
      const p2 = await f.fs.list(ctx(), '/', { after: 'a', limit: 2 })
      t.same(p2.entries.map((e) => e.name), ['b', 'c'], 'the snapshot of the first page serves it (no new listing: bb is not in it)')
      const p3 = await f.fs.list(ctx(), '/', { after: 'c', limit: 10 })
      t.same(p3.entries.map((e) => e.name), ['d', 'e'], 'the same snapshot, to its end')
      t.equal(p3.cursor, null)
      const p4 = await f.fs.list(ctx(), '/', { after: 'b', limit: 10 })
      t.same(p4.entries.map((e) => e.name), ['bb', 'c', 'd', 'e'], 'the snapshot ended with its last page: a new listing, after the name')
      t.same((await f.fs.list(ctx(), '/', { after: '\u{10FFFF}' })).entries, [], 'after every name: nothing')
    })

    await t.test('put: sequential writes, committed atomically at close', async (t) => {
      const f = await make(t)
      await f.put('old', 'previous content')
      const data = randomBytes(3 * MiB + 123)
      const h = await f.fs.open(ctx(), '/old', PUT)
      await writeLikeSftp(h, data)
      t.equal((await f.read('old')).toString('utf8'), 'previous content', 'nothing visible before close')
      t.equal((await h.stat()).size, data.byteLength, 'fstat counts what was written')
      await h.close()
      t.equal(sha256((await f.read('old'))), sha256(data), 'byte-exact after close')
      t.same((await f.names()), ['old'], 'no temporary file left')
    })

    await t.test('writeFile: the worker hashes what it commits, checks a SHA-256 before committing, and answers the file as stored', async (t) => {
      const f = await make(t)
      const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')
      async function* pieces(b: Uint8Array): AsyncIterable<Uint8Array> {
        for (let at = 0; at < b.byteLength; at += 256 * 1024) yield b.slice(at, at + 256 * 1024)
      }
      const data = randomBytes(3 * MiB + 123)
      const w = await f.fs.writeFile(ctx(), '/put.bin', pieces(data), { overwrite: true, digest: 'md5', sha256: sha256(data) })
      t.equal(w.digest, md5(data), 'the MD5 of the whole file')
      const st = await f.fs.stat(ctx(), '/put.bin')
      t.match(w, { size: data.byteLength, mtimeMs: st.mtimeMs }, 'the entry a stat then gives')
      t.equal((await f.fs.writeFile(ctx(), '/empty.bin', pieces(new Uint8Array(0)), { overwrite: true, digest: 'md5' })).digest, md5(new Uint8Array(0)), 'an empty file: the MD5 of nothing')
      t.equal((await f.fs.writeFile(ctx(), '/plain.bin', pieces(data), { overwrite: true })).digest, undefined, 'no digest asked: none given')

      const other = randomBytes(data.byteLength)
      await t.rejects(f.fs.writeFile(ctx(), '/put.bin', pieces(other), { overwrite: true, sha256: sha256(data) }), { code: 'EINTEGRITY' }, 'another SHA-256: refused')
      t.equal(sha256(await f.read('put.bin')), sha256(data), 'the file is as it was')
      await t.rejects(f.fs.writeFile(ctx(), '/a/b/c.bin', pieces(other), { overwrite: true, sha256: sha256(data), foldersBelow: '/' }), { code: 'EINTEGRITY' })
      t.same(await f.names(), ['empty.bin', 'plain.bin', 'put.bin'], 'no temporary file, no folder made for it')
      await f.mkdir('a')
      await t.rejects(f.fs.writeFile(ctx(), '/b/c/d.bin', pieces(data), { overwrite: true, foldersBelow: '/b' }), { code: 'ENOENT' }, 'folders are made only below one that exists')
      await f.fs.writeFile(ctx(), '/a/b/c.bin', pieces(data), { overwrite: true, foldersBelow: '/a' })
      t.equal(sha256(await f.read('a/b/c.bin')), sha256(data), 'written, in the folder made below')
    })

    await t.test('put: abort commits nothing and leaves no debris', async (t) => {
      const f = await make(t)
      await f.put('keep', 'old bytes')
      const h = await f.fs.open(ctx(), '/keep', PUT)
      await writeLikeSftp(h, randomBytes(5 * MiB))
      h.abort()
      h.abort()
      const ac = new AbortController()
      const h2 = await f.fs.open(ctx(ac.signal), '/new', PUT)
      await writeLikeSftp(h2, randomBytes(2 * MiB))
      ac.abort() // the connection is lost
      await rejects(t, h2.close(), 'ECANCELED', 'close after the connection went')
      // The workers' side of both uploads is over (their temporary files removed), then look.
      await waitFor(async () => f.transfers() === 0 && (await f.names()).length === 1)
      t.equal((await f.read('keep')).toString('utf8'), 'old bytes', 'old content kept')
      t.same((await f.names()), ['keep'], 'no new file, no temporary file')
    })

    await t.test('read: sequential, at offsets, past the end', async (t) => {
      const f = await make(t)
      const data = randomBytes(5 * MiB + 7)
      await f.put('big', data)
      await f.put('small', 'tiny')
      const h = await f.fs.open(ctx(), '/big', R)
      t.equal(sha256(await readWhole(h)), sha256(data), 'sequential read byte-exact')
      t.same(Buffer.from(await h.read(MiB, 10)), data.subarray(MiB, MiB + 10), 'a seek back')
      t.same(Buffer.from(await h.read(4 * MiB, 100)), data.subarray(4 * MiB, 4 * MiB + 100), 'a seek forward')
      t.equal((await h.read(data.byteLength, 10)).byteLength, 0, 'at the end: empty')
      t.equal((await h.read(data.byteLength + 100, 10)).byteLength, 0, 'past the end: empty')
      t.same(Buffer.from(await h.read(data.byteLength - 3, 10)), data.subarray(data.byteLength - 3), 'short at the end')
      t.match(await h.stat(), { size: data.byteLength })
      await rejects(t, h.write(0, Buffer.from('x')), 'EACCES', 'write on a read handle')
      await h.close()
      const s = await f.fs.open(ctx(), '/small', R)
      t.equal(Buffer.from(await s.read(0, 100)).toString(), 'tiny')
      t.equal(Buffer.from(await s.read(2, 100)).toString(), 'ny')
      await s.close()
      await rejects(t, f.fs.open(ctx(), '/none', R), 'ENOENT', 'open of nothing')
      await f.mkdir('d')
      await rejects(t, f.fs.open(ctx(), '/d', R), 'EISDIR', 'open of a directory')
    })

    await t.test('open flags: create, exclusive, truncate, append, read + write', async (t) => {
      const f = await make(t)
      await f.put('a', '0123456789')
      await rejects(t, f.fs.open(ctx(), '/a', flags({ write: true, create: true, exclusive: true })), 'EEXIST', 'exclusive on an existing file')
      await rejects(t, f.fs.open(ctx(), '/none', flags({ write: true })), 'ENOENT', 'write without create on nothing')
      await rejects(t, f.fs.open(ctx(), '/no/dir', PUT), 'ENOENT', 'create in a missing folder')
      await rejects(t, f.fs.open(ctx(), '/a/b', PUT), 'ENOTDIR', 'create under a file')

      let h = await f.fs.open(ctx(), '/new', flags({ write: true, create: true, exclusive: true }))
      await h.write(0, Buffer.from('fresh'))
      await h.close()
      t.equal((await f.read('new')).toString('utf8'), 'fresh', 'exclusive create')

      h = await f.fs.open(ctx(), '/empty', PUT)
      await h.write(0, Buffer.from('abc'))
      t.match(await h.stat(), { kind: 'file', size: 3 }, 'a file being created: its handle counts what was written')
      // Other handles, sessions and doors see the storage: nothing before close (an SFTP
      // session shows its own files itself, gateways/sftp/own-writes.ts).
      await rejects(t, f.fs.stat(ctx(), '/empty'), 'ENOENT', 'not there for the view’s stat before close')
      await rejects(t, f.fs.lstat(ctx(), '/empty'), 'ENOENT', 'nor lstat')
      t.notOk((await f.names()).includes('empty'), 'not on the storage before close')
      h.abort()
      await rejects(t, f.fs.stat(ctx(), '/empty'), 'ENOENT', 'gone with an abort')
      h = await f.fs.open(ctx(), '/empty', PUT)
      await h.close()
      t.equal((await f.read('empty')).toString('utf8'), '', 'create + truncate, no write: an empty file')

      h = await f.fs.open(ctx(), '/a', PUT)
      await h.write(0, Buffer.from('xy'))
      await h.close()
      t.equal((await f.read('a')).toString('utf8'), 'xy', 'truncate drops the old bytes')

      await f.put('b', '0123456789')
      h = await f.fs.open(ctx(), '/b', flags({ write: true, append: true }))
      await h.write(0, Buffer.from('AB')) // append: the offset is ignored
      await h.write(3, Buffer.from('CD'))
      t.equal((await h.stat()).size, 14, 'fstat counts appended bytes')
      if (!f.inPlace) t.equal((await f.read('b')).toString('utf8'), '0123456789', 'staging: nothing visible before close')
      await h.close()
      t.equal((await f.read('b')).toString('utf8'), '0123456789ABCD', 'append at the end')

      await f.put('c', '0123456789')
      h = await f.fs.open(ctx(), '/c', flags({ read: true, write: true }))
      t.equal(Buffer.from(await h.read(0, 4)).toString(), '0123', 'r+: reads the file')
      await h.write(2, Buffer.from('xx'))
      t.equal(Buffer.from(await h.read(0, 100)).toString(), '01xx456789', 'read after write sees the bytes')
      await h.write(12, Buffer.from('!'))
      t.same(Buffer.from(await h.read(10, 10)), Buffer.from([0, 0, 0x21]), 'a hole reads as zeros')
      t.equal((await h.stat()).size, 13)
      await h.close()
      t.same((await f.read('c')), Buffer.concat([Buffer.from('01xx456789'), Buffer.from([0, 0]), Buffer.from('!')]), 'random writes committed')

      await f.put('d', 'keep me')
      h = await f.fs.open(ctx(), '/d', flags({ read: true, write: true }))
      t.equal(Buffer.from(await h.read(0, 100)).toString(), 'keep me')
      await h.close()
      t.equal((await f.read('d')).toString('utf8'), 'keep me', 'r+ without writes changes nothing')

      h = await f.fs.open(ctx(), '/d', flags({ read: true, write: true, truncate: true }))
      t.equal((await h.read(0, 10)).byteLength, 0, 'w+: starts empty')
      await h.write(0, Buffer.from('w+'))
      t.equal(Buffer.from(await h.read(0, 10)).toString(), 'w+')
      await h.close()
      t.equal((await f.read('d')).toString('utf8'), 'w+')
      t.same(f.staged(), [], 'no staging file left')
      t.same((await f.names()), ['a', 'b', 'c', 'd', 'empty', 'new'], 'no temporary file left')
    })

    await t.test('truncate on an open handle: cut or extended where written in place or staged; an upload keeps its size', async (t) => {
      const f = await make(t)
      // scp over SFTP: writes over the old file without truncation, then sets the size it wrote.
      await f.put('over', 'the old content, longer')
      let h = await f.fs.open(ctx(), '/over', flags({ write: true, create: true }))
      await h.write(0, Buffer.from('new'))
      await h.truncate(3)
      t.equal((await h.stat()).size, 3, 'stat after truncate: the new size')
      await h.truncate(5)
      await h.close()
      t.same((await f.read('over')), Buffer.from('new\0\0'), 'cut, then extended with zeros, committed')

      await f.put('rw', '0123456789')
      h = await f.fs.open(ctx(), '/rw', flags({ read: true, write: true }))
      await h.write(0, Buffer.from('ab'))
      await h.truncate(4)
      t.equal(Buffer.from(await h.read(0, 100)).toString(), 'ab23', 'reads after truncate see the new end')
      await h.close()
      t.equal((await f.read('rw')).toString('utf8'), 'ab23')

      h = await f.fs.open(ctx(), '/put', PUT)
      await h.write(0, Buffer.from('0123456789'))
      await h.truncate(10)
      await rejects(t, h.truncate(4), 'ENOTSUP', 'an upload in order cannot be cut')
      await h.close()
      t.equal((await f.read('put')).toString('utf8'), '0123456789', 'the upload is whole')

      const r = await f.fs.open(ctx(), '/put', R)
      await rejects(t, r.truncate(1), 'EACCES', 'a read handle cannot truncate')
      await r.close()
      t.same(f.staged(), [], 'no staging file left')
    })

    await t.test('append then abort: the old content stays, no staging copy is left', async (t) => {
      const f = await make(t)
      await f.put('log', 'line 1\n')
      const h = await f.fs.open(ctx(), '/log', flags({ write: true, append: true }))
      await h.write(0, Buffer.from('line 2\n'))
      t.equal(f.staged().length, f.inPlace ? 0 : 1, f.inPlace ? 'in place: no staging copy' : 'a staging copy while open')
      h.abort()
      await waitFor(() => f.staged().length === 0)
      t.equal((await f.read('log')).toString('utf8'), 'line 1\n', 'old content kept')
      t.same((await f.names()), ['log'])
    })

    await t.test('random writes in a large file: byte-exact, the old bytes around them kept', async (t) => {
      const f = await make(t)
      const data = randomBytes(6 * MiB)
      await f.put('big', data)
      const patches: [number, number][] = [[5 * MiB + 3, 200_000], [10, 5], [MiB, 2 * MiB], [6 * MiB - 1, 10]]
      const size = 6 * MiB + 9
      const want = Buffer.alloc(size)
      data.copy(want)
      const h = await f.fs.open(ctx(), '/big', flags({ read: true, write: true }))
      for (const [off, len] of patches) {
        const b = randomBytes(len)
        b.copy(want, off)
        await writeLikeSftp(h, b, 32 * 1024, 16, off)
      }
      t.equal((await h.stat()).size, size, 'fstat: grown by the last write')
      t.same(Buffer.from(await h.read(MiB - 2, 6)), want.subarray(MiB - 2, MiB + 4), 'read after write on the same handle')
      await h.close()
      t.equal(sha256((await f.read('big'))), sha256(want), 'byte-exact')
      t.same(f.staged(), [], 'no staging file left')
      t.same((await f.names()), ['big'], 'no temporary file left')
    })

    await t.test('resume (reput): write from the current size without truncation', async (t) => {
      const f = await make(t)
      const data = randomBytes(3 * MiB)
      await f.put('part', data.subarray(0, MiB))
      const h = await f.fs.open(ctx(), '/part', flags({ write: true }))
      const size = (await h.stat()).size
      t.equal(size, MiB, 'fstat: the partial size')
      await writeLikeSftp(h, data.subarray(size), 32 * 1024, 64, size)
      await h.close()
      t.equal(sha256((await f.read('part'))), sha256(data), 'the whole file')
    })

    await t.test('put: out-of-order writes within the window, holes are zeros', async (t) => {
      const f = await make(t)
      const data = randomBytes(4 * MiB)
      const step = 64 * 1024
      const offsets: number[] = []
      for (let o = 0; o < data.byteLength; o += step) offsets.push(o)
      // Swap neighbours and reverse runs of 8: what many writes in flight look like.
      for (let i = 0; i + 8 <= offsets.length; i += 8) offsets.splice(i, 8, ...offsets.slice(i, i + 8).reverse())
      const h = await f.fs.open(ctx(), '/ooo', PUT)
      await Promise.all(offsets.map((o) => h.write(o, data.subarray(o, o + step))))
      await h.close()
      t.equal(sha256((await f.read('ooo'))), sha256(data), 'reordered, byte-exact')

      const g = await f.fs.open(ctx(), '/holes', PUT)
      await g.write(10, Buffer.from('B'))
      await g.write(0, Buffer.from('A'))
      await g.write(100, Buffer.from('C'))
      t.equal((await g.stat()).size, 101)
      await g.close()
      const want = Buffer.alloc(101)
      want[0] = 0x41
      want[10] = 0x42
      want[100] = 0x43
      t.same((await f.read('holes')), want, 'holes are zeros')
    })

    await t.test('put: 64 MiB of 32 KiB writes cross in a few large chunks', async (t) => {
      const f = await make(t)
      const data = randomBytes(64 * MiB)
      const before = f.fs.stats.uploadChunks
      const h = await f.fs.open(ctx(), '/big', PUT)
      await writeLikeSftp(h, data)
      await h.close()
      const chunks = f.fs.stats.uploadChunks - before
      t.ok(chunks <= 70, `${chunks} chunks for 2048 writes`)
      t.equal(sha256((await f.read('big'))), sha256(data), 'byte-exact')
      t.equal(f.fs.stats.pendingBytes, 0, 'nothing left pending')
    })

    await t.test('put: large writes given away (an HTTP body) cross as they are, moved, not copied', async (t) => {
      const f = await make(t)
      const parts = [3 * MiB, 5, 2 * MiB + 7, 4096, MiB].map((n) => {
        const b = Buffer.allocUnsafeSlow(n) // owns its whole ArrayBuffer, as a body's chunk does
        b.set(randomBytes(n))
        return b
      })
      const whole = Buffer.concat(parts)
      const before = f.fs.stats.uploadChunks
      const h = await f.fs.open(ctx(), '/given', PUT)
      let offset = 0
      for (const p of parts) {
        const n = p.byteLength
        await h.write(offset, p, { give: true })
        offset += n
      }
      await h.close()
      t.same(parts.map((p) => p.byteLength), [0, 5, 0, 4096, 0], 'the large ones were moved to the worker (their buffers detached); small ones copied')
      t.equal(f.fs.stats.uploadChunks - before, 5, 'each large write one chunk, the small ones joined to what precedes the next')
      t.equal(sha256((await f.read('given'))), sha256(whole), 'byte-exact')
      t.equal(f.fs.stats.pendingBytes, 0, 'nothing left pending')
    })

    await t.test('an idle handle drops its read stream', async (t) => {
      const f = await make(t)
      await f.put('big', randomBytes(8 * MiB))
      const h = await f.fs.open(ctx(), '/big', R)
      await h.read(0, 32 * 1024)
      t.equal(f.fs.stats.liveReadStreams, 1, 'a read-ahead stream while reading')
      await waitFor(() => f.fs.stats.liveReadStreams === 0 && f.transfers() === 0)
      t.pass('idle: no stream, no transfer in flight')
      const b = await h.read(32 * 1024, 10)
      t.equal(b.byteLength, 10, 'reads go on after the stream was dropped')
      await h.close()
      await waitFor(() => f.transfers() === 0)
    })

    await t.test('a file opened for writing and left idle holds no transfer', async (t) => {
      const f = await make(t)
      await f.put('a', 'old')
      await f.put('b', 'log')
      const h = await f.fs.open(ctx(), '/a', PUT)
      const g = await f.fs.open(ctx(), '/b', flags({ write: true, append: true }))
      await h.write(0, Buffer.from('new'))
      await g.write(0, Buffer.from('!'))
      t.equal(f.transfers(), 0, 'no transfer while idle')
      await h.close()
      await g.close()
      t.equal((await f.read('a')).toString('utf8'), 'new')
      t.equal((await f.read('b')).toString('utf8'), 'log!')
    })

    await t.test('sequential reads use one stream; a seek restarts it', async (t) => {
      const f = await make(t)
      await f.put('big', randomBytes(4 * MiB))
      const before = f.fs.stats.readStreams
      const h = await f.fs.open(ctx(), '/big', R)
      await readWhole(h)
      t.equal(f.fs.stats.readStreams - before, 1, 'one stream for the whole file')
      await h.read(0, 10)
      t.equal(f.fs.stats.readStreams - before, 2, 'a seek back starts another')
      await h.close()
    })

    await t.test('truncate, setTimes, setMode, copy', async (t) => {
      const f = await make(t)
      await f.put('a', '0123456789')
      await f.fs.truncate(ctx(), '/a', 4)
      t.equal((await f.read('a')).toString('utf8'), '0123', 'cut')
      await f.fs.truncate(ctx(), '/a', 6)
      t.same((await f.read('a')), Buffer.from([0x30, 0x31, 0x32, 0x33, 0, 0]), 'extended with zeros')
      await f.mkdir('d')
      await rejects(t, f.fs.truncate(ctx(), '/d', 0), 'EISDIR', 'truncate of a directory')
      await rejects(t, f.fs.truncate(ctx(), '/none', 0), 'ENOENT', 'truncate of nothing')

      if (f.fs.abilities.setTimes) {
        const when = Date.UTC(2020, 1, 2, 3, 4, 5)
        await f.fs.setTimes(ctx(), '/a', { mtimeMs: when })
        t.equal((await f.fs.stat(ctx(), '/a')).mtimeMs, when, 'mtime set')
      } else {
        await rejects(t, f.fs.setTimes(ctx(), '/a', { mtimeMs: 0 }), 'ENOTSUP', 'no settable times')
      }
      if (f.fs.abilities.modes) {
        await f.fs.setMode(ctx(), '/a', 0o640)
        t.equal((await f.fs.stat(ctx(), '/a')).mode, 0o640, 'mode set and reported')
      } else {
        await rejects(t, f.fs.setMode(ctx(), '/a', 0o640), 'ENOTSUP', 'no modes')
      }

      await f.put('src', 'copy me')
      t.match(await f.fs.copy(ctx(), '/src', '/dst', { overwrite: false }), { path: '/dst', kind: 'file', size: 7 })
      t.equal((await f.read('dst')).toString('utf8'), 'copy me')
      await rejects(t, f.fs.copy(ctx(), '/src', '/dst', { overwrite: false }), 'EEXIST', 'copy onto a file without overwrite')
      await f.put('src', 'changed')
      await f.fs.copy(ctx(), '/src', '/dst', { overwrite: true })
      t.equal((await f.read('dst')).toString('utf8'), 'changed', 'copy with overwrite')
      await rejects(t, f.fs.copy(ctx(), '/d', '/e', { overwrite: false }), 'EISDIR', 'copy of a directory')
      await rejects(t, f.fs.copy(ctx(), '/none', '/e', { overwrite: false }), 'ENOENT', 'copy of nothing')
      await rejects(t, f.fs.copy(ctx(), '/src', '/no/e', { overwrite: false }), 'ENOENT', 'copy into a missing folder')
      t.same((await f.names()), ['a', 'd', 'dst', 'src'], 'no temporary file left')
    })

    await t.test('hostile names through every step', async (t) => {
      const f = await make(t)
      await f.mkdir('moved')
      const kept: string[] = []
      const moved: string[] = []
      for (const n of HOSTILE_NAMES) {
        const p = `/${n}`
        const skip = f.skipNames.find((s) => s.names.includes(n) && s.step === undefined)
        const noRename = f.skipNames.find((s) => s.names.includes(n) && s.step === 'rename')
        if (skip) {
          t.pass(`name ${JSON.stringify(n.slice(0, 20))}`, { skip: skip.reason })
          continue
        }
        const refused = [...f.refusedNameChars].find((c) => n.includes(c))
        if (refused !== undefined) {
          // The documented refusal of a name the storage cannot hold: EINVAL, nothing made.
          await rejects(t, f.fs.open(ctx(), p, PUT), 'EINVAL', `open of ${JSON.stringify(n)} (${JSON.stringify(refused)} cannot be stored)`)
          await rejects(t, f.fs.mkdir(ctx(), p), 'EINVAL', `mkdir of ${JSON.stringify(n)}`)
          continue
        }
        const h = await f.fs.open(ctx(), p, PUT)
        await h.write(0, Buffer.from(n))
        await h.close()
        t.equal((await f.read(n)).toString('utf8'), n, `written: ${n.slice(0, 20)}`)
        const r = await f.fs.open(ctx(), p, R)
        t.equal(Buffer.from(await r.read(0, 1000)).toString(), n, 'read back')
        await r.close()
        if (noRename) {
          t.pass(`rename of ${JSON.stringify(n.slice(0, 20))}`, { skip: noRename.reason })
          await f.fs.unlink(ctx(), p)
        } else {
          await f.fs.rename(ctx(), p, `/moved${p}`, { overwrite: false })
          moved.push(n)
        }
        await f.fs.mkdir(ctx(), p)
        kept.push(n)
      }
      const sorted = (a: string[]) => a.sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
      t.same((await f.fs.list(ctx(), '/')).entries.map((e) => e.name), sorted(['moved', ...kept]), 'directories listed by their names')
      t.same((await f.fs.list(ctx(), '/moved')).entries.map((e) => e.name), sorted([...moved]), 'files listed by their names')
    })

    await t.test('paths that are not canonical are EINVAL, and reach nothing', async (t) => {
      const f = await make(t)
      await f.put('a', 'A')
      // (A backslash is a character of a name: `/a\b` is canonical; `\a` is relative.)
      for (const bad of ['a', '/../a', '/a/', '/./a', '//a', '\\a', '/x\u0000y', '']) {
        await rejects(t, f.fs.stat(ctx(), bad), 'EINVAL', `stat ${JSON.stringify(bad)}`)
        await rejects(t, f.fs.open(ctx(), bad, PUT), 'EINVAL', `open ${JSON.stringify(bad)}`)
      }
      await rejects(t, f.fs.rename(ctx(), '/a', '/../b', { overwrite: true }), 'EINVAL', 'rename to a climbing path')
      t.same((await f.names()), ['a'])
    })

    await t.test('closing the view aborts its open handles: nothing committed', async (t) => {
      const f = await make(t)
      await f.put('a', 'old')
      const h = await f.fs.open(ctx(), '/a', PUT)
      await writeLikeSftp(h, randomBytes(3 * MiB))
      const r = await f.fs.open(ctx(), '/a', R)
      await r.read(0, 1)
      t.equal(f.fs.stats.openHandles, 2)
      f.fs.close()
      t.equal(f.fs.stats.openHandles, 0, 'every handle ended')
      await rejects(t, h.close(), 'ECANCELED', 'close of an aborted handle')
      await rejects(t, r.read(0, 1), 'ECANCELED', 'read on an aborted handle')
      await rejects(t, f.fs.stat(ctx(), '/a'), 'ECANCELED', 'a closed view')
      await waitFor(async () => (await f.names()).length === 1 && f.transfers() === 0)
      t.equal((await f.read('a')).toString('utf8'), 'old', 'old content kept')
    })

    await t.test('read-only view: EACCES on every write, nothing changed', async (t) => {
      const f = await make(t)
      await f.put('a', 'A')
      await f.mkdir('d')
      const ro = f.readOnly
      t.same(ro.permissions, READ_ONLY)
      await rejects(t, ro.mkdir(ctx(), '/n'), 'EACCES', 'mkdir')
      await rejects(t, ro.rmdir(ctx(), '/d'), 'EACCES', 'rmdir')
      await rejects(t, ro.unlink(ctx(), '/a'), 'EACCES', 'unlink')
      await rejects(t, ro.rename(ctx(), '/a', '/b', { overwrite: true }), 'EACCES', 'rename')
      await rejects(t, ro.setTimes(ctx(), '/a', { mtimeMs: 0 }), 'EACCES', 'setTimes')
      await rejects(t, ro.setMode(ctx(), '/a', 0o600), 'EACCES', 'setMode')
      await rejects(t, ro.truncate(ctx(), '/a', 0), 'EACCES', 'truncate')
      await rejects(t, ro.copy(ctx(), '/a', '/c', { overwrite: false }), 'EACCES', 'copy')
      for (const fl of [PUT, flags({ write: true }), flags({ read: true, append: true }), flags({ read: true, create: true }), flags({ read: true, truncate: true })]) {
        await rejects(t, ro.open(ctx(), '/a', fl), 'EACCES', `open ${JSON.stringify(fl)}`)
      }
      const h = await ro.open(ctx(), '/a', R)
      t.equal(Buffer.from(await h.read(0, 10)).toString(), 'A', 'reads work')
      await h.close()
      t.same((await f.names()), ['a', 'd'])
      t.equal((await f.read('a')).toString('utf8'), 'A')
    })
  })
}

export async function waitFor(cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

export { writeFileSync }

/**
 * The fixture over one backend whose root is `backing` (a folder on this machine: `root`,
 * seeded as `own` says): a writable and a read-only view.
 */
export async function viewsOver(
  t: Test,
  o: {
    pool: WorkerPool
    spec: BackendSpec
    root?: string
    backing?: Backing
    staging: string
    inPlace: boolean
    own?: (abs: string) => void
    refusedNameChars?: string
    skipNames?: readonly NameSkip[]
  },
): Promise<Fixture> {
  const backing = o.backing ?? diskBacking(o.root!, o.own)
  // In place only where asked and the storage can write at an offset (its driver's `writeAt`).
  const can = await new Channel(o.pool, o.spec).call(ctx(), { op: 'abilities' })
  const fs = await openView({ pool: o.pool, spec: o.spec, permissions: FULL_ACCESS, stagingDir: o.staging, inPlace: o.inPlace })
  const readOnly = await openView({ pool: o.pool, spec: o.spec, permissions: READ_ONLY, stagingDir: o.staging })
  t.teardown(() => {
    fs.close()
    readOnly.close()
  })
  return {
    fs,
    readOnly,
    inPlace: o.inPlace && can.inPlaceWrites,
    refusedNameChars: o.refusedNameChars ?? '',
    skipNames: o.skipNames ?? [],
    transfers: () => o.pool.stats.transfers,
    staged: () => (existsSync(o.staging) ? readdirSync(o.staging) : []),
    read: (rel) => backing.read(rel),
    names: (rel) => backing.names(rel),
    put: (rel, data) => backing.put(rel, data),
    mkdir: (rel) => backing.mkdir(rel),
  }
}

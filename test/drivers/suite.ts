/**
 * @module test/drivers/suite
 * The driver conformance suite, after rclone's fstests: written once against the
 * `Driver` interface (core/driver.ts) and run against every backend, through the
 * worker pool (RemoteDriver) and through our own gateways. A per-driver test file
 * is a few lines:
 *
 * ```ts
 * runDriverSuite(t, { name: 'local', makeDriver: async (t) => createLocalDriver({ root: t.testdir() }) })
 * ```
 *
 * Rules the suite keeps so that it stays valid for every implementation:
 * - only the Driver interface is used: never a driver's internals, never the disk;
 * - errors are recognised by their `code` string, never by `instanceof` or message
 *   (class identity does not survive `postMessage`);
 * - every test gets a fresh driver from `makeDriver(t)` (so a fresh, empty root);
 * - every skip prints its reason: a missing optional method, or an entry of
 *   `opts.skip`. A skip entry naming no test fails the suite, so a typo cannot
 *   silently turn a test off.
 *
 * Groups run in dependency order (rclone's): the root, then writing, reading,
 * listing, names, directories, removal, renaming, mtimes and features.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import type { ByteRange, Driver, Entry, OpContext, WriteOptions } from '../../core/driver.js'
import { isFsErrorCode } from '../../core/errors.js'

// Options --------------------------------------------------------------------

export interface SuiteSkip {
  /** Printed with every test it skips. */
  readonly reason: string
  /** Test names (as printed) or group names. */
  readonly tests: readonly string[]
}

export interface SuiteOptions {
  readonly name: string
  /** A fresh driver over an empty root; `t` owns its lifetime (use `t.testdir()`). */
  readonly makeDriver: (t: Test) => Promise<Driver>
  readonly skip?: readonly SuiteSkip[]
  /**
   * The paged listing test: how many files it lists (default 1500, more than one page of
   * S3's 1000 keys) and, when the driver asks pages of a known size (S3's `list_chunk`), that
   * size: the listing must then come in at least as many pages as the files fill. A driver
   * whose server is slow to take many files (s3rver lists a whole folder for every upload's
   * parent check) pages through fewer files in smaller pages: the same continuation tokens.
   */
  readonly paging?: { readonly files: number; readonly pageSize: number }
}

type Case = (t: Test, d: Driver, o: SuiteOptions) => Promise<void>
interface Group {
  readonly name: string
  readonly cases: readonly (readonly [string, Case])[]
}

// Helpers --------------------------------------------------------------------

/** A fresh OpContext; pass a controller to abort it. */
export function ctx(ac: AbortController = new AbortController()): OpContext {
  return { signal: ac.signal, requestId: randomUUID() }
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const MiB = 1024 * 1024
/** Allowance for clock skew and coarse kernel timestamps when comparing an mtime with "now". */
const CLOCK_SLACK_MS = 2000
/** A fixed mtime with a millisecond part, to test that precision claims hold. */
const SOME_MTIME = Date.UTC(2021, 4, 6, 7, 8, 9, 678)

async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  yield* parts
}

function put(d: Driver, path: string, data: Uint8Array | string, opts?: WriteOptions): Promise<Entry> {
  return d.write(ctx(), path, chunks(typeof data === 'string' ? utf8(data) : data), opts)
}

/** Keeps the chunks as yielded (no copy), so a driver that reuses its buffers shows up as corrupt content. */
async function readAll(d: Driver, path: string, range?: ByteRange): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const c of d.read(ctx(), path, range)) parts.push(c)
  return Buffer.concat(parts)
}

async function readText(d: Driver, path: string): Promise<string> {
  return (await readAll(d, path)).toString('utf8')
}

async function listAll(d: Driver, dir: string): Promise<Entry[]> {
  const out: Entry[] = []
  for await (const page of d.list(ctx(), dir)) out.push(...page)
  return out
}

async function listNames(d: Driver, dir: string): Promise<string[]> {
  return (await listAll(d, dir)).map((e) => e.name).sort()
}

/** Runs `fn` over `items` with at most `n` in flight. */
async function inParallel<T>(n: number, items: readonly T[], fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker))
}

/** Random bytes cut into chunks of uneven sizes, some views into a larger buffer, some owning theirs. */
function unevenChunks(total: number): { data: Buffer; parts: Uint8Array[] } {
  const data = randomBytes(total)
  const sizes = [1, 65536, MiB, 12345, 3, 2 * MiB, 777]
  const parts: Uint8Array[] = []
  for (let off = 0, i = 0; off < total; i++) {
    const n = Math.min(sizes[i % sizes.length]!, total - off)
    parts.push(i % 2 === 0 ? new Uint8Array(data.buffer, data.byteOffset + off, n) : Uint8Array.from(data.subarray(off, off + n)))
    off += n
  }
  return { data, parts }
}

/** An mtime matches `want` within the driver's precision; null only when the driver keeps none. */
function mtimeOk(d: Driver, got: number | null, want: number): boolean {
  const p = d.features.mtimePrecisionMs
  if (p === null) return got === null || Number.isFinite(got)
  return got !== null && Math.abs(got - want) <= p
}

function checkMtime(t: Test, d: Driver, got: number | null, want: number, what: string): void {
  t.ok(mtimeOk(d, got, want), `${what}: mtime ${got} matches ${want} (precision ${d.features.mtimePrecisionMs} ms)`)
}

/** An mtime lies between two clock readings, give or take precision and clock slack. */
function checkRecent(t: Test, d: Driver, got: number | null, before: number, after: number, what: string): void {
  const p = d.features.mtimePrecisionMs
  if (p === null) {
    t.ok(got === null || Number.isFinite(got), `${what}: mtime is null or a number`)
    return
  }
  const slack = p + CLOCK_SLACK_MS
  t.ok(got !== null && got >= before - slack && got <= after + slack, `${what}: mtime ${got} is about now (${before}..${after})`)
}

/** `t.match` on arrays ignores extra items; a listing must have exactly these. */
function matchOnly(t: Test, got: readonly Entry[], want: readonly Partial<Entry>[], what: string): void {
  t.equal(got.length, want.length, `${what}: ${want.length} entries`)
  t.match(got, want, what)
}

function checkFile(t: Test, e: Entry, path: string, size: number): void {
  t.match(e, { path, name: path.slice(path.lastIndexOf('/') + 1), kind: 'file', size }, `entry of ${path}`)
}

/** A body that yields `first`, then runs `then` (which throws, or aborts and returns). */
async function* brokenBody(first: Uint8Array[], then: () => void): AsyncIterable<Uint8Array> {
  yield* first
  then()
  yield utf8('after the break')
}

/** rclone's FsPutError check: a failed write leaves the old content (or nothing) and no debris. */
async function checkFailedWrite(t: Test, d: Driver, write: (path: string) => Promise<Entry>, code?: string): Promise<void> {
  await put(d, '/f', 'old content')
  for (const path of ['/f', '/new']) {
    const err = await write(path).then(
      () => null,
      (e: unknown) => e as { code?: unknown },
    )
    t.ok(err !== null, `write ${path} rejects`)
    t.ok(isFsErrorCode(err?.code), `write ${path} rejects with a vocabulary code (got ${String(err?.code)})`)
    if (code !== undefined) t.equal(err?.code, code, `write ${path} rejects with ${code}`)
  }
  t.equal(await readText(d, '/f'), 'old content', 'the old file is intact')
  await t.rejects(d.stat(ctx(), '/new'), { code: 'ENOENT' }, 'no new file')
  t.same(await listNames(d, '/'), ['f'], 'no temporary debris in the listing')
}

// Groups ---------------------------------------------------------------------

const rootGroup: Group = {
  name: 'root',
  cases: [
    ['stat root is a dir', async (t, d) => {
      t.match(await d.stat(ctx(), '/'), { path: '/', name: '', kind: 'dir' })
    }],
    ['list empty root', async (t, d) => {
      t.same(await listAll(d, '/'), [])
    }],
    ['stat missing → ENOENT', async (t, d) => {
      await t.rejects(d.stat(ctx(), '/missing'), { code: 'ENOENT' })
      await t.rejects(d.stat(ctx(), '/missing/deeper'), { code: 'ENOENT' })
    }],
  ],
}

const writeGroup: Group = {
  name: 'write',
  cases: [
    ['write small', async (t, d) => {
      const before = Date.now()
      const e = await put(d, '/small.txt', 'hello, world')
      const after = Date.now()
      checkFile(t, e, '/small.txt', 12)
      checkRecent(t, d, e.mtimeMs, before, after, 'returned entry')
      const st = await d.stat(ctx(), '/small.txt')
      checkFile(t, st, '/small.txt', 12)
      // What gateways key records by (the S3 gateway's ETags): the answer is the file as stored.
      t.equal(e.mtimeMs, st.mtimeMs, 'the returned time is the one a stat gives')
      t.equal(await readText(d, '/small.txt'), 'hello, world')
      t.same(await listNames(d, '/'), ['small.txt'])
    }],
    ['write zero-length', async (t, d) => {
      checkFile(t, await d.write(ctx(), '/empty', chunks(), { size: 0 }), '/empty', 0)
      checkFile(t, await d.stat(ctx(), '/empty'), '/empty', 0)
      t.equal((await readAll(d, '/empty')).length, 0)
    }],
    ['write multi-chunk', async (t, d) => {
      const total = 5 * MiB + 7
      const { data, parts } = unevenChunks(total)
      // Hash first: a driver that transfers a view's whole buffer would detach `data`.
      const want = sha256(data)
      t.ok(parts.length > 5, `${parts.length} chunks`)
      checkFile(t, await d.write(ctx(), '/big.bin', chunks(...parts), { size: total }), '/big.bin', total)
      const got = await readAll(d, '/big.bin')
      t.equal(got.length, total)
      t.equal(sha256(got), want, 'sha256 matches')
    }],
    ['write slow async-iterable body', async (t, d) => {
      const slow = async function* (): AsyncIterable<Uint8Array> {
        for (let i = 0; i < 8; i++) {
          await sleep(10)
          yield utf8(`chunk ${i};`)
        }
      }
      const want = Array.from({ length: 8 }, (_, i) => `chunk ${i};`).join('')
      checkFile(t, await d.write(ctx(), '/slow', slow()), '/slow', want.length)
      t.equal(await readText(d, '/slow'), want)
    }],
    ['write overwrite replaces', async (t, d) => {
      await put(d, '/f', 'a much longer first version')
      checkFile(t, await put(d, '/f', 'short'), '/f', 5)
      t.equal(await readText(d, '/f'), 'short', 'no tail of the old content')
      t.same(await listNames(d, '/'), ['f'])
    }],
    ['write overwrite:false on existing → EEXIST', async (t, d) => {
      await put(d, '/f', 'old', { overwrite: false })
      await t.rejects(put(d, '/f', 'new', { overwrite: false }), { code: 'EEXIST' })
      t.equal(await readText(d, '/f'), 'old', 'old content kept')
      t.same(await listNames(d, '/'), ['f'], 'no temporary debris')
    }],
    ['write into missing parent → ENOENT', async (t, d) => {
      await t.rejects(put(d, '/missing/f', 'x'), { code: 'ENOENT' })
      t.same(await listNames(d, '/'), [], 'nothing created')
    }],
    ['write onto a directory → EISDIR', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await put(d, '/d/inside', 'x')
      await t.rejects(put(d, '/d', 'x'), { code: 'EISDIR' })
      t.match(await d.stat(ctx(), '/d'), { kind: 'dir' }, 'still a directory')
      t.same(await listNames(d, '/d'), ['inside'])
    }],
    ['write whose body throws leaves the old file', async (t, d) => {
      const boom = (): never => {
        throw new Error('body failed on purpose')
      }
      await checkFailedWrite(t, d, (path) => d.write(ctx(), path, brokenBody([utf8('new '), utf8('bytes')], boom)))
    }],
    ['write aborted through ctx.signal leaves the old file', async (t, d) => {
      const write = (path: string): Promise<Entry> => {
        const ac = new AbortController()
        return d.write(ctx(ac), path, brokenBody([utf8('new '), utf8('bytes')], () => ac.abort()))
      }
      await checkFailedWrite(t, d, write, 'ECANCELED')
    }],
    ['write with mtimeMs keeps it', async (t, d) => {
      const e = await put(d, '/f', 'x', { mtimeMs: SOME_MTIME })
      checkMtime(t, d, e.mtimeMs, SOME_MTIME, 'returned entry')
      checkMtime(t, d, (await d.stat(ctx(), '/f')).mtimeMs, SOME_MTIME, 'stat')
    }],
  ],
}

const TEXT = '0123456789abcdefghijklmnopqrstuvwxyz' // 36 bytes

const readGroup: Group = {
  name: 'read',
  cases: [
    ['read whole', async (t, d) => {
      await put(d, '/f', TEXT)
      t.equal(await readText(d, '/f'), TEXT)
    }],
    ['read range {start,end} inclusive', async (t, d) => {
      await put(d, '/f', TEXT)
      t.equal((await readAll(d, '/f', { start: 2, end: 5 })).toString(), '2345')
      t.equal((await readAll(d, '/f', { start: 0, end: 0 })).toString(), '0')
      t.equal((await readAll(d, '/f', { start: 35, end: 35 })).toString(), 'z')
    }],
    ['read range open-ended', async (t, d) => {
      await put(d, '/f', TEXT)
      t.equal((await readAll(d, '/f', { start: 30 })).toString(), 'uvwxyz')
      t.equal((await readAll(d, '/f', { start: 0 })).toString(), TEXT)
    }],
    ['read range past EOF gives what exists', async (t, d) => {
      await put(d, '/f', TEXT)
      t.equal((await readAll(d, '/f', { start: 30, end: 1000 })).toString(), 'uvwxyz')
    }],
    ['read range across chunks', async (t, d) => {
      const { data, parts } = unevenChunks(3 * MiB + 5)
      const want = sha256(data.subarray(MiB - 10, 2 * MiB + 11))
      await d.write(ctx(), '/big', chunks(...parts))
      t.equal(sha256(await readAll(d, '/big', { start: MiB - 10, end: 2 * MiB + 10 })), want)
    }],
    ['read missing → ENOENT', async (t, d) => {
      await t.rejects(readAll(d, '/missing'), { code: 'ENOENT' })
    }],
    ['read of a dir → EISDIR', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await put(d, '/d/f', 'x')
      await t.rejects(readAll(d, '/d'), { code: 'EISDIR' })
    }],
    ['read stopped early, later operations work', async (t, d) => {
      const { data, parts } = unevenChunks(3 * MiB)
      const want = sha256(data)
      await d.write(ctx(), '/big', chunks(...parts))
      // More rounds than any sane session pool has sessions: a read that leaks its
      // session on return() makes a later round (or the operations after) hang.
      for (let i = 0; i < 20; i++) {
        const it = d.read(ctx(), '/big')[Symbol.asyncIterator]()
        const first = await it.next()
        if (first.done === true || first.value.length === 0) t.fail('the first chunk has bytes')
        await it.return?.()
      }
      t.equal(sha256(await readAll(d, '/big')), want, 'a whole read still works')
      await put(d, '/big', 'replaced')
      t.equal(await readText(d, '/big'), 'replaced', 'overwrite works')
      await d.remove(ctx(), '/big')
      t.same(await listNames(d, '/'), [], 'remove works')
    }],
    ['read aborted through ctx.signal → ECANCELED', async (t, d) => {
      await d.write(ctx(), '/big', chunks(...unevenChunks(8 * MiB).parts))
      const ac = new AbortController()
      const it = d.read(ctx(ac), '/big')[Symbol.asyncIterator]()
      await it.next()
      ac.abort()
      const drain = async (): Promise<void> => {
        while (!(await it.next()).done) {
          // A driver may hand over what it already holds before it notices.
        }
      }
      await t.rejects(drain(), { code: 'ECANCELED' })
    }],
  ],
}

const MANY = 1500

const listGroup: Group = {
  name: 'list',
  cases: [
    ['list missing → ENOENT', async (t, d) => {
      await t.rejects(listAll(d, '/missing'), { code: 'ENOENT' })
    }],
    ['list a file → ENOTDIR', async (t, d) => {
      await put(d, '/f', 'x')
      await t.rejects(listAll(d, '/f'), { code: 'ENOTDIR' })
    }],
    ['list many entries (paged)', async (t, d, o) => {
      const many = o.paging?.files ?? MANY
      await d.mkdir(ctx(), '/many')
      const names = Array.from({ length: many }, (_, i) => `file-${String(i).padStart(4, '0')}`)
      const mtime = (i: number): number => SOME_MTIME + i * 1000
      await inParallel(16, names, (n) => {
        const i = Number(n.slice(5))
        return put(d, `/many/${n}`, 'x'.repeat(i % 10), { mtimeMs: mtime(i) })
      })
      for (let i = 0; i < 5; i++) await d.mkdir(ctx(), `/many/dir-${i}`)
      for (let i = 0; i < 5; i++) await put(d, `/many/dir-${i}/f`, 'x')
      const seen = new Map<string, Entry>()
      let pages = 0
      for await (const page of d.list(ctx(), '/many')) {
        pages++
        for (const e of page) {
          if (seen.has(e.name)) t.fail(`${e.name} listed twice`)
          seen.set(e.name, e)
        }
      }
      t.equal(seen.size, many + 5, `${many + 5} entries in ${pages} pages`)
      if (o.paging) t.ok(pages >= Math.ceil((many + 5) / o.paging.pageSize), `at least ${Math.ceil((many + 5) / o.paging.pageSize)} pages of ${o.paging.pageSize}`)
      let bad = 0
      for (const [i, n] of names.entries()) {
        const e = seen.get(n)
        const ok = e?.path === `/many/${n}` && e.kind === 'file' && e.size === i % 10 && mtimeOk(d, e.mtimeMs, mtime(i))
        if (!ok) bad++
        // One assertion per entry would drown the report; show the first few failures.
        if (!ok && bad <= 5) t.fail(`entry of ${n}`, { found: e ?? null, wanted: { size: i % 10, mtimeMs: mtime(i) } })
      }
      t.equal(bad, 0, 'every file has its path, kind, size and mtime')
      for (let i = 0; i < 5; i++) t.match(seen.get(`dir-${i}`), { path: `/many/dir-${i}`, kind: 'dir', size: 0 })
    }],
  ],
}

/** rclone's hostile names, and a few more that break URL-based or careless backends. */
export const HOSTILE_NAMES: readonly string[] = [
  'hello? sausage',
  'êé',
  'Hello, 世界',
  '" \' @ < > & ? + ≠',
  'two  spaces',
  ' leading space',
  'trailing space ',
  '.leading-dot',
  '..two-leading-dots',
  '100% #1 + a&b=c;d',
  'a'.repeat(255),
  '世'.repeat(85), // 255 bytes of UTF-8
  // A character of a name on Linux, SFTP servers and S3; a separator on SMB (refused there: refusedNameChars)
  'back\\slash.txt',
  '\\leading backslash',
]

/** Test label; ‹› rather than quotes so that the names can be written in a skip list as printed. */
function nameLabel(n: string): string {
  return n.length > 40 ? `name ‹${n.slice(0, 3)}…› (${Buffer.byteLength(n)} bytes)` : `name ‹${n}›`
}

/** One name through write/stat/list/read/remove, as a file and as a directory. */
const roundTrip = (name: string): Case => async (t, d) => {
  const p = `/${name}`
  checkFile(t, await put(d, p, name), p, utf8(name).length)
  checkFile(t, await d.stat(ctx(), p), p, utf8(name).length)
  matchOnly(t, await listAll(d, '/'), [{ path: p, name, kind: 'file' }], 'listed under its name')
  t.equal(await readText(d, p), name, 'read back')
  await d.remove(ctx(), p)
  await d.mkdir(ctx(), p)
  await put(d, `${p}/${name}`, 'inner')
  t.same(await listNames(d, p), [name], 'as a directory')
  t.equal(await readText(d, `${p}/${name}`), 'inner')
  await d.remove(ctx(), `${p}/${name}`)
  await d.remove(ctx(), p)
  t.same(await listAll(d, '/'), [], 'removed')
}

const namesGroup: Group = {
  name: 'names',
  cases: [
    ...HOSTILE_NAMES.map((n) => [nameLabel(n), roundTrip(n)] as const),
    ['a name with a character the storage cannot hold: EINVAL, nothing made', async (t, d) => {
      const refused = d.features.refusedNameChars
      t.equal(typeof refused, 'string', 'features.refusedNameChars says which (\'\' for none)')
      for (const c of refused ?? '') {
        const p = `/a${c}b`
        await t.rejects(put(d, p, 'x'), { code: 'EINVAL' }, `write of ${JSON.stringify(p)}`)
        await t.rejects(d.mkdir(ctx(), p), { code: 'EINVAL' }, `mkdir of ${JSON.stringify(p)}`)
        await t.rejects(d.stat(ctx(), p), { code: 'EINVAL' }, `stat of ${JSON.stringify(p)}`)
      }
      t.same(await listAll(d, '/'), [], 'nothing made, under any name')
    }],
    ['hostile nested path', async (t, d) => {
      // rclone's fstests path, one level at a time.
      const segs = ['hello? sausage', 'êé', 'Hello, 世界', '" \' @ < > & ? + ≠']
      const dirs = segs.map((_, i) => '/' + segs.slice(0, i + 1).join('/'))
      for (const dir of dirs) await d.mkdir(ctx(), dir)
      const file = `${dirs.at(-1)}/z.txt`
      checkFile(t, await put(d, file, 'deep'), file, 4)
      for (const [i, dir] of dirs.entries()) {
        const below = i + 1 < segs.length ? segs[i + 1]! : 'z.txt'
        t.same(await listNames(d, dir), [below], `listing of ${dir}`)
      }
      t.equal(await readText(d, file), 'deep')
      await d.remove(ctx(), file)
      for (const dir of dirs.reverse()) await d.remove(ctx(), dir)
      t.same(await listAll(d, '/'), [])
    }],
  ],
}

const mkdirGroup: Group = {
  name: 'mkdir',
  cases: [
    ['mkdir creates a dir', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await put(d, '/d/f', 'x')
      t.match(await d.stat(ctx(), '/d'), { path: '/d', name: 'd', kind: 'dir' })
      matchOnly(t, await listAll(d, '/'), [{ path: '/d', name: 'd', kind: 'dir' }], 'listed as a dir')
      t.same(await listNames(d, '/d'), ['f'])
    }],
    ['mkdir existing dir is fine', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await put(d, '/d/f', 'x')
      await d.mkdir(ctx(), '/d')
      t.same(await listNames(d, '/d'), ['f'], 'contents untouched')
    }],
    ['mkdir where a file is → EEXIST', async (t, d) => {
      await put(d, '/f', 'x')
      await t.rejects(d.mkdir(ctx(), '/f'), { code: 'EEXIST' })
      t.equal(await readText(d, '/f'), 'x', 'the file is untouched')
    }],
    ['mkdir with missing parent → ENOENT', async (t, d) => {
      await t.rejects(d.mkdir(ctx(), '/missing/d'), { code: 'ENOENT' })
      t.same(await listAll(d, '/'), [])
    }],
  ],
}

const removeGroup: Group = {
  name: 'remove',
  cases: [
    ['remove file', async (t, d) => {
      await put(d, '/f', 'x')
      await d.remove(ctx(), '/f')
      await t.rejects(d.stat(ctx(), '/f'), { code: 'ENOENT' })
      t.same(await listAll(d, '/'), [])
    }],
    ['remove empty dir', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await d.remove(ctx(), '/d')
      await t.rejects(d.stat(ctx(), '/d'), { code: 'ENOENT' })
      t.same(await listAll(d, '/'), [])
    }],
    ['remove non-empty dir → ENOTEMPTY', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await put(d, '/d/f', 'x')
      await t.rejects(d.remove(ctx(), '/d'), { code: 'ENOTEMPTY' })
      t.equal(await readText(d, '/d/f'), 'x', 'contents kept')
    }],
    ['remove missing → ENOENT', async (t, d) => {
      await t.rejects(d.remove(ctx(), '/missing'), { code: 'ENOENT' })
    }],
  ],
}

/** Wraps a case that needs an optional method: without it, the case is a skip with that reason. */
function needs(method: 'rename' | 'setMtime' | 'lstat' | 'setMode' | 'truncate' | 'copy' | 'writeAt', fn: Case): Case {
  return async (t, d, o) => {
    if (d[method] === undefined) {
      t.pass(`needs ${method}`, { skip: `driver has no ${method}` })
      return
    }
    await fn(t, d, o)
  }
}

const rename = (d: Driver, from: string, to: string, overwrite = false): Promise<void> =>
  d.rename!(ctx(), from, to, { overwrite })

const renameGroup: Group = {
  name: 'rename',
  cases: [
    ['rename file', needs('rename', async (t, d) => {
      await put(d, '/a', 'content')
      await rename(d, '/a', '/b')
      await t.rejects(d.stat(ctx(), '/a'), { code: 'ENOENT' })
      t.equal(await readText(d, '/b'), 'content')
      t.same(await listNames(d, '/'), ['b'])
    })],
    ['rename dir with contents', needs('rename', async (t, d) => {
      await d.mkdir(ctx(), '/d')
      await d.mkdir(ctx(), '/d/sub')
      await put(d, '/d/f', 'one')
      await put(d, '/d/sub/g', 'two')
      await rename(d, '/d', '/e')
      await t.rejects(d.stat(ctx(), '/d'), { code: 'ENOENT' })
      t.same(await listNames(d, '/e'), ['f', 'sub'])
      t.equal(await readText(d, '/e/f'), 'one')
      t.equal(await readText(d, '/e/sub/g'), 'two')
    })],
    ['rename onto existing without overwrite → EEXIST', needs('rename', async (t, d) => {
      await put(d, '/a', 'A')
      await put(d, '/b', 'B')
      await t.rejects(rename(d, '/a', '/b'), { code: 'EEXIST' })
      t.equal(await readText(d, '/a'), 'A', 'source kept')
      t.equal(await readText(d, '/b'), 'B', 'target kept')
    })],
    ['rename with overwrite replaces a file', needs('rename', async (t, d) => {
      await put(d, '/a', 'A')
      await put(d, '/b', 'a longer B')
      await rename(d, '/a', '/b', true)
      t.equal(await readText(d, '/b'), 'A')
      t.same(await listNames(d, '/'), ['b'])
    })],
    ['rename missing → ENOENT', needs('rename', async (t, d) => {
      await t.rejects(rename(d, '/missing', '/b'), { code: 'ENOENT' })
      t.same(await listAll(d, '/'), [])
    })],
  ],
}

const mtimeGroup: Group = {
  name: 'setMtime',
  cases: [
    ['setMtime sets the mtime', needs('setMtime', async (t, d) => {
      await put(d, '/f', 'x')
      await d.setMtime!(ctx(), '/f', SOME_MTIME)
      checkMtime(t, d, (await d.stat(ctx(), '/f')).mtimeMs, SOME_MTIME, 'stat')
      checkMtime(t, d, (await listAll(d, '/'))[0]?.mtimeMs ?? null, SOME_MTIME, 'list')
      t.equal(await readText(d, '/f'), 'x', 'content untouched')
    })],
    ['setMtime missing → ENOENT', needs('setMtime', async (t, d) => {
      await t.rejects(d.setMtime!(ctx(), '/missing', SOME_MTIME), { code: 'ENOENT' })
    })],
  ],
}

/** The optional methods the protocol gateways use (core/view.ts). */
const gatewayGroup: Group = {
  name: 'gateway methods',
  cases: [
    ['lstat of a file and of the root', needs('lstat', async (t, d) => {
      await put(d, '/f', 'abc')
      checkFile(t, await d.lstat!(ctx(), '/f'), '/f', 3)
      t.match(await d.lstat!(ctx(), '/'), { path: '/', kind: 'dir' })
      await t.rejects(d.lstat!(ctx(), '/missing'), { code: 'ENOENT' })
    })],
    ['modes: reported, and set by setMode', needs('setMode', async (t, d) => {
      await put(d, '/f', 'x')
      await d.setMode!(ctx(), '/f', 0o640)
      t.equal((await d.stat(ctx(), '/f')).mode, 0o640, 'stat')
      t.equal((await listAll(d, '/'))[0]?.mode, 0o640, 'list')
      await d.setMode!(ctx(), '/f', 0o100604) // the type bits are ignored
      t.equal((await d.stat(ctx(), '/f')).mode, 0o604)
      await d.setMode!(ctx(), '/f', 0o4755)
      t.equal(((await d.stat(ctx(), '/f')).mode ?? 0) & 0o777, 0o755, 'permission bits set with a set-user-ID request')
      await t.rejects(d.setMode!(ctx(), '/missing', 0o600), { code: 'ENOENT' })
    })],
    ['truncate cuts and extends with zeros', needs('truncate', async (t, d) => {
      await put(d, '/f', '0123456789')
      await d.truncate!(ctx(), '/f', 3)
      t.equal(await readText(d, '/f'), '012')
      await d.truncate!(ctx(), '/f', 5)
      t.same(await readAll(d, '/f'), Buffer.from([0x30, 0x31, 0x32, 0, 0]))
      t.equal((await d.stat(ctx(), '/f')).size, 5)
      await t.rejects(d.truncate!(ctx(), '/missing', 0), { code: 'ENOENT' })
    })],
    ['writeAt: in place, at offsets, holes as zeros', needs('writeAt', async (t, d) => {
      await put(d, '/f', '0123456789')
      await d.writeAt!(ctx(), '/f', 2, utf8('ab'))
      t.equal(await readText(d, '/f'), '01ab456789', 'inside')
      await d.writeAt!(ctx(), '/f', 10, utf8('XY'))
      t.equal(await readText(d, '/f'), '01ab456789XY', 'at the end')
      await d.writeAt!(ctx(), '/f', 14, utf8('!'))
      t.same(await readAll(d, '/f'), Buffer.from('01ab456789XY\0\0!'), 'past the end: a hole of zeros')
      await t.rejects(d.writeAt!(ctx(), '/missing', 0, utf8('x')), { code: 'ENOENT' }, 'never creates')
      await d.mkdir(ctx(), '/dir')
      await t.rejects(d.writeAt!(ctx(), '/dir', 0, utf8('x')), { code: 'EISDIR' })
      t.same(await listNames(d, '/'), ['dir', 'f'])
    })],
    ['copy: a file, overwrite or not, no temporary file left', needs('copy', async (t, d) => {
      const data = randomBytes(3 * MiB + 5)
      await put(d, '/src', Uint8Array.from(data)) // a copy: the pool may transfer (detach) what it sends
      checkFile(t, await d.copy!(ctx(), '/src', '/dst', { overwrite: false }), '/dst', data.byteLength)
      t.equal(sha256(await readAll(d, '/dst')), sha256(data), 'same bytes')
      await put(d, '/other', 'other')
      await t.rejects(d.copy!(ctx(), '/other', '/dst', { overwrite: false }), { code: 'EEXIST' })
      t.equal(sha256(await readAll(d, '/dst')), sha256(data), 'untouched without overwrite')
      await d.copy!(ctx(), '/other', '/dst', { overwrite: true })
      t.equal(await readText(d, '/dst'), 'other', 'replaced with overwrite')
      await t.rejects(d.copy!(ctx(), '/missing', '/x', { overwrite: false }), { code: 'ENOENT' })
      t.same(await listNames(d, '/'), ['dst', 'other', 'src'])
    })],
  ],
}

const featuresGroup: Group = {
  name: 'features',
  cases: [
    ['features are well-formed', async (t, d) => {
      const f = d.features
      for (const k of ['emptyDirs', 'atomicRename', 'rangeRead'] as const) t.type(f[k], 'boolean', k)
      const p = f.mtimePrecisionMs
      t.ok(p === null || (Number.isFinite(p) && p > 0), `mtimePrecisionMs is null or positive (${p})`)
      if (d.setMtime !== undefined) t.not(p, null, 'a driver with setMtime keeps mtimes')
    }],
    ['emptyDirs is honest', async (t, d) => {
      await d.mkdir(ctx(), '/empty')
      const listed = await listAll(d, '/')
      if (d.features.emptyDirs) matchOnly(t, listed, [{ path: '/empty', kind: 'dir' }], 'emptyDirs: the empty dir is listed')
      else t.same(listed, [], 'no emptyDirs: the empty dir is not listed')
    }],
  ],
}

const GROUPS: readonly Group[] = [
  rootGroup,
  writeGroup,
  readGroup,
  listGroup,
  namesGroup,
  mkdirGroup,
  removeGroup,
  renameGroup,
  mtimeGroup,
  gatewayGroup,
  featuresGroup,
]

// Runner ---------------------------------------------------------------------

/** Every group and test name, as printed: what a skip entry may name (so no test shares a group's name). */
export const SUITE_TESTS: readonly string[] = GROUPS.flatMap((g) => [g.name, ...g.cases.map(([n]) => n)])

/** Maps every skipped group or test name to its reason; fails on names that match nothing. */
function skipReasons(t: Test, skips: readonly SuiteSkip[]): Map<string, string> {
  const known = new Set(SUITE_TESTS)
  const reasons = new Map<string, string>()
  for (const s of skips) {
    if (s.reason.trim() === '') t.fail(`a skip entry for ${s.tests.join(', ')} has no reason`)
    for (const name of s.tests) {
      if (!known.has(name)) t.fail(`skip names no test: ${JSON.stringify(name)}`)
      reasons.set(name, s.reason)
    }
  }
  return reasons
}

const skipOpt = (reason: string | undefined): { skip?: string } => (reason === undefined ? {} : { skip: reason })

/** Runs the whole suite against the driver `opts.makeDriver` builds; one tap subtest per group. */
export function runDriverSuite(t: Test, opts: SuiteOptions): Promise<void> {
  return t.test(`driver suite: ${opts.name}`, async (t) => {
    const reasons = skipReasons(t, opts.skip ?? [])
    for (const group of GROUPS) {
      await t.test(group.name, skipOpt(reasons.get(group.name)), async (t) => {
        for (const [name, fn] of group.cases) {
          await t.test(name, skipOpt(reasons.get(name)), async (t) => {
            const d = await opts.makeDriver(t)
            t.teardown(() => d.close())
            await fn(t, d, opts)
          })
        }
      })
    }
  }).then(() => undefined)
}

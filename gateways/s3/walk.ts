/**
 * @module gateways/s3/walk
 * A bucket's keys in S3's order (UTF-8 bytes), walked lazily from its directory tree:
 * the work a listing page costs is bounded by what it returns, not by the bucket.
 *
 * - A file is the key of its path below the bucket; an empty folder is a folder marker,
 *   the key of its path plus `/` (a folder with content appears only through it).
 * - A folder `d` holds the keys `d/...`, which sort after names like `d-x` or `d.txt`
 *   (`-` and `.` come before `/`): folders wait in a small sorted queue until the
 *   directory listing (pages in name order) has passed their `d/`.
 * - Only what can hold keys after `after` and under `prefix` is listed: folders whose
 *   keys all come before `after` are skipped unopened, and a listing that resumes
 *   opens only the folders on the way to its key.
 * - With a delimiter, a folder whose keys all roll up into one common prefix is not
 *   opened: it holds at least one key (its content, or its marker).
 */
import { isTempUploadName } from '../../core/paths.js'
import type { FsEntry, RequestContext, View } from '../../core/view.js'
import { compareKeys } from './keys.js'

export type Found =
  | { readonly kind: 'object'; readonly key: string; readonly path: string; readonly entry: FsEntry; readonly folder: boolean }
  | { readonly kind: 'prefix'; readonly key: string }

export interface WalkOptions {
  readonly prefix: string
  /** null: no roll-up. */
  readonly delimiter: string | null
  /** Only keys after this one ('' = from the start). */
  readonly after: string
  /** `after` is a common prefix already returned: every key under it is skipped too. */
  readonly afterIsPrefix: boolean
}

const PAGE = 1000

/** Folder path (canonical) + the key prefix of its content (`''` for the bucket itself, else ending in `/`). */
interface Dir {
  readonly path: string
  readonly keyBase: string
  /** As its parent's listing gave it (absent for the folder a walk starts in). */
  readonly entry?: FsEntry
}

/**
 * Every key of the bucket at `bucketPath` (a directory) matching `opts`, in order,
 * with consecutive common prefixes merged.
 */
export async function* walkKeys(fs: View, ctx: RequestContext, bucketPath: string, opts: WalkOptions): AsyncGenerator<Found> {
  // Start in the deepest folder the prefix names: `a/b/c` is listed from `a/b/`.
  const cut = opts.prefix.lastIndexOf('/') + 1
  const base = opts.prefix.slice(0, cut)
  const segs = base === '' ? [] : base.slice(0, -1).split('/')
  if (segs.some((s) => s === '' || s === '.' || s === '..' || isTempUploadName(s))) return // no key can be stored there (core/paths.ts `s3KeyPath`)
  const start: Dir = { path: segs.length === 0 ? bucketPath : `${bucketPath}/${segs.join('/')}`, keyBase: base }
  let last: string | null = null
  for await (const f of walkDir(fs, ctx, start, opts, true)) {
    if (f.kind === 'prefix') {
      if (f.key === last) continue
      last = f.key
    }
    yield f
  }
}

/** The common prefix `key` rolls up into, or null. */
function rollUp(key: string, opts: WalkOptions): string | null {
  if (opts.delimiter === null || opts.delimiter === '') return null
  const i = key.indexOf(opts.delimiter, opts.prefix.length)
  return i < 0 ? null : key.slice(0, i + opts.delimiter.length)
}

/** Whether a key (of a file or a folder marker) is listed. */
function wanted(key: string, opts: WalkOptions): boolean {
  if (!key.startsWith(opts.prefix)) return false
  if (opts.after !== '') {
    if (compareKeys(key, opts.after) <= 0) return false
    if (opts.afterIsPrefix && key.startsWith(opts.after)) return false
  }
  return true
}

/** What to do with a folder whose keys all start with `dirKey` (ends with `/`). */
function folderPlan(dirKey: string, opts: WalkOptions): 'skip' | 'open' | { prefix: string } {
  if (!(dirKey.startsWith(opts.prefix) || opts.prefix.startsWith(dirKey))) return 'skip'
  const resumesInside = opts.after !== '' && opts.after.startsWith(dirKey)
  if (opts.after !== '' && !resumesInside) {
    // Every key of the folder is on one side of `after`.
    if (compareKeys(dirKey, opts.after) < 0) return 'skip'
    if (opts.afterIsPrefix && dirKey.startsWith(opts.after)) return 'skip'
  }
  if (!resumesInside && dirKey.startsWith(opts.prefix)) {
    const cp = rollUp(dirKey, opts)
    if (cp !== null) return { prefix: cp }
  }
  return 'open'
}

/**
 * Where a listing that resumes after `after` can start in `dir`: after a name below which
 * every entry holds only keys up to `after`, or null (from the start). A folder `d` holds
 * the keys `d/...`, which come after `after` when `after` continues `d` with a character
 * below `/` (`d-x`, `d.txt`) or ends there: so the cut is before the first such character
 * of the name `after` continues with, and before its last character.
 */
export function resumeName(dir: Dir, after: string): string | null {
  if (after === '' || !after.startsWith(dir.keyBase)) return null
  const rest = after.slice(dir.keyBase.length)
  const seg = rest.split('/', 1)[0]!
  let i = 0
  while (i < seg.length && seg.charCodeAt(i) >= 0x2f) i++
  return i <= 1 ? null : seg.slice(0, i - 1)
}

async function* walkDir(fs: View, ctx: RequestContext, dir: Dir, opts: WalkOptions, top: boolean): AsyncGenerator<Found> {
  let page: { entries: readonly FsEntry[]; cursor: string | null }
  // Resuming inside this folder: its listing starts near the key (from the view's snapshot of it, when fresh).
  const from = resumeName(dir, opts.after)
  try {
    page = await fs.list(ctx, dir.path, { limit: PAGE, ...(from === null ? {} : { after: from }) })
  } catch (err) {
    // The folder a prefix names may not exist (or be a file): nothing is under it.
    if (top && ['ENOENT', 'ENOTDIR'].includes((err as { code?: string }).code ?? '')) return
    throw err
  }
  if (from === null && page.entries.length === 0 && page.cursor === null) {
    // An empty folder is its marker (the bucket itself is none).
    if (dir.keyBase !== '') {
      const entry = dir.entry ?? (await fs.stat(ctx, dir.path))
      yield* emitObject({ kind: 'object', key: dir.keyBase, path: dir.path, entry, folder: true }, opts)
    }
    return
  }
  /** Folders met but not yet due, by their key (`name/`), in order. */
  const waiting: { key: string; entry: FsEntry }[] = []
  const dueBefore = function* (name: string | null) {
    while (waiting.length > 0 && (name === null || compareKeys(waiting[0]!.key, name) < 0)) yield waiting.shift()!
  }
  for (;;) {
    for (const entry of page.entries) {
      for (const w of dueBefore(dir.keyBase + entry.name)) yield* folder(w)
      if (entry.kind === 'dir') {
        const key = `${dir.keyBase}${entry.name}/`
        let i = waiting.length
        while (i > 0 && compareKeys(waiting[i - 1]!.key, key) > 0) i--
        waiting.splice(i, 0, { key, entry })
      } else {
        yield* emitObject({ kind: 'object', key: dir.keyBase + entry.name, path: childPath(dir.path, entry.name), entry, folder: false }, opts)
      }
    }
    if (page.cursor === null) break
    page = await fs.list(ctx, dir.path, { limit: PAGE, cursor: page.cursor })
  }
  for (const w of dueBefore(null)) yield* folder(w)

  async function* folder({ key, entry }: { key: string; entry: FsEntry }): AsyncGenerator<Found> {
    const plan = folderPlan(key, opts)
    if (plan === 'skip') return
    if (plan === 'open') yield* walkDir(fs, ctx, { path: childPath(dir.path, entry.name), keyBase: key, entry }, opts, false)
    else yield { kind: 'prefix', key: plan.prefix }
  }
}

function* emitObject(f: Found & { kind: 'object' }, opts: WalkOptions): Generator<Found> {
  if (!wanted(f.key, opts)) return
  const cp = rollUp(f.key, opts)
  yield cp === null ? f : { kind: 'prefix', key: cp }
}

const childPath = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`)

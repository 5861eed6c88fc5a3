/**
 * @module workers/drivers/local/temp-sweep
 * The hidden files of uploads (`.filegate-<id>.part`, workers/drivers/upload-names.ts)
 * that a whole-process crash left in a local folder: nothing else would ever remove them
 * (the pool removes those of a thread that died, workers/pool.ts, but not those of a
 * process). A folder is swept when its driver is first made in a worker thread (the
 * first use after a start) and again on use once `everyMs` have passed since, walking
 * it without following links.
 *
 * A file is removed only when nobody can still be writing it: its last change is older
 * than `maxAgeMs` (a live upload touches its file at least every HEARTBEAT_MS, written
 * to or not, so it never gets that old: this holds for uploads of other threads and
 * other processes too), and it is not one this thread is writing now.
 */
import type { Dirent } from 'node:fs'
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'
import { isTempUploadName } from '../upload-names.js'

export interface TempSweepOptions {
  /** A hidden upload file unchanged for this long is debris. */
  readonly maxAgeMs: number
  /** A folder in use is swept again this long after its last sweep. */
  readonly everyMs: number
}

export const TEMP_SWEEP_DEFAULTS: TempSweepOptions = { maxAgeMs: 3_600_000, everyMs: 3_600_000 }

/** How often a live upload touches its hidden file (far below `maxAgeMs`). */
export const HEARTBEAT_MS = 5 * 60_000

/** The hidden files being written by this thread (absolute paths). */
const live = new Set<string>()
/** Per real root: when its last sweep began in this thread, and the sweep running now. */
const swept = new Map<string, { at: number; running: Promise<number> | null }>()

/**
 * Marks `abs` as being written until the returned function is called, and touches it
 * every HEARTBEAT_MS meanwhile (so no sweep, of any thread or process, takes it for debris).
 */
export function liveUpload(abs: string, touch: () => Promise<void>): () => void {
  live.add(abs)
  const beat = setInterval(() => void touch().catch(() => {}), HEARTBEAT_MS)
  beat.unref()
  return () => {
    clearInterval(beat)
    live.delete(abs)
  }
}

/**
 * Sweeps `realRoot` in the background when this thread has not for `everyMs` (or never).
 * @returns the sweep running, if one was started or runs already (for tests), else null
 */
export function sweepIfDue(realRoot: string, opts: TempSweepOptions, onError: (err: unknown) => void = () => {}): Promise<number> | null {
  const s = swept.get(realRoot)
  if (s?.running) return s.running
  if (s && Date.now() - s.at < opts.everyMs) return null
  const entry: { at: number; running: Promise<number> | null } = { at: Date.now(), running: null }
  entry.running = sweepTempUploads(realRoot, opts.maxAgeMs)
    .catch((err: unknown) => {
      onError(err)
      return 0
    })
    .finally(() => {
      entry.running = null
    })
  swept.set(realRoot, entry)
  return entry.running
}

/**
 * Removes the hidden upload files under `realRoot` older than `maxAgeMs` that this thread
 * is not writing; links are never followed (a linked folder is another folder's business).
 * @returns how many were removed
 */
export async function sweepTempUploads(realRoot: string, maxAgeMs: number): Promise<number> {
  let removed = 0
  const folders = [realRoot]
  while (folders.length > 0) {
    const dir = folders.pop()!
    let entries: Dirent[]
    try {
      entries = await fs.readdir(dir, { withFileTypes: true })
    } catch {
      continue // removed or not readable meanwhile
    }
    for (const e of entries) {
      const abs = nodePath.join(dir, e.name)
      if (e.isDirectory()) folders.push(abs)
      else if (e.isFile() && isTempUploadName(e.name) && !live.has(abs)) {
        const st = await fs.lstat(abs).catch(() => null)
        if (st === null || Date.now() - st.mtimeMs < maxAgeMs || live.has(abs)) continue
        await fs.unlink(abs).then(
          () => removed++,
          () => {},
        )
      }
    }
  }
  return removed
}

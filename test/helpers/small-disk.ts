/**
 * A small filesystem of its own (a tmpfs of a few MiB, mounted for the test, unmounted at
 * teardown) to fill up: for the tests of what filegate does when its storage, or its data
 * folder, has no space left. Mounting needs root, as the whole suite does.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

export interface SmallDisk {
  /** Where it is mounted. */
  readonly dir: string
  /** Bytes free on it now. */
  free(): number
  /** Writes a filler file so that about `leave` bytes stay free; returns its path (remove it to free the space). */
  fill(leave?: number): string
}

export function smallDisk(t: Test, sizeMiB = 8): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'filegate-small-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0755`, 'tmpfs', dir])
  // Lazy: a server of the test may still hold a file open when this runs.
  t.teardown(() => {
    execFileSync('umount', ['-l', dir])
    rmSync(dir, { recursive: true, force: true })
  })
  const free = () => {
    const s = statfsSync(dir)
    return s.bavail * s.bsize
  }
  let fillers = 0
  return {
    dir,
    free,
    fill(leave = 0) {
      const path = join(dir, `filler-${fillers++}`)
      writeFileSync(path, Buffer.alloc(Math.max(0, free() - leave)))
      return path
    },
  }
}

/** Paths under `dir` (relative) whose name is an upload's temporary file, `.filegate-<id>.part`. */
export function tempUploads(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) => /(^|\/)\.filegate-[^/]*\.part$/.test(p))
}

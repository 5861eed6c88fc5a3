/**
 * @module bench/lib/files
 * The benchmarks' inputs, generated once into a cache folder (BENCH_CACHE_DIR,
 * default <tmpdir>/filegate-bench-cache) and reused: a big file of random bytes, a
 * ~1 GiB folder of mixed files, a folder of many small files, a 50-entry folder and
 * a 4 KiB file. A folder counts as complete only once its marker file exists, so an
 * interrupted generation is redone. Servers get the inputs as hard links (no copy).
 */
import { randomFillSync } from 'node:crypto'
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmSync, statSync, writeFileSync, writeSync, copyFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { MiB, env } from './env.js'
import { progress } from './report.js'

function cacheDir(): string {
  // World-readable: nginx's workers (user nobody when started as root) serve from here.
  mkdirSync(env.cacheDir, { recursive: true, mode: 0o755 })
  return env.cacheDir
}

/** Writes `size` random bytes to `path`. */
function randomFile(path: string, size: number, block: Buffer): void {
  const fd = openSync(path, 'w', 0o644)
  try {
    let left = size
    while (left > 0) {
      const n = Math.min(left, block.length)
      randomFillSync(block, 0, n)
      writeSync(fd, block, 0, n)
      left -= n
    }
  } finally {
    closeSync(fd)
  }
}

/** A file of `mb` MiB of random bytes (incompressible, like media). */
export function bigFile(mb = env.sizeMb): string {
  const path = join(cacheDir(), `big-${mb}m.bin`)
  if (existsSync(path) && statSync(path).size === mb * MiB) return path
  progress(`generating ${mb} MiB of random bytes into ${path} (once; reused by later runs)`)
  const tmp = `${path}.part`
  randomFile(tmp, mb * MiB, Buffer.allocUnsafe(16 * MiB))
  renameSync(tmp, path)
  return path
}

/** Deterministic pseudo-random numbers (mulberry32), so generated trees are the same on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = 'the of and to in is was for on are with as by at from file folder storage server upload download archive zip bytes request session token worker thread stream chunk credit backend driver local remote list read write move remove create update delete time size name path error status ok lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua 0 1 2 3 4 5 6 7 8 9 10 42 100 2024 2025'.split(' ')

/** 1 MiB of text (words, numbers, line breaks): compresses about 3-4x, like logs or documents. */
function textBlock(): Buffer {
  const rnd = prng(7)
  const parts: string[] = []
  let len = 0
  while (len < MiB) {
    const line = Array.from({ length: 4 + Math.floor(rnd() * 12) }, () => WORDS[Math.floor(rnd() * WORDS.length)]!).join(' ') + '\n'
    parts.push(line)
    len += line.length
  }
  return Buffer.from(parts.join('')).subarray(0, MiB)
}

/** Generates a folder once: `fill(dir)` writes into a temp name, renamed when complete. */
function cachedFolder(name: string, what: string, fill: (dir: string) => void): string {
  const dir = join(cacheDir(), name)
  if (existsSync(dir)) return dir
  progress(`generating ${what} into ${dir} (once; reused by later runs)`)
  const tmp = `${dir}.part`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true, mode: 0o755 })
  fill(tmp)
  renameSync(tmp, dir)
  return dir
}

export interface TreeStats {
  readonly files: number
  readonly dirs: number
  readonly bytes: number
}

/** Counts the files, folders and bytes below `dir` (the folder itself not counted). */
export function treeStats(dir: string): TreeStats {
  let files = 0
  let dirs = 0
  let bytes = 0
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name)
    if (d.isDirectory()) {
      const s = treeStats(p)
      files += s.files
      dirs += s.dirs + 1
      bytes += s.bytes
    } else {
      files++
      bytes += statSync(p).size
    }
  }
  return { files, dirs, bytes }
}

/**
 * About `mb` MiB of mixed files, mostly incompressible: 50% in .mp4 files of up to
 * 64 MiB, 35% in 4 MiB .jpg photos, 10% in 1 MiB .bin files, 5% in 32 KiB text
 * files (.txt/.csv/.json/.log), in nested folders.
 */
export function mixedFolder(mb = env.sizeMb): string {
  return cachedFolder(`mixed-${mb}m`, `a ${mb} MiB folder of mixed files`, (root) => {
    const block = Buffer.allocUnsafe(16 * MiB)
    const text = textBlock()
    const rnd = prng(11)
    const write = (rel: string, size: number, kind: 'random' | 'text') => {
      const p = join(root, rel)
      mkdirSync(dirname(p), { recursive: true, mode: 0o755 })
      if (kind === 'random') randomFile(p, size, block)
      else {
        const off = Math.floor(rnd() * (text.length - size))
        writeFileSync(p, text.subarray(off, off + size), { mode: 0o644 })
      }
    }
    const total = mb * MiB
    const videos = Math.max(1, Math.round((total * 0.5) / (64 * MiB)))
    for (let i = 0; i < videos; i++) write(`videos/clip-${i}.mp4`, Math.floor((total * 0.5) / videos), 'random')
    const photos = Math.max(1, Math.round((total * 0.35) / (4 * MiB)))
    for (let i = 0; i < photos; i++) write(`photos/2025-${String((i % 12) + 1).padStart(2, '0')}/img-${i}.jpg`, 4 * MiB, 'random')
    const bins = Math.max(1, Math.round((total * 0.1) / MiB))
    for (let i = 0; i < bins; i++) write(`data/blobs/blob-${i}.bin`, MiB, 'random')
    const texts = Math.max(1, Math.round((total * 0.05) / (32 * 1024)))
    const exts = ['txt', 'csv', 'json', 'log']
    for (let i = 0; i < texts; i++) write(`docs/part-${i % 16}/doc-${i}.${exts[i % 4]}`, 32 * 1024, 'text')
    mkdirSync(join(root, 'empty'), { mode: 0o755 })
  })
}

/** `n` small files (100 B – 8 KiB; 90% text, 10% random .png), 100 per folder. */
export function smallFolder(n = env.smallFiles): string {
  return cachedFolder(`small-${n}`, `a folder of ${n} small files`, (root) => {
    const text = textBlock()
    const rnd = prng(13)
    const block = Buffer.allocUnsafe(8192)
    for (let i = 0; i < n; i++) {
      const dir = join(root, `d${String(Math.floor(i / 100)).padStart(3, '0')}`)
      if (i % 100 === 0) mkdirSync(dir, { mode: 0o755 })
      const size = 100 + Math.floor(rnd() * 8092)
      if (i % 10 === 9) {
        randomFillSync(block, 0, size)
        writeFileSync(join(dir, `f${String(i).padStart(5, '0')}.png`), block.subarray(0, size), { mode: 0o644 })
      } else {
        const off = Math.floor(rnd() * (text.length - size))
        writeFileSync(join(dir, `f${String(i).padStart(5, '0')}.txt`), text.subarray(off, off + size), { mode: 0o644 })
      }
    }
  })
}

/** A folder of 50 entries (45 files of 1 KiB, 5 folders), and a 4 KiB file next to it: the small-request inputs. */
export function smallInputs(): { dir50: string; file4k: string } {
  const base = cachedFolder('small-requests', 'the small-request inputs', (root) => {
    const dir = join(root, 'dir50')
    mkdirSync(dir, { mode: 0o755 })
    const text = textBlock()
    for (let i = 0; i < 45; i++) writeFileSync(join(dir, `file-${String(i).padStart(2, '0')}.txt`), text.subarray(i * 1024, (i + 1) * 1024), { mode: 0o644 })
    for (let i = 0; i < 5; i++) mkdirSync(join(dir, `folder-${i}`), { mode: 0o755 })
    writeFileSync(join(root, 'file4k.txt'), text.subarray(0, 4096), { mode: 0o644 })
  })
  return { dir50: join(base, 'dir50'), file4k: join(base, 'file4k.txt') }
}

/** Puts `src` (a file or a tree) at `dst` as hard links; copies when linking is impossible (another file system). */
export function plant(src: string, dst: string): void {
  mkdirSync(dirname(dst), { recursive: true })
  if (statSync(src).isDirectory()) {
    mkdirSync(dst, { recursive: true })
    for (const name of readdirSync(src)) plant(join(src, name), join(dst, name))
    return
  }
  try {
    linkSync(src, dst)
  } catch {
    copyFileSync(src, dst)
  }
}

/** Reads a file or tree once, so that every server then serves it from the page cache. */
export function warm(path: string): void {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path)) warm(join(path, name))
    return
  }
  const fd = openSync(path, 'r')
  const buf = Buffer.allocUnsafe(4 * MiB)
  try {
    while (readSync(fd, buf, 0, buf.length, null) > 0);
  } finally {
    closeSync(fd)
  }
}

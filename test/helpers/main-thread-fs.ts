/**
 * @module test/helpers/main-thread-fs
 * Loaded with `node --import` (transpiled to JavaScript) into a filegate child (test/main-thread-io.test.ts): wraps
 * the main thread's node:fs and node:fs/promises functions (FileHandle's methods and the
 * file streams' own calls included) and records every call made between the parent's
 * `start` and `stop` messages on the IPC channel, each with the first frame of its stack
 * that is the project's own (`front/tus/store.ts:42`), so a failure names the module.
 * Worker threads load it too and are left alone: they are where file I/O belongs.
 * Calls made for the state store (front/state/) and the logs (front/log.ts) are not
 * recorded: the main thread keeps those by design.
 */
import fs, { statSync } from 'node:fs'
import fsp, { stat } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { fileURLToPath } from 'node:url'
import { isMainThread } from 'node:worker_threads'
import { AsyncLocalStorage } from 'node:async_hooks'

/** One recorded call. */
export interface FsCall {
  /** `readFile`, `promises.open`, `FileHandle.read`, `ReadStream(fs.read)`, ... */
  readonly fn: string
  /** `front/x.ts:12`, or `(no project frame)`. */
  readonly frame: string
  /** The first frames of its stack, for the report. */
  readonly stack: readonly string[]
}

/** The messages on the IPC channel. */
export type CountRequest = 'main-thread-fs:start' | 'main-thread-fs:stop' | 'main-thread-fs:probe'
export type CountReply = { readonly type: 'main-thread-fs:started' } | { readonly type: 'main-thread-fs:probed'; readonly seen: number } | { readonly type: 'main-thread-fs:calls'; readonly calls: readonly FsCall[] }

/** The project (filegate runs from it); this file runs from a transpiled copy elsewhere. */
const ROOT = `${process.cwd().replace(/\/$/, '')}/`
const SELF = fileURLToPath(import.meta.url)
/** What the main thread may touch while serving: its state store and its logs. */
const EXEMPT = [/^front\/state\//, /^front\/log\.ts$/]

/** A stack line's file, relative to the project ('dist/' dropped: source maps give .ts names). */
function fileOf(line: string): { file: string; at: string } | null {
  const m = /\(?((?:file:\/\/)?\/[^():]+):(\d+):\d+\)?$/.exec(line.trim())
  if (!m) return null
  const abs = m[1]!.startsWith('file://') ? fileURLToPath(m[1]!) : m[1]!
  if (!abs.startsWith(ROOT) || abs === SELF || abs.includes('/node_modules/')) return null
  const file = abs.slice(ROOT.length).replace(/^dist\//, '').replace(/\.js$/, '.ts')
  return { file, at: `${file}:${m[2]}` }
}

function where(): { frame: string | null; file: string | null; stack: string[] } {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 60
  const lines = (new Error().stack ?? '').split('\n').slice(1).map((l) => l.trim())
  Error.stackTraceLimit = limit
  for (const l of lines) {
    const f = fileOf(l)
    if (f) return { frame: f.at, file: f.file, stack: lines.filter((x) => !x.includes(SELF)).slice(0, 12) }
  }
  return { frame: null, file: null, stack: lines.filter((x) => !x.includes(SELF)).slice(0, 12) }
}

let counting = false
const calls: FsCall[] = []
/**
 * The project frame of the call in progress: the runtime's own fs calls made on its
 * behalf (`rm` walking a tree through `lstat`, `readdir`, `unlink`) count for it.
 */
const inCall = new AsyncLocalStorage<string>()

/**
 * Records a call, for the first project frame of its stack; one without counts for
 * `origin` (the frame that opened its handle), else for the call it is made for (a
 * stream's own calls: for the frame that made the stream). Answers the frame.
 */
function record(fn: string, origin?: string, originFirst = false): string | undefined {
  const w = where()
  const frame = (originFirst ? origin : undefined) ?? w.frame ?? origin ?? inCall.getStore()
  if (!counting) return frame
  const file = (frame ?? '').replace(/:\d+$/, '')
  if (EXEMPT.some((re) => re.test(file))) return frame
  calls.push({ fn, frame: frame ?? '(no project frame)', stack: w.stack })
  return frame
}

type AnyFn = (...args: unknown[]) => unknown

/** `origin`: the frame a stream's own calls count for, whoever pulls on the stream. */
function wrap(name: string, orig: AnyFn, origin?: () => string | undefined): AnyFn {
  const wrapped = function (this: unknown, ...args: unknown[]) {
    const frame = record(name, origin?.(), true)
    return frame === undefined ? orig.apply(this, args) : inCall.run(frame, () => orig.apply(this, args))
  }
  // promisify's custom forms (fs.read, fs.exists) are found through the prototype.
  Object.setPrototypeOf(wrapped, orig)
  return wrapped
}

/** The frame that opened each FileHandle, for its methods called from the runtime's own code (streams). */
const openedAt = new WeakMap<object, string>()

function install(): void {
  const plain = fs as unknown as Record<string, unknown>
  const raw = { ...plain } as Record<string, AnyFn>
  for (const key of Object.keys(plain)) {
    const v = plain[key]
    if (typeof v !== 'function' || !/^[a-z]/.test(key)) continue
    plain[key] = wrap(key, v as AnyFn)
  }
  // A stream's own opens, reads and writes (made later, from the runtime's code) count
  // for the frame that made the stream.
  for (const [key, kind] of [['createReadStream', 'ReadStream'], ['createWriteStream', 'WriteStream']] as const) {
    const make = raw[key]!
    plain[key] = function (this: unknown, path: unknown, options?: unknown) {
      const origin = record(key)
      const own: Record<string, AnyFn> = {}
      for (const op of ['open', 'read', 'write', 'writev', 'close', 'fsync']) own[op] = wrap(`${kind}(fs.${op})`, raw[op]!, () => origin)
      const o = typeof options === 'string' ? { encoding: options } : ((options ?? {}) as Record<string, unknown>)
      return make.call(this, path, o.fs ? o : { ...o, fs: own })
    }
  }
  const promises = fsp as unknown as Record<string, unknown>
  for (const key of Object.keys(promises)) {
    const v = promises[key]
    if (typeof v !== 'function' || !/^[a-z]/.test(key)) continue
    if (key === 'open') {
      const open = v as AnyFn
      promises[key] = async function (this: unknown, ...args: unknown[]) {
        const origin = record('promises.open')
        const h = (await (origin === undefined ? open.apply(this, args) : inCall.run(origin, () => open.apply(this, args)))) as object
        if (origin) openedAt.set(h, origin)
        return h
      }
    } else promises[key] = wrap(`promises.${key}`, v as AnyFn)
  }
  syncBuiltinESMExports()
}

async function installHandles(): Promise<void> {
  const h = await fsp.open(SELF, 'r')
  const proto = Object.getPrototypeOf(h) as Record<string, unknown>
  await h.close()
  for (const key of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, key)
    if (key === 'constructor' || !d || typeof d.value !== 'function') continue
    const orig = d.value as AnyFn
    proto[key] = function (this: object, ...args: unknown[]) {
      record(`FileHandle.${key}`, openedAt.get(this))
      return orig.apply(this, args)
    }
  }
}

if (isMainThread && process.send) {
  await installHandles()
  install()
  process.on('message', (m: CountRequest) => {
    if (m === 'main-thread-fs:start') {
      calls.length = 0
      counting = true
      process.send!({ type: 'main-thread-fs:started' } satisfies CountReply)
    } else if (m === 'main-thread-fs:probe') {
      // Calls through named imports, as filegate's modules make them: seen only when the
      // wrappers reached the modules' bindings too (syncBuiltinESMExports).
      counting = true
      const before = calls.length
      statSync(ROOT)
      void stat(ROOT).then(() => {
        const seen = calls.length - before
        calls.length = before
        counting = false
        process.send!({ type: 'main-thread-fs:probed', seen } satisfies CountReply)
      })
    } else if (m === 'main-thread-fs:stop') {
      counting = false
      process.send!({ type: 'main-thread-fs:calls', calls: [...calls] } satisfies CountReply)
    }
  })
  // The channel does not keep filegate running: it stops on its signal as it would alone.
  process.channel?.unref()
}

/**
 * @module workers/plugins
 * WORKER THREADS. The enabled plugins as a worker thread sees them: the pool passes the
 * configuration's list as `workerData` (workers/pool.ts); each thread loads it once, on
 * first use: built-in plugins' worker halves from the table below, third-party modules
 * from their paths (core/plugin.ts). Then:
 * - `openTransformed`: the `read` op's download transform, on the driver's byte stream;
 * - `createPluginDriver`: a driver for a storage type a plugin provides.
 *
 * The main thread loaded the same modules at start-up and refused to start if one failed
 * (front/plugins.ts), so a failure here is particular to this thread: it is logged, and
 * that plugin's hooks answer an error while the rest of the thread keeps serving.
 */
import { isMainThread, threadId, workerData } from 'node:worker_threads'
import mime from 'mime-types'
import type { Driver, Entry, OpContext } from '../core/driver.js'
import { FsError } from '../core/errors.js'
import type { TransformRequest } from '../core/messages.js'
import { baseName } from '../core/paths.js'
import { type Plugin, type PluginConfig, type PluginOptions, importPlugin, initPlugin, isPluginBackendSpec } from '../core/plugin.js'
import { imageAscii } from './plugins/plg_image_ascii/index.js'
import { imageThumbnail } from './plugins/plg_image_thumbnail/index.js'

/** Built-in plugins' worker halves, by name (their main halves: front/plugins.ts). */
export const BUILT_IN_WORKER_HALVES: ReadonlyMap<string, Plugin> = new Map([
  [imageAscii.name, imageAscii],
  [imageThumbnail.name, imageThumbnail],
])

/** What the pool passes to each thread. */
export interface PluginWorkerData {
  readonly plugins?: readonly PluginConfig[]
}

type Loaded = { readonly plugin: Plugin; readonly options: PluginOptions } | { readonly error: string }

let registry: Promise<ReadonlyMap<string, Loaded>> | undefined

/** This thread's plugins, loaded on first call from `workerData`. */
function plugins(): Promise<ReadonlyMap<string, Loaded>> {
  if (!registry) {
    const data = (isMainThread ? null : workerData) as PluginWorkerData | null | undefined
    registry = loadWorkerPlugins(data?.plugins ?? [])
  }
  return registry
}

/** Loads and initialises `configs` in this thread; a failure is kept per plugin, never thrown. */
export async function loadWorkerPlugins(configs: readonly PluginConfig[]): Promise<ReadonlyMap<string, Loaded>> {
  const out = new Map<string, Loaded>()
  for (const c of configs) {
    try {
      const plugin = c.path === undefined ? BUILT_IN_WORKER_HALVES.get(c.name) : await importPlugin(c.name, c.path)
      if (!plugin) throw new Error(`no built-in plugin is named "${c.name}"`)
      await initPlugin(plugin, c.options, 'worker')
      out.set(c.name, { plugin, options: c.options })
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err)
      console.error(JSON.stringify({ level: 'error', thread: threadId, msg: 'plugin failed to load in a worker thread', plugin: c.name, err: error }))
      out.set(c.name, { error })
    }
  }
  return out
}

async function use(name: string): Promise<{ plugin: Plugin; options: PluginOptions }> {
  const p = (await plugins()).get(name)
  if (!p) throw new FsError('ENOTSUP', `plugin "${name}" is not enabled on this server`)
  if ('error' in p) throw new FsError('EIO', `plugin "${name}" is not available: it failed to load in this worker`)
  return p
}

// Download transforms -------------------------------------------------------------------

export interface Transformed {
  /** The original file. */
  readonly entry: Entry
  /** Media type of the new bytes. */
  readonly type: string
  readonly body: AsyncIterable<Uint8Array>
}

/** A header-safe media type: visible ASCII, no line breaks. */
const MEDIA_TYPE = /^[\x21-\x7e][\x20-\x7e]{0,254}$/

/**
 * Runs plugin `t.plugin`'s transform on `path`'s bytes. Resolves once the plugin has
 * accepted the file (its `open` returned): errors until then are the request's answer.
 * The file is read only as the plugin pulls, and released when the output ends, fails or
 * is abandoned.
 */
export async function openTransformed(ctx: OpContext, d: Driver, path: string, t: TransformRequest): Promise<Transformed> {
  const { plugin, options } = await use(t.plugin)
  const transform = plugin.transform
  if (!transform?.open) throw new FsError('ENOTSUP', `plugin "${t.plugin}" has no download transform`)
  const entry = await d.stat(ctx, path)
  if (entry.kind !== 'file') throw new FsError('EISDIR', `${path}: is a directory`, { path })
  const name = baseName(path)
  const file = { path, name, type: mime.contentType(name) || 'application/octet-stream', size: entry.size, mtimeMs: entry.mtimeMs }
  const source = new OnceSource(d.read(ctx, path))
  try {
    const out = await transform.open({ params: t.params, options, file, body: source, signal: ctx.signal })
    if (out === null || typeof out !== 'object' || typeof out.type !== 'string' || !MEDIA_TYPE.test(out.type) || !isAsyncIterable(out.body)) {
      throw new Error(`plugin "${t.plugin}": transform.open must resolve to { type: <media type>, body: <async iterable> }`)
    }
    return { entry, type: out.type, body: releasing(out.body, source) }
  } catch (err) {
    await source.close()
    throw err
  }
}

const isAsyncIterable = (x: unknown): x is AsyncIterable<Uint8Array> =>
  x !== null && typeof x === 'object' && typeof (x as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function'

/** The plugin's output, with the file's read released when it ends, fails or is abandoned. */
async function* releasing(body: AsyncIterable<Uint8Array>, source: OnceSource): AsyncIterable<Uint8Array> {
  try {
    for await (const chunk of body) {
      if (!(chunk instanceof Uint8Array)) throw new Error('a transform yielded something other than bytes (Uint8Array)')
      yield chunk
    }
  } finally {
    await source.close()
  }
}

/** A byte stream that may be iterated once, and closed from outside whether iterated or not. */
class OnceSource implements AsyncIterable<Uint8Array> {
  readonly #source: AsyncIterable<Uint8Array>
  #it: AsyncIterator<Uint8Array> | null = null
  #closed = false

  constructor(source: AsyncIterable<Uint8Array>) {
    this.#source = source
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.#it || this.#closed) throw new Error('a transform\'s input can be read once')
    this.#it = this.#source[Symbol.asyncIterator]()
    return this.#it
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    // Stops the driver's read (and frees its session) when the plugin stopped early; a no-op after the end.
    await this.#it?.return?.().catch(() => {})
  }
}

// Backends -------------------------------------------------------------------------------

/**
 * A driver for a plugin's storage type (workers/drivers/index.ts falls back to this for
 * any spec that is not one of filegate's own).
 * @throws FsError ENOTSUP when no enabled plugin provides it
 */
export async function createPluginDriver(spec: unknown): Promise<Driver> {
  if (!isPluginBackendSpec(spec)) {
    throw new FsError('ENOTSUP', `unknown backend type ${JSON.stringify((spec as { type?: unknown } | null)?.type ?? null)}`)
  }
  const { plugin, options } = await use(spec.plugin)
  const backends = plugin.backends ?? {}
  const backend = Object.hasOwn(backends, spec.backend) ? backends[spec.backend] : undefined
  if (!backend) throw new FsError('ENOTSUP', `plugin "${spec.plugin}" provides no "${spec.backend}" storage`)
  return backend.create(spec.params, options)
}

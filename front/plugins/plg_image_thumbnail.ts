/**
 * @module front/plugins/plg_image_thumbnail
 * MAIN THREAD. The built-in plugin plg_image_thumbnail (docs/plugins.md), its main half:
 * `GET /api/files/cat?path=<image>&thumbnail=<pixels>` asks for a small WebP of the
 * image, at most that many pixels on its longer side (32..512; `thumbnail` empty or
 * `true`: 128). This half checks the query and the configured limits before dispatch;
 * the worker half (workers/plugins/plg_image_thumbnail/) decodes, shrinks and caches.
 * Options: `max_input_bytes` (default 32 MiB), `max_input_pixels` (default 100 million),
 * `cache_bytes` (per worker thread, default 16 MiB; 0 turns the cache off).
 */
import { ApiError } from '../../core/api-error.js'
import type { Plugin, PluginOptions } from '../../core/plugin.js'

export const NAME = 'plg_image_thumbnail'
export const DEFAULT_SIZE = 128
export const MIN_SIZE = 32
export const MAX_SIZE = 512

/** As the worker half's `ThumbnailParams` (workers/plugins/plg_image_thumbnail/index.ts). */
export type ThumbnailParams = {
  readonly size: number
  readonly max_bytes: number
  readonly max_pixels: number
  readonly cache_bytes: number
}

const DEFAULTS = { max_input_bytes: 32 * 1024 * 1024, max_input_pixels: 100_000_000, cache_bytes: 16 * 1024 * 1024 } as const

/** The plugin's options → its limits. @throws Error naming the bad option */
function limits(options: PluginOptions): Omit<ThumbnailParams, 'size'> {
  for (const k of Object.keys(options)) if (!(k in DEFAULTS)) throw new Error(`unknown option "${k}" (known: ${Object.keys(DEFAULTS).join(', ')})`)
  const whole = (k: keyof typeof DEFAULTS, min: number): number => {
    const v = options[k]
    if (v === undefined) return DEFAULTS[k]
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new Error(`option "${k}" must be a whole number of at least ${min} (got ${JSON.stringify(v)})`)
    return v
  }
  return { max_bytes: whole('max_input_bytes', 1), max_pixels: whole('max_input_pixels', 1), cache_bytes: whole('cache_bytes', 0) }
}

function size(raw: string): number {
  if (raw === '' || raw === 'true') return DEFAULT_SIZE
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN
  if (!(n >= MIN_SIZE && n <= MAX_SIZE)) throw new ApiError('INVALID_INPUT', `"thumbnail" must be a size in pixels from ${MIN_SIZE} to ${MAX_SIZE} (got ${JSON.stringify(raw)})`)
  return n
}

export const imageThumbnailMain: Plugin = {
  name: NAME,
  init({ options }) {
    limits(options)
  },
  transform: {
    select(query, _file, options): ThumbnailParams | null {
      const on = query.get('thumbnail')
      if (on === null || on === 'false') return null
      return { size: size(on), ...limits(options) }
    },
  },
}

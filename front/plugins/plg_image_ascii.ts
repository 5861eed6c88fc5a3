/**
 * @module front/plugins/plg_image_ascii
 * MAIN THREAD. The built-in plugin plg_image_ascii (docs/plugins.md), its main half:
 * `GET /api/files/cat?path=<image>&ascii` asks for ASCII art. Before anything is sent to
 * a worker, this half reads the query and the configured limits, and answers a bad
 * parameter with 400; the worker half (workers/plugins/plg_image_ascii/) renders. The
 * two halves share a name and the `AsciiParams` shape: the rendering needs an image
 * library in the worker threads, the query check belongs before dispatch, and the
 * dependency rule keeps front/ and workers/ apart.
 *
 * Query: `ascii` present and not `false` turns it on; `ascii_width` 10..400 columns
 * (default 80); `ascii_color=true` adds 24-bit ANSI colour.
 * Options (configuration): `max_input_bytes` (default 32 MiB), `max_input_pixels`
 * (default 100 million).
 */
import { ApiError } from '../../core/api-error.js'
import type { Plugin, PluginOptions } from '../../core/plugin.js'

export const NAME = 'plg_image_ascii'
export const DEFAULT_WIDTH = 80
export const MIN_WIDTH = 10
export const MAX_WIDTH = 400
export const DEFAULT_MAX_INPUT_BYTES = 32 * 1024 * 1024
export const DEFAULT_MAX_INPUT_PIXELS = 100_000_000

/** As the worker half's `AsciiParams` (workers/plugins/plg_image_ascii/index.ts). */
export type AsciiParams = {
  readonly width: number
  readonly color: boolean
  readonly max_bytes: number
  readonly max_pixels: number
}

interface Limits {
  readonly max_bytes: number
  readonly max_pixels: number
}

/** The plugin's options → its limits. @throws Error naming the bad option */
function limits(options: PluginOptions): Limits {
  for (const k of Object.keys(options)) {
    if (k !== 'max_input_bytes' && k !== 'max_input_pixels') throw new Error(`unknown option "${k}" (known: max_input_bytes, max_input_pixels)`)
  }
  const positive = (k: string, dflt: number): number => {
    const v = options[k]
    if (v === undefined) return dflt
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new Error(`option "${k}" must be a whole number of at least 1 (got ${JSON.stringify(v)})`)
    return v
  }
  return { max_bytes: positive('max_input_bytes', DEFAULT_MAX_INPUT_BYTES), max_pixels: positive('max_input_pixels', DEFAULT_MAX_INPUT_PIXELS) }
}

function width(query: URLSearchParams): number {
  const raw = query.get('ascii_width')
  if (raw === null) return DEFAULT_WIDTH
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN
  if (!(n >= MIN_WIDTH && n <= MAX_WIDTH)) {
    throw new ApiError('INVALID_INPUT', `"ascii_width" must be a whole number of columns from ${MIN_WIDTH} to ${MAX_WIDTH} (got ${JSON.stringify(raw)})`)
  }
  return n
}

function color(query: URLSearchParams): boolean {
  const raw = query.get('ascii_color')
  if (raw === null || raw === 'false' || raw === '0') return false
  if (raw === 'true' || raw === '1' || raw === '') return true
  throw new ApiError('INVALID_INPUT', '"ascii_color" must be true or false')
}

export const imageAsciiMain: Plugin = {
  name: NAME,
  init({ options }) {
    limits(options)
  },
  transform: {
    select(query, _file, options): AsciiParams | null {
      const on = query.get('ascii')
      if (on === null || on === 'false') return null
      return { width: width(query), color: color(query), ...limits(options) }
    },
  },
}

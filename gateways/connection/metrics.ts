/**
 * @module gateways/connection/metrics
 * Per-door figures (core/doors.ts, `DoorMeter`), counted in one place for every door:
 * requests, their errors by the door's error class, file bytes in and out, sessions
 * open. Plain numbers here; front/metrics.ts hands them to prom-client when scraped, so
 * counting costs a field update.
 *
 * File bytes are counted on the file handles of a door's view (`fs`): whatever a door
 * reads or writes through a handle is counted once, whichever request did it.
 *
 * Labels stay bounded: a door has at most `MAX_ERROR_CLASSES` error classes, each a
 * short name; anything past that, or not a plain name, is `other`.
 */
import type { Door, DoorMeter } from '../../core/doors.js'
import type { FileHandle, View } from '../../core/view.js'

export const DOORS: readonly Door[] = ['http', 'sftp', 's3', 'mcp']
/** Error classes one door may show; SFTP has 4, S3 about 40 codes, HTTP 2 classes. */
export const MAX_ERROR_CLASSES = 64
const ERROR_CLASS = /^[A-Za-z0-9_]{1,48}$/

export interface DoorFigures {
  readonly door: Door
  readonly requests: number
  readonly errors: ReadonlyMap<string, number>
  readonly bytesIn: number
  readonly bytesOut: number
  readonly sessions: number
}

class Counts implements DoorMeter {
  requests = 0
  readonly errors = new Map<string, number>()
  bytesIn = 0
  bytesOut = 0
  sessions = 0

  request(error?: string): void {
    this.requests++
    if (error === undefined) return
    const known = ERROR_CLASS.test(error) && (this.errors.has(error) || this.errors.size < MAX_ERROR_CLASSES) ? error : 'other'
    this.errors.set(known, (this.errors.get(known) ?? 0) + 1)
  }

  bytes(direction: 'in' | 'out', n: number): void {
    if (direction === 'in') this.bytesIn += n
    else this.bytesOut += n
  }

  session(): () => void {
    this.sessions++
    let open = true
    return () => {
      if (!open) return
      open = false
      this.sessions--
    }
  }

  fs(fs: View): View {
    return meteredFs(fs, this)
  }
}

/** Every door's counters, from the service's start. */
export class DoorMetrics {
  readonly #doors = new Map<Door, Counts>(DOORS.map((d) => [d, new Counts()]))

  meter(door: Door): DoorMeter {
    let c = this.#doors.get(door)
    if (c === undefined) this.#doors.set(door, (c = new Counts()))
    return c
  }

  figures(): DoorFigures[] {
    return [...this.#doors].map(([door, c]) => ({ door, requests: c.requests, errors: new Map(c.errors), bytesIn: c.bytesIn, bytesOut: c.bytesOut, sessions: c.sessions }))
  }
}

/**
 * `obj` as it is, but for the members `own` replaces. A proxy rather than a copy of the
 * interface: every other member is the object's own, its methods bound to it (its
 * private state stays reachable), each bound once.
 */
function overlay<T extends object>(obj: T, own: Partial<T>): T {
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(obj, {
    get(target, key) {
      if (Object.hasOwn(own, key)) return own[key as keyof T]
      const v: unknown = Reflect.get(target, key, target)
      if (typeof v !== 'function') return v
      let b = bound.get(key)
      if (b === undefined) bound.set(key, (b = (v as (...a: unknown[]) => unknown).bind(target)))
      return b
    },
  })
}

/**
 * `fs` whose file handles count what they read (out) and write (in), whose whole-file
 * writes count the body they take (in: an S3 PutObject's), and whose staged commits
 * what they store (in: an S3 Complete's object).
 */
function meteredFs(fs: View, meter: DoorMeter): View {
  return overlay(fs, {
    open: async (ctx, path, flags) => meteredHandle(await fs.open(ctx, path, flags), meter),
    writeFile: (ctx, path, body, opts) => fs.writeFile(ctx, path, meteredBody(body, meter), opts),
    commitStaged: async (ctx, path, source, opts) => {
      const entry = await fs.commitStaged(ctx, path, source, opts)
      if (entry !== null) meter.bytes('in', entry.size)
      return entry
    },
  })
}

/** The body's bytes counted as they are taken; counted before they go on, as the taker may detach a chunk. */
async function* meteredBody(body: AsyncIterable<Uint8Array>, meter: DoorMeter): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    meter.bytes('in', chunk.byteLength)
    yield chunk
  }
}

function meteredHandle(h: FileHandle, meter: DoorMeter): FileHandle {
  return overlay(h, {
    read: async (offset, length) => {
      const data = await h.read(offset, length)
      meter.bytes('out', data.byteLength)
      return data
    },
    write: async (offset, data, opts) => {
      // Counted before: a handle given the buffer (`give`) may detach it.
      const n = data.byteLength
      await h.write(offset, data, opts)
      meter.bytes('in', n)
    },
  })
}

/**
 * @module workers/driver-cache
 * The backends this worker thread knows, and one driver per backend key, created on
 * first use and kept while in use, so its pooled sessions are reused across requests.
 * The main thread sends a key's spec once (core/messages.ts); a driver unused for
 * `idleMs` is closed (its sessions with it) and its spec forgotten, so the thread asks
 * for it again the next time.
 */
import type { BackendSpec } from '../core/backend.js'
import type { Driver } from '../core/driver.js'
import { createDriver } from './drivers/index.js'
import type { PoolKnobs } from './sessions.js'

interface Slot {
  readonly driver: Promise<Driver>
  users: number
  timer: NodeJS.Timeout | null
}

/** A driver held in use until `release()`. */
export interface HeldDriver {
  readonly driver: Driver
  release(): void
}

export class DriverCache {
  readonly #specs = new Map<string, BackendSpec>()
  readonly #slots = new Map<string, Slot>()
  readonly #idleMs: number
  readonly #knobs: PoolKnobs

  /** `knobs`: what every remote driver's session pool gets (the backend timeout). */
  constructor(idleMs = 10 * 60_000, knobs: PoolKnobs = {}) {
    this.#idleMs = idleMs
    this.#knobs = knobs
  }

  register(key: string, spec: BackendSpec): void {
    this.#specs.set(key, spec)
  }

  knows(key: string): boolean {
    return this.#specs.has(key)
  }

  /** The driver for a known `key`, held (kept open) until released. */
  async acquire(key: string): Promise<HeldDriver> {
    let slot = this.#slots.get(key)
    if (!slot) {
      const spec = this.#specs.get(key)
      if (!spec) throw new Error(`backend ${key} is not registered in this thread`)
      slot = { driver: createDriver(spec, this.#knobs), users: 0, timer: null }
      this.#slots.set(key, slot)
      // A failed open is not cached: the next request tries again.
      slot.driver.catch(() => this.#slots.get(key) === slot && this.#slots.delete(key))
    }
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = null
    slot.users++
    const s = slot
    let released = false
    const release = () => {
      if (released) return
      released = true
      s.users--
      if (s.users === 0) this.#arm(key, s)
    }
    try {
      return { driver: await s.driver, release }
    } catch (err) {
      release()
      throw err
    }
  }

  #arm(key: string, slot: Slot): void {
    slot.timer = setTimeout(() => {
      if (slot.users > 0 || this.#slots.get(key) !== slot) return
      this.#slots.delete(key)
      this.#specs.delete(key)
      void slot.driver.then((d) => d.close()).catch(() => {})
    }, this.#idleMs)
    slot.timer.unref()
  }

  async closeAll(): Promise<void> {
    const slots = [...this.#slots.values()]
    this.#slots.clear()
    await Promise.allSettled(slots.map(async (s) => (await s.driver).close()))
  }
}

/**
 * @module workers/driver-cache
 * One driver per backend key in each worker thread, created on first use and
 * kept while in use, so its pooled sessions are reused across requests. A driver
 * unused for `idleMs` is closed (its sessions with it).
 */
import type { BackendSpec } from '../core/backend.js'
import type { Driver } from '../core/driver.js'
import { createDriver } from './drivers/index.js'

interface Slot {
  readonly driver: Promise<Driver>
  users: number
  timer: NodeJS.Timeout | null
}

export class DriverCache {
  readonly #slots = new Map<string, Slot>()
  readonly #idleMs: number

  constructor(idleMs = 10 * 60_000) {
    this.#idleMs = idleMs
  }

  /** Runs `fn` with the driver for `key`; the driver stays cached while any call uses it. */
  async use<T>(key: string, spec: BackendSpec, fn: (d: Driver) => Promise<T>): Promise<T> {
    let slot = this.#slots.get(key)
    if (!slot) {
      slot = { driver: createDriver(spec), users: 0, timer: null }
      this.#slots.set(key, slot)
      // A failed open is not cached: the next request tries again.
      slot.driver.catch(() => this.#slots.get(key) === slot && this.#slots.delete(key))
    }
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = null
    slot.users++
    try {
      return await fn(await slot.driver)
    } finally {
      slot.users--
      if (slot.users === 0) this.#arm(key, slot)
    }
  }

  #arm(key: string, slot: Slot): void {
    slot.timer = setTimeout(() => {
      if (slot.users > 0 || this.#slots.get(key) !== slot) return
      this.#slots.delete(key)
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

/**
 * @module gateways/sftp/startups
 * The cap on connections that have not logged in yet, as OpenSSH's MaxStartups and
 * PerSourceMaxStartups: past `start` such connections, a new one is refused with a
 * probability of `rate`% rising linearly to 100% at `full`; past `perAddress` from one
 * client address, every new one from it is refused. A refused connection is closed at
 * once (it holds no descriptor); one admitted counts until it logs in or closes.
 * Random refusal keeps a flood from locking out real clients entirely: they get through
 * on a retry while the flood cannot grow past `full`.
 */

export interface StartupLimits {
  readonly start: number
  /** Percent refused at `start`, rising to 100 at `full`. */
  readonly rate: number
  readonly full: number
  readonly perAddress: number
}

/** Why a connection was refused: too many from its address, or too many in all. */
export type Refusal = 'address' | 'total'

export class Startups {
  readonly #limits: StartupLimits
  readonly #random: () => number
  #total = 0
  readonly #byAddress = new Map<string, number>()

  constructor(limits: StartupLimits, random: () => number = Math.random) {
    this.#limits = limits
    this.#random = random
  }

  /** Connections not logged in now. */
  get total(): number {
    return this.#total
  }

  /** Counts a new connection in all; its (idempotent) release, or why it is refused. */
  enter(): (() => void) | Refusal {
    const { start, rate, full } = this.#limits
    const n = this.#total
    if (n >= full) return 'total'
    if (n >= start) {
      const p = full === start ? 1 : rate / 100 + ((100 - rate) / 100) * ((n - start) / (full - start))
      if (this.#random() < p) return 'total'
    }
    this.#total++
    return once(() => this.#total--)
  }

  /** Counts a connection from `address` (the client's, after a PROXY header); its release, or 'address'. */
  enterFrom(address: string): (() => void) | Refusal {
    const n = this.#byAddress.get(address) ?? 0
    if (n >= this.#limits.perAddress) return 'address'
    this.#byAddress.set(address, n + 1)
    return once(() => {
      const left = (this.#byAddress.get(address) ?? 1) - 1
      if (left <= 0) this.#byAddress.delete(address)
      else this.#byAddress.set(address, left)
    })
  }
}

function once(fn: () => void): () => void {
  let done = false
  return () => {
    if (done) return
    done = true
    fn()
  }
}

/**
 * @module gateways/connection/transfer-limits
 * Fair shares of the transfer capacity: at most `perAddress` concurrent transfers
 * (downloads that stream, uploads, zips) from one client address and `perCredential`
 * with one credential (a session token, a share link). Beyond either, the request is
 * refused at once with EBUSY, saying which limit it hit (the HTTP API answers 429
 * RATE_LIMITED, SFTP FAILURE, S3 SlowDown); nothing waits.
 * Small reads answered whole by their task (64 KiB and less) are not transfers and are
 * never limited here.
 *
 * Counted by the view every door calls (gateways/connection/view.ts), once per transfer,
 * for the client the request names (`RequestContext.client`) or the view's own.
 */
import { FsError } from '../../core/errors.js'
import type { ClientIdentity } from '../../core/view.js'

export interface TransferLimitSettings {
  readonly perAddress: number
  readonly perCredential: number
}

export class TransferLimits {
  readonly #settings: TransferLimitSettings
  readonly #byAddress = new Map<string, number>()
  readonly #byCredential = new Map<string, number>()

  constructor(settings: TransferLimitSettings) {
    this.#settings = settings
  }

  /** Counts one transfer for `client`; returns its (idempotent) release. @throws FsError EBUSY */
  acquire(client: ClientIdentity): () => void {
    const { address, credential } = client
    const a = this.#byAddress.get(address) ?? 0
    const c = this.#byCredential.get(credential) ?? 0
    if (a >= this.#settings.perAddress) {
      throw new FsError('EBUSY', `too many transfers at once from your address (at most ${this.#settings.perAddress}): retry when one has finished`)
    }
    if (c >= this.#settings.perCredential) {
      throw new FsError('EBUSY', `too many transfers at once with this credential (at most ${this.#settings.perCredential}): retry when one has finished`)
    }
    this.#byAddress.set(address, a + 1)
    this.#byCredential.set(credential, c + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      decrement(this.#byAddress, address)
      decrement(this.#byCredential, credential)
    }
  }
}

function decrement(m: Map<string, number>, k: string): void {
  const n = (m.get(k) ?? 1) - 1
  if (n <= 0) m.delete(k)
  else m.set(k, n)
}

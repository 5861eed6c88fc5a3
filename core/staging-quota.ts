/**
 * @module core/staging-quota
 * Bounds on the bytes uploads keep staged on the server's disk before they are stored
 * (tus uploads, S3 multipart parts, the gateways' staging copies): per login, per share
 * link and in total, and a reserve of free space left on the staging folder's disk,
 * the data folder's too, so that staging can never starve the state store
 * (docs/security.md, "Staged uploads").
 *
 * Every staged file has a hold: bytes are charged to it as they arrive (`grow`, which
 * refuses past a limit before the bytes are written) and given back when the file goes
 * (`release`). A limit of a login or a share is that uploader's own: FsError EFBIG
 * (413 at the HTTP API, EntityTooLarge at S3). The total or the disk's reserve is the
 * server's: FsError ENOSPC (507, S3's InsufficientStorage), as a full disk would be.
 *
 * The counts are this process's (each node of a cluster counts its own; the free space
 * is measured on the disk itself, so the reserve holds for all of them). Uploads staged
 * before a restart are counted again as their doors find them (`adopt`).
 */
import { statfs } from 'node:fs/promises'
import { FsError } from './errors.js'

export interface StagingLimits {
  /** Bytes staged by all uploaders together. */
  readonly total_bytes: number
  /** Bytes staged by one login (a session, a gateway user). */
  readonly per_login_bytes: number
  /** Bytes staged through one share link. */
  readonly per_share_bytes: number
  /** Free bytes always left on the disk of the staging folder (and of the data folder). */
  readonly reserve_bytes: number
}

/** Who stages: a login, a share link, or both (a share of a login); null for neither. */
export interface StagingOwner {
  readonly login: string | null
  readonly share: string | null
}

/** How long a measure of a disk's free space is used, the bytes staged since subtracted. */
const DISK_MEASURE_MS = 1000

const GiB = 1024 ** 3
export const STAGING_DEFAULTS: StagingLimits = {
  total_bytes: 50 * GiB,
  per_login_bytes: 10 * GiB,
  per_share_bytes: 10 * GiB,
  reserve_bytes: 2 * GiB,
}

interface Disk {
  free: number
  measured: number
  /** Bytes charged in folders of this disk since it was measured. */
  since: number
}

export class StagingQuota {
  readonly #limits: StagingLimits
  /** Folders whose disk must keep the reserve, whatever folder is written (the data folder). */
  readonly #alsoWatch: readonly string[]
  #total = 0
  readonly #byKey = new Map<string, number>()
  readonly #disks = new Map<string, Disk>()
  readonly #freeBytes: (dir: string) => Promise<number>

  /**
   * `freeBytes`: how the free space of a folder's disk is measured (Infinity when it
   * cannot be told); the server measures on a worker thread (core/staged.ts), so that
   * the main thread makes no file-system call for it. Default: statfs here.
   */
  constructor(limits: StagingLimits, opts: { readonly alsoWatch?: readonly string[]; readonly freeBytes?: (dir: string) => Promise<number> } = {}) {
    this.#limits = limits
    this.#alsoWatch = opts.alsoWatch ?? []
    this.#freeBytes = opts.freeBytes ?? statfsFree
  }

  get limits(): StagingLimits {
    return this.#limits
  }

  /** Bytes staged now, all uploaders together. */
  get total(): number {
    return this.#total
  }

  /** Bytes staged now by `owner`'s login and through its share. */
  usage(owner: StagingOwner): { readonly login: number; readonly share: number } {
    return { login: owner.login === null ? 0 : (this.#byKey.get(loginKey(owner.login)) ?? 0), share: owner.share === null ? 0 : (this.#byKey.get(shareKey(owner.share)) ?? 0) }
  }

  /** A new staged file of `owner`'s, written in `dir`. */
  hold(dir: string, owner: StagingOwner): StagingHold {
    return new StagingHold(this, dir, owner)
  }

  /**
   * Refuses an upload of `bytes` in all that cannot be staged for `owner` now (its declared
   * length is over what its login or share may still stage, or over the total limit).
   * @throws FsError EFBIG
   */
  fits(owner: StagingOwner, bytes: number): void {
    const { per_login_bytes, per_share_bytes, total_bytes } = this.#limits
    const u = this.usage(owner)
    if (owner.login !== null && u.login + bytes > per_login_bytes) throw overLogin(per_login_bytes)
    if (owner.share !== null && u.share + bytes > per_share_bytes) throw overShare(per_share_bytes)
    if (bytes > total_bytes) throw new FsError('EFBIG', `an upload of ${bytes} bytes is over what this server stages in all (${total_bytes} bytes)`)
  }

  /** @internal charges `n` bytes for `hold` after the checks; @throws FsError EFBIG or ENOSPC */
  async charge(dir: string, owner: StagingOwner, n: number, check: boolean): Promise<void> {
    if (check) {
      const dirs = [dir, ...this.#alsoWatch]
      await Promise.all(dirs.map((d) => this.#measure(d, false)))
      // A measure that says "full" is taken again before it refuses: space may be back.
      const short = (d: string) => {
        const disk = this.#disks.get(d)!
        return disk.free - disk.since - n < this.#limits.reserve_bytes
      }
      await Promise.all(dirs.filter(short).map((d) => this.#measure(d, true)))
      // From here on synchronous: checked and charged as one step, whatever else runs.
      const { per_login_bytes, per_share_bytes, total_bytes } = this.#limits
      const u = this.usage(owner)
      if (owner.login !== null && u.login + n > per_login_bytes) throw overLogin(per_login_bytes)
      if (owner.share !== null && u.share + n > per_share_bytes) throw overShare(per_share_bytes)
      if (this.#total + n > total_bytes) throw new FsError('ENOSPC', `the server's room for staged uploads is full (${total_bytes} bytes): try again later`)
      if (dirs.some(short)) throw new FsError('ENOSPC', "no space left on the server's disk for staged uploads (a reserve is kept for the service itself)")
    }
    this.#add(owner, n)
    const disk = this.#disks.get(dir)
    if (disk) disk.since += n
  }

  /** @internal gives back `n` bytes of `owner`'s */
  give(owner: StagingOwner, n: number): void {
    this.#add(owner, -n)
  }

  #add(owner: StagingOwner, n: number): void {
    this.#total += n
    for (const key of [owner.login === null ? null : loginKey(owner.login), owner.share === null ? null : shareKey(owner.share)]) {
      if (key === null) continue
      const v = (this.#byKey.get(key) ?? 0) + n
      if (v > 0) this.#byKey.set(key, v)
      else this.#byKey.delete(key)
    }
  }

  async #measure(dir: string, fresh: boolean): Promise<void> {
    const known = this.#disks.get(dir)
    if (known && !fresh && Date.now() - known.measured < DISK_MEASURE_MS) return
    const free = await this.#freeBytes(dir).catch(() => Infinity)
    this.#disks.set(dir, { free, measured: Date.now(), since: 0 })
  }
}

/** The bytes of one staged file, counted against its owner's limits while it exists. */
export class StagingHold {
  readonly #quota: StagingQuota
  readonly #dir: string
  readonly #owner: StagingOwner
  #bytes = 0
  #released = false

  /** @internal made by StagingQuota.hold */
  constructor(quota: StagingQuota, dir: string, owner: StagingOwner) {
    this.#quota = quota
    this.#dir = dir
    this.#owner = owner
  }

  get bytes(): number {
    return this.#bytes
  }

  /** Charges `n` more bytes, before they are written. @throws FsError EFBIG (the owner's limit) or ENOSPC (the server's) */
  async grow(n: number): Promise<void> {
    if (this.#released) throw new FsError('ECANCELED', 'this staged upload is gone')
    if (n <= 0) return
    await this.#quota.charge(this.#dir, this.#owner, n, true)
    if (this.#released) {
      this.#quota.give(this.#owner, n) // released while the disk was measured
      throw new FsError('ECANCELED', 'this staged upload is gone')
    }
    this.#bytes += n
  }

  /** Gives back `n` bytes (a part removed, a reservation not used). */
  shrink(n: number): void {
    this.setTo(this.#bytes - n)
  }

  /**
   * Counts exactly `size` bytes, without refusing any: what is on disk (an upload staged
   * before a restart, found again; a write that failed half-way).
   */
  setTo(size: number): void {
    if (this.#released) return
    const n = Math.max(0, size) - this.#bytes
    if (n > 0) void this.#quota.charge(this.#dir, this.#owner, n, false)
    else if (n < 0) this.#quota.give(this.#owner, -n)
    this.#bytes += n
  }

  /** The file is gone: its bytes are given back. Once. */
  release(): void {
    if (this.#released) return
    this.#released = true
    this.#quota.give(this.#owner, this.#bytes)
    this.#bytes = 0
  }
}

async function statfsFree(dir: string): Promise<number> {
  try {
    const s = await statfs(dir)
    return s.bavail * s.bsize
  } catch {
    return Infinity // not there yet (made by the first write): the write itself tells
  }
}

const loginKey = (login: string) => `login\0${login}`
const shareKey = (share: string) => `share\0${share}`
const overLogin = (limit: number) => new FsError('EFBIG', `this login's staged uploads would be over their limit (${limit} bytes): finish or cancel some first`)
const overShare = (limit: number) => new FsError('EFBIG', `the staged uploads through this share link would be over their limit (${limit} bytes)`)

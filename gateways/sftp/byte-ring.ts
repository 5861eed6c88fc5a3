/**
 * @module gateways/sftp/byte-ring
 * A one-way byte stream between two threads over shared memory: one writer, one reader,
 * a ring of `capacity` bytes in a SharedArrayBuffer. Moving a buffer through a
 * MessagePort costs tens of microseconds per message, whatever its size (measured
 * here: an SSH connection's ciphertext in 64 KiB socket reads spent more time in
 * postMessage than in its cipher); a copy into the ring costs a memcpy, and the reader
 * is woken by a tiny message only when it asked to be (it has read everything).
 *
 * The header's four 32-bit words: bytes written and bytes read (both counted modulo
 * 2^32; their difference is what the ring holds), whether the reader waits for a
 * wake-up, whether the writer waits for room.
 */

const HEAD = 0
const TAIL = 1
/** 1: the writer has written since the reader last looked (a wake-up is on its way). */
const WOKEN = 2
/** 1: the writer waits for room (the reader tells it when it has read). */
const WAITING = 3
const HEADER_BYTES = 16

export class ByteRing {
  readonly sab: SharedArrayBuffer
  readonly capacity: number
  readonly #h: Int32Array
  readonly #data: Uint8Array

  /** A new ring (`capacity` bytes, a power of two), or one made by the other thread (its `sab`). */
  constructor(from: number | SharedArrayBuffer) {
    // Positions count modulo 2^32: a place in the ring is one modulo its capacity only when the capacity divides 2^32.
    if (typeof from === 'number' && (from & (from - 1)) !== 0) throw new Error('a ring\'s capacity is a power of two')
    this.sab = typeof from === 'number' ? new SharedArrayBuffer(HEADER_BYTES + from) : from
    this.capacity = this.sab.byteLength - HEADER_BYTES
    this.#h = new Int32Array(this.sab, 0, 4)
    this.#data = new Uint8Array(this.sab, HEADER_BYTES, this.capacity)
  }

  /** Bytes the ring holds. */
  get used(): number {
    return (Atomics.load(this.#h, HEAD) - Atomics.load(this.#h, TAIL)) >>> 0
  }

  /**
   * Writer: copies as much of `src` as fits; returns how many bytes, and whether the
   * reader must be woken (it had read everything before: a wake-up message is due).
   */
  write(src: Uint8Array): { readonly n: number; readonly wake: boolean } {
    const head = Atomics.load(this.#h, HEAD) >>> 0
    const free = this.capacity - ((head - (Atomics.load(this.#h, TAIL) >>> 0)) >>> 0)
    const n = Math.min(free, src.byteLength)
    if (n === 0) return { n, wake: false }
    const at = head % this.capacity
    const first = Math.min(n, this.capacity - at)
    this.#data.set(src.subarray(0, first), at)
    if (first < n) this.#data.set(src.subarray(first, n), 0)
    Atomics.store(this.#h, HEAD, (head + n) | 0)
    return { n, wake: Atomics.exchange(this.#h, WOKEN, 1) === 0 }
  }

  /** Writer: asks to be told when there is room; false when there already is (write again). */
  waitForRoom(): boolean {
    Atomics.store(this.#h, WAITING, 1)
    if (this.used < this.capacity) {
      Atomics.store(this.#h, WAITING, 0)
      return false
    }
    return true
  }

  /**
   * Reader: everything the ring holds, copied out into a buffer of its own (null when
   * empty), and whether the writer waits for room (a message is due). Call it on each
   * wake-up: it re-arms the wake-up first, so bytes written meanwhile wake it again.
   */
  read(): { readonly data: Buffer | null; readonly room: boolean } {
    Atomics.store(this.#h, WOKEN, 0)
    const tail = Atomics.load(this.#h, TAIL) >>> 0
    const n = ((Atomics.load(this.#h, HEAD) >>> 0) - tail) >>> 0
    if (n === 0) return { data: null, room: false }
    const out = Buffer.allocUnsafeSlow(n)
    const at = tail % this.capacity
    const first = Math.min(n, this.capacity - at)
    out.set(this.#data.subarray(at, at + first), 0)
    if (first < n) out.set(this.#data.subarray(0, n - first), first)
    Atomics.store(this.#h, TAIL, (tail + n) | 0)
    return { data: out, room: Atomics.exchange(this.#h, WAITING, 0) === 1 }
  }
}

/**
 * @module gateways/sftp/handles
 * One SFTP session's open handles: random ids (a client cannot guess another
 * session's, nor reuse a closed one), and a cap per session.
 */
import { randomBytes } from 'node:crypto'

export class HandleTable<T> {
  private readonly open = new Map<string, T>()

  constructor(readonly max: number) {}

  get size(): number {
    return this.open.size
  }

  /** A new handle id for `value`, or null when the session holds `max` handles already. */
  add(value: T): Buffer | null {
    if (this.open.size >= this.max) return null
    const id = randomBytes(16)
    this.open.set(id.toString('hex'), value)
    return id
  }

  get(id: Buffer): T | undefined {
    return this.open.get(id.toString('hex'))
  }

  /** Removes and returns it. */
  take(id: Buffer): T | undefined {
    const key = id.toString('hex')
    const v = this.open.get(key)
    this.open.delete(key)
    return v
  }

  /** Empties the table, returning what was open. */
  drain(): T[] {
    const all = [...this.open.values()]
    this.open.clear()
    return all
  }
}

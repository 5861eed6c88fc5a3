/**
 * @module workers/staged-client
 * MAIN THREAD. Staged uploads (core/staged.ts) over the worker pool: each op is a
 * message to a pool thread (workers/staged/actor.ts), a write streams its body there
 * with credits (core/port-stream.ts). Nothing here touches the disk, and no staged byte
 * comes back this way: a commit reads them on the thread that writes the target (the
 * view's `commitStaged`).
 *
 * A write of a part that fails for any reason, the death of its thread included, ends
 * with the part removed (on another thread): no debris, and other uploads never notice.
 */
import { MessageChannel } from 'node:worker_threads'
import { FsError } from '../core/errors.js'
import { PortWriter } from '../core/port-stream.js'
import type { StagedArea, StagedEntry, StagedLayout, StagedState, StagedUploads, StagedWriteOptions, StagedWriteResult } from '../core/staged.js'
import type { WorkerPool } from './pool.js'

export class PoolStaged implements StagedUploads {
  readonly #pool: WorkerPool

  constructor(pool: WorkerPool) {
    this.#pool = pool
  }

  area(dir: string): StagedArea {
    return new PoolStagedArea(this.#pool, dir)
  }

  async freeBytes(dir: string): Promise<number> {
    return await this.#pool.staged({ op: 'freeBytes', dir })
  }
}

class PoolStagedArea implements StagedArea {
  readonly #pool: WorkerPool
  readonly dir: string

  constructor(pool: WorkerPool, dir: string) {
    this.#pool = pool
    this.dir = dir
  }

  async prepare(): Promise<void> {
    await this.#pool.staged({ op: 'prepare', area: this.dir })
  }

  async create(id: string, layout: StagedLayout): Promise<void> {
    await this.#pool.staged({ op: 'create', area: this.dir, id, layout })
  }

  async write(id: string, opts: StagedWriteOptions, body: AsyncIterable<Uint8Array>): Promise<StagedWriteResult> {
    const { port1, port2 } = new MessageChannel()
    const writer = new PortWriter(port1)
    const { part, offset, digest, signal } = opts
    const req = { op: 'write' as const, area: this.dir, id, offset, port: port2, ...(part === undefined ? {} : { part }), ...(digest === undefined ? {} : { digest }) }
    const task = this.#pool.staged(req, { lane: 'transfer', transfer: [port2], ...(signal === undefined ? {} : { signal }) })
    // The body's own failure (a client gone, a signature wrong at the end) is what the caller hears.
    let failure: { err: unknown } | null = null
    const handOver = opts.handOver === true
    const source = (async function* () {
      try {
        for await (const chunk of body) yield handOver ? chunk : new Uint8Array(chunk)
      } catch (err) {
        failure = { err }
        throw err
      }
    })()
    writer.pipeFrom(source).catch(() => {
      // Cancelled by the worker (it failed, or stopped): its reply tells why.
    })
    try {
      return await task
    } catch (err) {
      // A part that did not finish goes, whoever failed (the worker removed it already unless its thread died).
      if (part !== undefined) await this.#removeCutOff(id, part)
      throw failure === null ? err : (failure as { err: unknown }).err
    } finally {
      writer.fail(new FsError('ECANCELED', 'upload stopped')) // no-op once ended
      port1.close()
    }
  }

  /**
   * Removes a part that did not finish. When its thread died, another may be going down
   * too (the pool replaces threads within a second): tried again a few times meanwhile,
   * in the background, so that the answer does not wait.
   */
  async #removeCutOff(id: string, part: string, tries = 5): Promise<void> {
    try {
      await this.remove(id, part)
    } catch {
      if (tries > 1) setTimeout(() => void this.#removeCutOff(id, part, tries - 1), 1000).unref()
    }
  }

  async state(id: string): Promise<StagedState | null> {
    return await this.#pool.staged({ op: 'state', area: this.dir, id })
  }

  async remove(name: string, part?: string): Promise<number> {
    return await this.#pool.staged({ op: 'remove', area: this.dir, name, ...(part === undefined ? {} : { part }) })
  }

  async entries(): Promise<StagedEntry[]> {
    return await this.#pool.staged({ op: 'entries', area: this.dir })
  }

  async take(name: string): Promise<string | null> {
    return await this.#pool.staged({ op: 'take', area: this.dir, name })
  }
}

/**
 * @module workers/transfers
 * WORKER THREAD. Live transfers as actors: a stream that outlives the task that started
 * it. Starting one is part of a task (opening the file, sending its head in the task's
 * reply); the actor then owns its port and its held driver until the stream ends, is
 * cancelled by its reader (a `cancel` frame aborts its signal), or fails (the error goes
 * down the stream). It holds no task slot; between credits it holds no bytes.
 *
 * A live transfer costs one entry here, with its own signal, and nothing else while idle.
 */
import { MessageChannel, type MessagePort, threadId } from 'node:worker_threads'
import type { OpContext } from '../core/driver.js'
import { isFsError } from '../core/errors.js'
import { ByteBudget, PortWriter } from '../core/port-stream.js'
import type { PoolWorkerData } from '../core/worker-data.js'

/** A stream ready to go: its head (in the task's reply) and its bytes. */
export interface Outgoing<H> {
  readonly head: H
  readonly body: AsyncIterable<Uint8Array>
}

let live = 0

/** Live outgoing actors in this thread. */
export const liveTransfers = (): number => live

/** Shared by this thread's incoming streams (uploads). */
export function uploadBudget(data: Partial<PoolWorkerData> | null | undefined): ByteBudget {
  return new ByteBudget(data?.uploadBufferBytes ?? 64 * 1024 * 1024)
}

/**
 * Opens an outgoing stream within a task: `open` runs with a signal that aborts when the
 * task is cancelled or, later, when the reader cancels; its errors are the task's. Then
 * the actor pumps the body on its own, and `done` runs when it is over (to release what
 * it holds). Returns the head and the reader's port, for the task's reply.
 */
export async function startOutgoing<H>(
  task: OpContext,
  open: (ctx: OpContext) => Promise<Outgoing<H>>,
  done: () => void,
): Promise<{ head: H; port: MessagePort }> {
  const { port1, port2 } = new MessageChannel()
  const w = new PortWriter(port1)
  const ctx: OpContext = { requestId: task.requestId, signal: AbortSignal.any([task.signal, w.signal]) }
  let out: Outgoing<H>
  try {
    out = await open(ctx)
  } catch (err) {
    port1.close()
    port2.close()
    done()
    throw err
  }
  live++
  w.pipeFrom(out.body)
    .catch((err: unknown) => {
      // Already sent down the stream (or the reader cancelled). A bug also goes to this thread's log.
      if (!isFsError(err)) console.error(JSON.stringify({ level: 'error', thread: threadId, requestId: task.requestId, msg: 'stream failed', err: String((err as Error)?.stack ?? err) }))
    })
    .finally(() => {
      live--
      done()
    })
  return { head: out.head, port: port2 }
}

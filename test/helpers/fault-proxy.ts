/**
 * A TCP fault proxy for tests: listens on 127.0.0.1 and a free port and forwards to a
 * backend server, in one of three modes, switched at any time:
 * - `pass`: bytes flow both ways;
 * - `blackhole`: new connections are accepted and never answered, and the open ones
 *   stall mid-stream (bytes in either direction are dropped, the sockets stay open),
 *   as a server that hangs or a network that drops packets;
 * - `cut`: every open connection is destroyed, and new ones too as they arrive.
 * `open()` counts the client connections open right now: the backend sessions that
 * filegate holds to that server.
 */
import { type Server, type Socket, connect, createServer } from 'node:net'
import type { Test } from 'tap'

export type FaultMode = 'pass' | 'blackhole' | 'cut'

export interface FaultProxy {
  readonly port: number
  mode: FaultMode
  /** Client connections open now. */
  open(): number
  /**
   * Resolves once `bytes` more bytes went through in direction `dir` (`down`: server to
   * client, `up`: client to server), switching to `blackhole` at that instant, so a
   * fault lands mid-stream wherever the transfer is: the test then stops the server,
   * cuts, or lets the blackhole stand.
   */
  trip(dir: 'up' | 'down', bytes: number): Promise<void>
  /** Destroys every open connection now (the mode stays). */
  dropAll(): void
  /** Forgets the trips not reached (their promises never resolve). */
  cancelTrips(): void
  /** Resolves once `open()` satisfies `ok`, rejects after `timeoutMs` with the count. */
  waitOpen(ok: (n: number) => boolean, timeoutMs?: number): Promise<number>
}

interface Pair {
  readonly client: Socket
  upstream: Socket | null
}

export async function startFaultProxy(t: Test, target: number): Promise<FaultProxy> {
  const pairs = new Set<Pair>()
  let mode: FaultMode = 'pass'
  const drop = (p: Pair): void => {
    p.client.destroy()
    p.upstream?.destroy()
  }
  /** Bytes go through only while passing (with back-pressure); a blackhole swallows them mid-stream. */
  const trips: { dir: 'up' | 'down'; left: number; done: () => void }[] = []
  const count = (dir: 'up' | 'down', n: number): void => {
    for (const tr of [...trips]) {
      if (tr.dir !== dir || (tr.left -= n) > 0) continue
      trips.splice(trips.indexOf(tr), 1)
      mode = 'blackhole'
      tr.done()
    }
  }
  const relay = (from: Socket, to: Socket, dir: 'up' | 'down'): void => {
    from.on('data', (b: Buffer) => {
      if (mode !== 'pass') return
      count(dir, b.length)
      if (to.write(b)) return
      from.pause()
      to.once('drain', () => from.resume())
    })
  }
  const server: Server = createServer((client) => {
    const p: Pair = { client, upstream: null }
    pairs.add(p)
    client.once('close', () => {
      pairs.delete(p)
      p.upstream?.destroy()
    })
    client.on('error', () => {})
    if (mode === 'cut') return drop(p)
    // Accepted, never answered: no upstream at all. Its bytes are read and dropped, so
    // that the client closing it is seen (a paused socket never sees the end).
    if (mode === 'blackhole') return void client.resume()
    const up = connect(target, '127.0.0.1')
    p.upstream = up
    up.on('error', () => client.destroy())
    up.once('close', () => client.destroy())
    relay(client, up, 'up')
    relay(up, client, 'down')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const p of pairs) drop(p)
        server.close(() => resolve())
      }),
  )
  const open = (): number => pairs.size
  return {
    port: (server.address() as { port: number }).port,
    get mode() {
      return mode
    },
    set mode(m: FaultMode) {
      mode = m
      if (m === 'cut') for (const p of pairs) drop(p)
    },
    open,
    trip: (dir, bytes) => new Promise<void>((done) => void trips.push({ dir, left: bytes, done })),
    cancelTrips: () => void trips.splice(0),
    dropAll: () => pairs.forEach(drop),
    async waitOpen(ok, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!ok(open())) {
        if (Date.now() > deadline) throw new Error(`the proxy still has ${open()} open connections after ${timeoutMs} ms`)
        await new Promise((r) => setTimeout(r, 50))
      }
      return open()
    },
  }
}

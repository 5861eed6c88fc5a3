/**
 * @module gateways/sftp/ssh-threads
 * MAIN THREAD. The SSH threads: each SSH connection is pinned to one of them
 * (round-robin), which runs its SSH (key exchange, ciphers, MACs) and its SFTP sessions
 * (./ssh-thread/entry.ts). The main thread keeps the TCP socket and relays its bytes
 * through two shared-memory rings of the connection's own (./byte-ring.ts; a worker
 * thread cannot take a socket), a MessagePort carrying the wake-ups and the rest: what
 * the client sends goes into one ring as it is read (a full ring pauses the socket);
 * what the thread puts in the other is written to the socket, and each write handed to
 * the system is told back (the thread's send budget counts on it). Everything that needs the service is asked of this side and answered here: the
 * login (its delays and throttle, per-user limits), the view's calls and its open files
 * (rights, transfer limits, the pool). A login's view ended from outside ends the
 * connection there; the socket's close aborts the connection's open files and closes its
 * view here, whatever the thread does.
 */
import { setMaxListeners } from 'node:events'
import { existsSync } from 'node:fs'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads'
import type { DoorMeter } from '../../core/doors.js'
import { FsError, isFsError, toWire } from '../../core/errors.js'
import type { GatewayLogin } from '../../core/gateway.js'
import type { FileHandle, RequestContext, View } from '../../core/view.js'
import { ByteRing } from './byte-ring.js'
import { MAX_SESSIONS } from './connection.js'
import { MAX_HANDLES } from './limits.js'
import type { Work } from './session.js'
import { type Call, type FromSsh, type FromThread, type LoginReply, type NewConnection, type ThreadData, type ToSsh, VIEW_CALLS } from './thread-messages.js'

/**
 * Each direction's ring (./byte-ring.ts), per connection: what the main thread reads ahead
 * of its SSH thread, and what the thread writes ahead of the socket. Memory is taken as
 * it is first used: an idle connection touches only the first pages of each.
 */
const RING_BYTES = 512 * 1024
/** How long a socket whose thread asked it closed may take to send what it still holds. */
const CLOSE_GUARD_MS = 5000

type Log = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void

export interface ThreadedConnection {
  readonly login: GatewayLogin
  readonly meter?: DoorMeter
  readonly log: Log
  /** The connection's work (open files, calls in flight): a shutdown waits for it. */
  readonly work: Work
  /** The client's address (a balancer's PROXY header's). */
  readonly ip: string
  onHandshake(): void
  onLoggedIn(): void
}

/** The thread's script: the compiled entry.js; run from source (tests, tsx), a CommonJS starter. */
function script(): string {
  const js = fileURLToPath(new URL('./ssh-thread/entry.js', import.meta.url))
  return existsSync(js) ? js : fileURLToPath(new URL('./ssh-thread/from-source.cjs', import.meta.url))
}

export class SshThreads {
  readonly #threads: (Worker | null)[]
  readonly #ready: Promise<void>[] = []
  readonly #hostKey: string
  readonly #log: Log
  #next = 0
  #stopped = false

  constructor(hostKey: string, count: number, log: Log) {
    this.#hostKey = hostKey
    this.#log = log
    this.#threads = Array.from({ length: Math.max(1, count) }, () => null)
  }

  /** Starts every thread; resolves once each has its SSH server ready (a thread from the sources takes a moment). */
  async start(): Promise<void> {
    for (let i = 0; i < this.#threads.length; i++) this.#thread(i)
    await Promise.all(this.#ready)
  }

  get count(): number {
    return this.#threads.length
  }

  #thread(i: number): Worker {
    const running = this.#threads[i]
    if (running) return running
    const w = new Worker(script(), { workerData: { hostKey: this.#hostKey } satisfies ThreadData })
    w.unref()
    w.on('message', (m: FromThread) => {
      if (m.t === 'log') this.#log(m.level, m.msg, m.fields)
    })
    this.#ready[i] = new Promise<void>((resolve, reject) => {
      const onReady = (m: FromThread) => {
        if (m.t !== 'ready') return
        w.off('message', onReady)
        w.off('exit', onExit)
        resolve()
      }
      const onExit = (code: number) => reject(new Error(`sftp.threads: an SSH thread stopped while starting (exit code ${code})`))
      w.on('message', onReady)
      w.once('exit', onExit)
    })
    w.on('error', (err) => this.#log('error', 'sftp thread failed', { err: String(err?.stack ?? err) }))
    w.once('exit', (code) => {
      if (this.#threads[i] === w) this.#threads[i] = null
      if (!this.#stopped) this.#log('error', 'sftp thread stopped: its connections were closed', { code })
    })
    this.#threads[i] = w
    return w
  }

  /** Hands `socket` (its PROXY header read, if any) to the next thread. */
  adopt(socket: Socket, c: ThreadedConnection): void {
    const i = this.#next
    this.#next = (i + 1) % this.#threads.length
    const { port1, port2 } = new MessageChannel()
    const inRing = new ByteRing(RING_BYTES)
    const outRing = new ByteRing(RING_BYTES)
    relay(socket, port1, inRing, outRing, c)
    const m: NewConnection = { t: 'conn', port: port2, rings: { in: inRing.sab, out: outRing.sab }, ip: c.ip, family: socket.remoteFamily ?? 'IPv4', remotePort: socket.remotePort ?? 0 }
    this.#thread(i).postMessage(m, [port2])
  }

  /** Ends the threads (their connections are gone by then). */
  async stop(): Promise<void> {
    this.#stopped = true
    await Promise.all(this.#threads.map((w) => w?.terminate()))
  }
}

/** Relays one connection between its socket and its thread, and answers the thread's calls. */
function relay(socket: Socket, port: MessagePort, inRing: ByteRing, outRing: ByteRing, c: ThreadedConnection): void {
  const life = new AbortController()
  // Every open file, and every call in flight, listens to the connection's end (as a session's signal: ./session.ts).
  setMaxListeners(MAX_HANDLES * MAX_SESSIONS + 1024, life.signal)
  const files = new Map<number, FileHandle>()
  let nextFile = 1
  let raw: View | null = null
  let view: View | null = null
  let paused = false
  let sent = 0
  let sentQueued = false
  let over = false
  const sessions: (() => void)[] = []

  const post = (m: ToSsh, transfer: ArrayBuffer[] = []): void => {
    if (over) return
    try {
      port.postMessage(m, transfer)
    } catch {
      // The thread went: the port's close ends the socket.
    }
  }

  // From the client: into the ring as read; what does not fit waits, the socket paused.
  const pending: Uint8Array[] = []
  let eof = false
  const pump = (): void => {
    while (pending.length > 0) {
      const chunk = pending[0]!
      const w = inRing.write(chunk)
      if (w.wake) post({ t: 'more' })
      if (w.n === chunk.byteLength) {
        pending.shift()
        continue
      }
      pending[0] = chunk.subarray(w.n)
      if (inRing.waitForRoom()) {
        if (!paused) {
          paused = true
          socket.pause()
        }
        return
      }
    }
    if (paused) {
      paused = false
      socket.resume()
    }
    if (eof) {
      eof = false
      post({ t: 'eof' })
    }
  }
  socket.on('data', (chunk: Buffer) => {
    pending.push(chunk)
    if (pending.length === 1) pump()
  })
  socket.once('end', () => {
    eof = true
    if (pending.length === 0) pump()
  })
  // To the client: the ring read to its end at each wake-up.
  const drainOut = (): void => {
    const { data, room } = outRing.read()
    if (room) post({ t: 'room' })
    if (data === null || !socket.writable) return
    const n = data.byteLength
    socket.write(data, () => tellSent(n))
  }
  socket.on('error', () => {})
  socket.once('close', () => {
    post({ t: 'close' })
    over = true
    life.abort()
    for (const f of files.values()) {
      f.abort()
      c.work.busy--
    }
    files.clear()
    raw?.close()
    for (const end of sessions.splice(0)) end()
    port.close()
  })
  port.once('close', () => {
    if (!socket.destroyed) socket.destroy()
  })

  const tellSent = (bytes: number) => {
    sent += bytes
    if (sentQueued) return
    sentQueued = true
    setImmediate(() => {
      sentQueued = false
      const n = sent
      sent = 0
      post({ t: 'sent', bytes: n })
    })
  }

  port.on('message', (m: FromSsh) => {
    switch (m.t) {
      case 'more':
        return drainOut()
      case 'room':
        return pump()
      case 'end':
        drainOut()
        socket.end()
        return
      case 'destroy':
        drainOut()
        if (socket.writableLength === 0) return void socket.destroy()
        socket.end()
        setTimeout(() => socket.destroy(), CLOSE_GUARD_MS).unref()
        return
      case 'handshake':
        c.onHandshake()
        return
      case 'log':
        c.log(m.level, m.msg, m.fields)
        return
      case 'meter': {
        for (const [error, n] of Object.entries(m.requests)) for (let i = 0; i < n; i++) c.meter?.request(error === '' ? undefined : error)
        for (let i = 0; i < m.opened; i++) if (c.meter) sessions.push(c.meter.session())
        for (let i = 0; i < m.ended; i++) sessions.shift()?.()
        return
      }
      case 'closeView':
        raw?.close()
        return
      case 'abort': {
        const f = files.get(m.handle)
        if (f === undefined) return
        files.delete(m.handle)
        c.work.busy--
        f.abort()
        return
      }
      case 'call':
        return void answer(m.id, m.call)
    }
  })

  const answer = async (id: number, call: Call): Promise<void> => {
    const counted = call.op !== 'login' && call.op !== 'keyAuthorized'
    if (counted) c.work.busy++
    try {
      const [value, transfer] = await serve(call)
      post({ t: 'reply', id, ok: true, value }, transfer)
    } catch (err) {
      if (!isFsError(err)) c.log('error', 'sftp request failed', { op: call.op, err: String((err as Error)?.stack ?? err) })
      post({ t: 'reply', id, ok: false, error: toWire(err) })
    } finally {
      if (counted) c.work.busy--
    }
  }

  const ctxOf = (x: { requestId: string; client?: { address: string; credential: string } }): RequestContext => ({ requestId: x.requestId, signal: life.signal, ...(x.client ? { client: x.client } : {}) })

  const serve = async (call: Call): Promise<[unknown, ArrayBuffer[]]> => {
    switch (call.op) {
      case 'login': {
        if (raw !== null) throw new FsError('EINVAL', 'already logged in')
        const base = { door: 'sftp' as const, address: c.ip, requestId: call.requestId, user: call.user }
        const r = await c.login.login(call.password !== undefined ? { ...base, password: call.password } : { ...base, publicKey: call.publicKey! })
        if (!r.ok) return [{ ok: false, reason: r.reason, message: r.message } satisfies LoginReply, []]
        if (over || raw !== null) {
          r.fs.close()
          throw new FsError('ECANCELED', 'the connection is over')
        }
        raw = r.fs
        view = c.meter ? c.meter.fs(r.fs) : r.fs
        const ended = r.fs.ended
        if (ended !== undefined) {
          if (ended.aborted) queueMicrotask(() => post({ t: 'ended' }))
          else ended.addEventListener('abort', () => post({ t: 'ended' }), { once: true })
        }
        c.onLoggedIn()
        return [{ ok: true, user: r.user, permissions: r.fs.permissions, identity: r.fs.identity, abilities: r.fs.abilities } satisfies LoginReply, []]
      }
      case 'keyAuthorized':
        return [await c.login.keyAuthorized(call.user, call.key), []]
      case 'view': {
        const v = loggedIn()
        if (!VIEW_CALLS.includes(call.method)) throw new FsError('EINVAL', `no such call: ${String(call.method)}`)
        const fn = v[call.method] as (ctx: RequestContext, ...args: unknown[]) => Promise<unknown>
        return [await fn.call(v, ctxOf(call.ctx), ...call.args), []]
      }
      case 'open': {
        const f = await loggedIn().open(ctxOf(call.ctx), call.path, call.flags)
        if (over) {
          f.abort()
          throw new FsError('ECANCELED', 'the connection is over')
        }
        const handle = nextFile++
        files.set(handle, f)
        c.work.busy++
        return [{ handle, path: f.path, flags: f.flags }, []]
      }
      case 'file': {
        const f = files.get(call.handle)
        if (f === undefined) throw new FsError('EINVAL', 'no such handle')
        switch (call.method) {
          case 'read': {
            const [offset, length] = call.args as [number, number]
            const data = await f.read(offset, length)
            const whole = data.byteOffset === 0 && data.buffer instanceof ArrayBuffer && data.byteLength === data.buffer.byteLength
            const out = whole ? data : new Uint8Array(data)
            return [out, [out.buffer as ArrayBuffer]]
          }
          case 'write': {
            const [offset, data] = call.args as [number, Uint8Array]
            await f.write(offset, data, { give: true })
            return [null, []]
          }
          case 'stat':
            return [await f.stat(), []]
          case 'truncate':
            await f.truncate(call.args[0] as number)
            return [null, []]
          case 'close': {
            try {
              return [await f.close(), []]
            } finally {
              if (files.delete(call.handle)) c.work.busy--
            }
          }
        }
      }
    }
    throw new FsError('EINVAL', 'no such call')
  }

  const loggedIn = (): View => {
    if (view === null) throw new FsError('EACCES', 'not logged in')
    return view
  }
}

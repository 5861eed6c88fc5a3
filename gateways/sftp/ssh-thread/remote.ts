/**
 * @module gateways/sftp/ssh-thread/remote
 * SSH THREAD. The login, the view and its open files as an SSH thread uses them: each
 * call is a request on the connection's port that the main thread answers with the
 * real ones (../ssh-threads.ts), so the login's delays and throttle, the rights, the
 * transfer limits and the worker pool stay where they are. A WRITE's bytes are copied
 * once into a buffer of their own and moved across; a READ's bytes come back moved.
 */
import { FsError, fromWire } from '../../../core/errors.js'
import type { GatewayLogin, LoginRequest, LoginResult, PublicKey } from '../../../core/gateway.js'
import type { Permissions } from '../../../core/permissions.js'
import type { FileHandle, FsAbilities, FsEntry, ListPage, OpenFlags, RequestContext, View } from '../../../core/view.js'
import type { Call, CallContext, FileCall, LoginReply, OpenAnswer, ToSsh, ViewCall } from '../thread-messages.js'
import type { PortSocket } from './port-socket.js'

type Waiter = { resolve(v: unknown): void; reject(err: unknown): void }

/** The connection's requests to the main thread, each answered once. */
export class Calls {
  readonly #calls = new Map<number, Waiter>()
  #next = 1
  #socket: PortSocket | null = null
  #over = false

  attach(socket: PortSocket): void {
    this.#socket = socket
    socket.once('close', () => this.end())
  }

  call<V>(call: Call, transfer: ArrayBuffer[] = []): Promise<V> {
    if (this.#over || this.#socket === null) return Promise.reject(over())
    const id = this.#next++
    return new Promise<V>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.#socket!.post({ t: 'call', id, call }, transfer)
    })
  }

  reply(m: Extract<ToSsh, { t: 'reply' }>): void {
    const w = this.#calls.get(m.id)
    if (w === undefined) return
    this.#calls.delete(m.id)
    if (m.ok) w.resolve(m.value)
    else w.reject(fromWire(m.error))
  }

  /** The connection is over: every request still waiting fails. */
  end(): void {
    this.#over = true
    for (const w of this.#calls.values()) w.reject(over())
    this.#calls.clear()
  }

  post(m: Parameters<PortSocket['post']>[0]): void {
    this.#socket?.post(m)
  }
}

const over = () => new FsError('ECANCELED', 'the connection is over')

/** The gateway login, asked of the main thread. */
export function remoteLogin(calls: Calls, ended: AbortSignal): GatewayLogin {
  return {
    async login(req: LoginRequest): Promise<LoginResult> {
      const r = await calls.call<LoginReply>({
        op: 'login',
        user: req.user,
        requestId: req.requestId,
        ...(req.password !== undefined ? { password: req.password } : {}),
        ...(req.publicKey !== undefined ? { publicKey: { algo: req.publicKey.algo, data: req.publicKey.data } } : {}),
      })
      if (!r.ok) return r
      return { ok: true, user: r.user, fs: new RemoteView(calls, r.permissions, r.identity, r.abilities, ended) }
    },
    keyAuthorized(user: string, key: PublicKey): Promise<boolean> {
      return calls.call<boolean>({ op: 'keyAuthorized', user, key: { algo: key.algo, data: key.data } })
    },
  }
}

const crossing = (ctx: RequestContext): CallContext => ({ requestId: ctx.requestId, ...(ctx.client ? { client: ctx.client } : {}) })

/** The login's view: every call answered by the main thread's view. */
class RemoteView implements View {
  readonly permissions: Permissions
  readonly identity: string
  readonly abilities: FsAbilities
  readonly ended: AbortSignal
  readonly #calls: Calls
  #closed = false

  constructor(calls: Calls, permissions: Permissions, identity: string, abilities: FsAbilities, ended: AbortSignal) {
    this.#calls = calls
    this.permissions = permissions
    this.identity = identity
    this.abilities = abilities
    this.ended = ended
  }

  #view<V>(method: ViewCall, ctx: RequestContext, ...args: unknown[]): Promise<V> {
    return this.#calls.call<V>({ op: 'view', method, ctx: crossing(ctx), args })
  }

  stat(ctx: RequestContext, path: string): Promise<FsEntry> {
    return this.#view('stat', ctx, path)
  }
  lstat(ctx: RequestContext, path: string): Promise<FsEntry> {
    return this.#view('lstat', ctx, path)
  }
  list(ctx: RequestContext, dir: string, opts?: { readonly cursor?: string | null; readonly after?: string; readonly limit?: number }): Promise<ListPage> {
    return this.#view('list', ctx, dir, opts)
  }
  listAll(ctx: RequestContext, dir: string): Promise<FsEntry[]> {
    return this.#view('listAll', ctx, dir)
  }
  readFile(): never {
    throw new FsError('ENOTSUP', 'not served in an SSH thread')
  }
  writeFile(): never {
    throw new FsError('ENOTSUP', 'not served in an SSH thread')
  }
  zip(): never {
    throw new FsError('ENOTSUP', 'not served in an SSH thread')
  }
  commitStaged(): never {
    throw new FsError('ENOTSUP', 'not served in an SSH thread')
  }
  checkWrite(ctx: RequestContext, path: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#view('checkWrite', ctx, path, opts)
  }
  makeFolders(ctx: RequestContext, dir: string): Promise<void> {
    return this.#view('makeFolders', ctx, dir)
  }
  removeTree(ctx: RequestContext, path: string): Promise<void> {
    return this.#view('removeTree', ctx, path)
  }
  move(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#view('move', ctx, from, to, opts)
  }
  touch(ctx: RequestContext, path: string): Promise<void> {
    return this.#view('touch', ctx, path)
  }
  mkdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#view('mkdir', ctx, dir)
  }
  rmdir(ctx: RequestContext, dir: string): Promise<void> {
    return this.#view('rmdir', ctx, dir)
  }
  unlink(ctx: RequestContext, path: string): Promise<void> {
    return this.#view('unlink', ctx, path)
  }
  rename(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<void> {
    return this.#view('rename', ctx, from, to, opts)
  }
  setTimes(ctx: RequestContext, path: string, times: { readonly mtimeMs: number; readonly atimeMs?: number }): Promise<void> {
    return this.#view('setTimes', ctx, path, times)
  }
  setMode(ctx: RequestContext, path: string, mode: number): Promise<void> {
    return this.#view('setMode', ctx, path, mode)
  }
  truncate(ctx: RequestContext, path: string, size: number): Promise<void> {
    return this.#view('truncate', ctx, path, size)
  }
  copy(ctx: RequestContext, from: string, to: string, opts: { readonly overwrite: boolean }): Promise<FsEntry> {
    return this.#view('copy', ctx, from, to, opts)
  }
  metadata(ctx: RequestContext, path: string): ReturnType<View['metadata']> {
    return this.#view('metadata', ctx, path)
  }
  space(ctx: RequestContext, path: string): ReturnType<View['space']> {
    return this.#view('space', ctx, path)
  }
  async open(ctx: RequestContext, path: string, flags: OpenFlags): Promise<FileHandle> {
    const a = await this.#calls.call<OpenAnswer>({ op: 'open', ctx: crossing(ctx), path, flags })
    return new RemoteFile(this.#calls, a)
  }
  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#calls.post({ t: 'closeView' })
  }
}

/** An open file, kept by the main thread's view (and its actor in the pool). */
class RemoteFile implements FileHandle {
  readonly path: string
  readonly flags: OpenFlags
  readonly #calls: Calls
  readonly #handle: number
  #aborted = false

  constructor(calls: Calls, a: OpenAnswer) {
    this.#calls = calls
    this.#handle = a.handle
    this.path = a.path
    this.flags = a.flags
  }

  #file<V>(method: FileCall, args: unknown[], transfer: ArrayBuffer[] = []): Promise<V> {
    return this.#calls.call<V>({ op: 'file', handle: this.#handle, method, args }, transfer)
  }

  read(offset: number, length: number): Promise<Uint8Array> {
    return this.#file('read', [offset, length])
  }

  write(offset: number, data: Uint8Array): Promise<void> {
    // The bytes are a view of the SSH packet: one copy of their own, moved across.
    const own = new Uint8Array(data)
    return this.#file('write', [offset, own], [own.buffer])
  }

  stat(): Promise<FsEntry> {
    return this.#file('stat', [])
  }

  truncate(size: number): Promise<void> {
    return this.#file('truncate', [size])
  }

  close(): Promise<void> {
    return this.#file('close', [])
  }

  abort(): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#calls.post({ t: 'abort', handle: this.#handle })
  }
}

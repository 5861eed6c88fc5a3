/**
 * @module gateways/sftp/thread-messages
 * What crosses between the main thread and an SSH thread (./ssh-threads.ts starts them,
 * ./ssh-thread/ runs in them), one MessagePort per SSH connection. The main thread owns
 * the TCP socket and the login's view; the SSH thread owns the SSH connection (key
 * exchange, ciphers, the SFTP wire layer). Ciphertext crosses in both directions through
 * shared-memory rings (./byte-ring.ts), the port carrying wake-ups; authentication, every call on the view and on its open files are requests the
 * main thread answers.
 */
import type { MessagePort } from 'node:worker_threads'
import type { FsAbilities, OpenFlags } from '../../core/view.js'
import type { Permissions } from '../../core/permissions.js'
import type { WireError } from '../../core/errors.js'
import type { PublicKey } from '../../core/gateway.js'

/** What an SSH thread is started with (`workerData`). */
export interface ThreadData {
  /** The host key (OpenSSH format): it stays in this process, as in the main thread's mode. */
  readonly hostKey: string
}

/** Main → SSH thread, on the thread's own port: a new connection and its port. */
export interface NewConnection {
  readonly t: 'conn'
  readonly port: MessagePort
  /** The ciphertext's rings (./byte-ring.ts): from the client (the main thread writes it), to the client (the SSH thread writes it). */
  readonly rings: { readonly in: SharedArrayBuffer; readonly out: SharedArrayBuffer }
  /** The client's address (its PROXY header's, behind a balancer) and the socket's port. */
  readonly ip: string
  readonly family: string
  readonly remotePort: number
}

/** SSH thread → main, on the thread's own port: its SSH server is ready, or a line for the log. */
export type FromThread = { readonly t: 'ready' } | { readonly t: 'log'; readonly level: LogLevel; readonly msg: string; readonly fields?: Record<string, unknown> }

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

/** A request context as it crosses: the main thread adds the connection's signal. */
export interface CallContext {
  readonly requestId: string
  readonly client?: { readonly address: string; readonly credential: string }
}

/** The view's calls served across (the ones with plain arguments and answers). */
export const VIEW_CALLS = ['stat', 'lstat', 'list', 'listAll', 'mkdir', 'makeFolders', 'rmdir', 'unlink', 'removeTree', 'rename', 'move', 'touch', 'copy', 'setTimes', 'setMode', 'truncate', 'metadata', 'space', 'checkWrite'] as const
export type ViewCall = (typeof VIEW_CALLS)[number]

/** An open file's calls served across (`abort` is a message of its own: no answer). */
export type FileCall = 'read' | 'write' | 'stat' | 'truncate' | 'close'

export type Call =
  | { readonly op: 'login'; readonly user: string; readonly password?: string; readonly publicKey?: PublicKey; readonly requestId: string }
  | { readonly op: 'keyAuthorized'; readonly user: string; readonly key: PublicKey }
  | { readonly op: 'view'; readonly method: ViewCall; readonly ctx: CallContext; readonly args: readonly unknown[] }
  | { readonly op: 'open'; readonly ctx: CallContext; readonly path: string; readonly flags: OpenFlags }
  | { readonly op: 'file'; readonly handle: number; readonly method: FileCall; readonly args: readonly unknown[] }

/** A successful login's view, as the SSH thread sees it. */
export interface LoginAnswer {
  readonly ok: true
  readonly user: string
  readonly permissions: Permissions
  readonly identity: string
  readonly abilities: FsAbilities
}
export type LoginReply = LoginAnswer | { readonly ok: false; readonly reason: 'refused' | 'throttled' | 'unavailable'; readonly message: string }

export interface OpenAnswer {
  readonly handle: number
  readonly path: string
  readonly flags: OpenFlags
}

/** SSH thread → main, on a connection's port. */
export type FromSsh =
  /** Ciphertext for the client is in the ring (a wake-up: the main thread reads the ring to its end). */
  | { readonly t: 'more' }
  /** The ring of ciphertext from the client has room again. */
  | { readonly t: 'room' }
  /** Ends the socket once what was written is sent (`end`), or at once (`destroy`). */
  | { readonly t: 'end' }
  | { readonly t: 'destroy' }
  /** The first key exchange is over: the connection is a real SSH client. */
  | { readonly t: 'handshake' }
  | { readonly t: 'call'; readonly id: number; readonly call: Call }
  /** The file `handle` is aborted: nothing it wrote is committed. */
  | { readonly t: 'abort'; readonly handle: number }
  /** The view is no longer needed (a login that came after the connection's end). */
  | { readonly t: 'closeView' }
  | { readonly t: 'log'; readonly level: LogLevel; readonly msg: string; readonly fields?: Record<string, unknown> }
  /** The door's counters: requests by error class ('' for none), sessions opened and ended. */
  | { readonly t: 'meter'; readonly requests: Readonly<Record<string, number>>; readonly opened: number; readonly ended: number }

/** Main → SSH thread, on a connection's port. */
export type ToSsh =
  /** Ciphertext from the client is in the ring (a wake-up). */
  | { readonly t: 'more' }
  /** The ring of ciphertext for the client has room again. */
  | { readonly t: 'room' }
  /** The client ended its side (after the last bytes in the ring). */
  | { readonly t: 'eof' }
  /** The socket is closed. */
  | { readonly t: 'close' }
  /** Bytes of ciphertext the socket has handed to the system. */
  | { readonly t: 'sent'; readonly bytes: number }
  | { readonly t: 'reply'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly t: 'reply'; readonly id: number; readonly ok: false; readonly error: WireError }
  /** The login's view was ended from outside (the user removed, its rights or keys changed). */
  | { readonly t: 'ended' }

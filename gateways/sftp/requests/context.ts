/**
 * @module gateways/sftp/requests/context
 * What one SFTP session's request handlers share (built by gateways/sftp/session.ts):
 * the wire, the user's view, its open handles and the session's own writes, and how a
 * request runs (its answer, or its error as a status).
 */
import type { FileHandle, FsEntry, RequestContext, View } from '../../../core/view.js'
import type { HandleTable } from '../handles.js'
import type { OwnWrite, OwnWrites } from '../own-writes.js'
import type { SendBudget } from '../send-budget.js'
import type { Attrs } from '../wire/codec.js'
import type { SftpServer } from '../wire/server.js'

export interface FileState {
  readonly kind: 'file'
  readonly file: FileHandle
  /** FSETSTAT on a handle open for writing: applied once CLOSE has committed the file. */
  after?: Attrs
  /** For a file open for writing: what the session's later requests on its path see. */
  own?: OwnWrite<FileState>
}

export interface DirState {
  readonly kind: 'dir'
  readonly path: string
  /** Entries fetched and not yet sent. */
  pending: FsEntry[]
  cursor: string | null
  done: boolean
  /** The READDIR before this one (they are answered in turn). */
  turn: Promise<unknown>
  /** Files of the folder this session is writing and no page has shown yet: shown at the end. */
  own: Map<string, FileState>
}

export type Open = FileState | DirState

export interface Session {
  readonly sftp: SftpServer
  readonly fs: View
  /** The logged-in user, shown as owner in long names. */
  readonly user: string
  /** Aborted when the session ends. */
  readonly signal: AbortSignal
  readonly handles: HandleTable<Open>
  /** This session's files open for writing, by path. */
  readonly own: OwnWrites<FileState>
  /** The connection's cap on bytes on their way to the client, if any. */
  readonly sendBudget: SendBudget | undefined
  /** READs' reservations in the send budget not yet given back (the channel may end before taking an answer). */
  readonly reserved: Set<() => void>
  /** The connection's work (requests in flight plus files open). */
  readonly work: { busy: number }
  /** A fresh context for one call on the view. */
  ctx(): RequestContext
  /** A client's path, resolved against `/` (the user's root). */
  path(raw: string): string
  /** Runs one request: its answer, or its error as a status. */
  run(reqid: number, op: string, fn: () => Promise<void> | void): void
  /** Answers OK. */
  ok(reqid: number): void
  fileOf(id: Buffer): FileState
  dirOf(id: Buffer): DirState
  /** Registers a new open handle. @throws FsError when the session has too many */
  newHandle(state: Open): Buffer
  /** Runs `fn` once this session's OPEN and CLOSE of `raw` before now are over; it gets the file if still open for writing. */
  afterOwn<T>(raw: string, fn: (p: string, writing: FileState | null) => Promise<T>): Promise<T>
  /** Waits for this session's OPEN and CLOSE of `paths` that came before now. */
  settled(paths: readonly string[]): Promise<void>
}

/**
 * @module core/doors
 * What every door (the HTTP API, the SFTP, S3 and MCP gateways) tells the connection
 * layer about its traffic and its shutdown. The implementations live in
 * gateways/connection/ (metrics.ts, drain.ts); a door only calls these interfaces, so
 * the figures on `/metrics` and the one drain are the same mechanism for every door.
 */
import type { View } from './view.js'

/** The protocols clients come in by, for logs, throttles and metrics. */
export type Door = 'sftp' | 's3' | 'mcp' | 'http'

/** One door's counters (gateways/connection/metrics.ts): bounded labels, cheap calls. */
export interface DoorMeter {
  /**
   * One request handled (an SFTP request packet, an S3 HTTP request, an MCP JSON-RPC
   * call, an HTTP API request). `error`: its error class when it failed, a short name
   * from a fixed set of the door's own (an SFTP status, an S3 error code, an HTTP status
   * class); anything else is counted as `other`.
   */
  request(error?: string): void
  /** File bytes through the door: `in` written to a storage, `out` read from one. */
  bytes(direction: 'in' | 'out', n: number): void
  /** A session opened; the function returned ends it (calling it again does nothing). */
  session(): () => void
  /** `fs` whose file handles count the bytes they read and write as this door's, and whose staged commits the bytes they store. */
  fs(fs: View): View
}

/**
 * A door's share of the shutdown (gateways/connection/drain.ts): what it must stop,
 * what it waits for, and what it ends at the deadline.
 */
export interface DrainPart {
  /** For the logs: `http`, `sftp`, `s3 listener`... */
  readonly name: string
  /** Stops taking connections and requests: new ones are refused. Called once. */
  stopAccepting(): void
  /** Work in flight: requests being answered, files open. The part ends once it is 0. */
  busy(): number
  /** Closes what has nothing under way now (an idle connection), while the rest drains. */
  closeIdle?(): void
  /** Ends every session: what is still open is aborted, nothing half written. Called once. */
  end(): Promise<void> | void
}

export interface DrainRegistration {
  /** Drains this part alone (a door stopped on its own) to `graceMs`; after a shutdown's drain, nothing left to do. */
  stop(graceMs: number): Promise<void>
}

/** The one drain every door registers with. */
export interface DoorDrain {
  register(part: DrainPart): DrainRegistration
}

/**
 * @module core/gateway
 * The seam for protocol gateways (SFTP, S3, MCP): each is a listener or a set of
 * HTTP routes that translates its protocol into calls on a `View`
 * (core/view.ts). Gateways import only core/; the composition root
 * (front/app.ts) implements the context below and starts and stops them.
 */
import type { HttpHandler, HttpReply, HttpRequest } from './http.js'
import type { BackendSpec } from './backend.js'
import type { Door, DoorDrain, DoorMeter } from './doors.js'
import type { Permissions } from './permissions.js'
import type { View } from './view.js'
import type { StagedUploads } from './staged.js'
import type { StagingQuota } from './staging-quota.js'
import type { StateStore } from './state.js'

export type { Door } from './doors.js'

/** An SSH public key as the client presented it. */
export interface PublicKey {
  /** e.g. `ssh-ed25519`. */
  readonly algo: string
  /** The key in SSH wire format (what an authorized_keys line holds in base64). */
  readonly data: Uint8Array
}

export interface LoginRequest {
  readonly door: Door
  /**
   * A gateway user's name (admin-defined), or `<user>@<connection label>` for a
   * pass-through login: the user's own account on a connection whose credentials come
   * from the user (sftp, ftp, smb, s3 connections without fixed credentials).
   */
  readonly user: string
  /** The client's network address, for the throttle and the logs. */
  readonly address: string
  /** Exactly one of `password`, `publicKey` and `signature`. */
  readonly password?: string
  /**
   * A public key whose signature the protocol library has already verified: the login
   * only checks that the key is one of the user's authorized keys.
   */
  readonly publicKey?: PublicKey
  /**
   * A request signed with a shared secret (S3's Signature V4): `user` is then the access
   * key id; the login looks the key up, unseals its secret and asks `verify` whether the
   * request's signature was made with it. A wrong signature is a failed login (delayed,
   * throttled) like a wrong password.
   */
  readonly signature?: { readonly verify: (secret: string) => boolean }
  /** A request id for the logs (e.g. the connection's id). */
  readonly requestId: string
}

export type LoginResult =
  | { readonly ok: true; readonly user: string; readonly fs: View }
  /**
   * `refused`: wrong user, password or key, told apart to nobody (the same answer after
   * the same delay); `throttled`: too many failures from this address; `unavailable`:
   * the storage behind the user cannot be reached now.
   */
  | { readonly ok: false; readonly reason: 'refused' | 'throttled' | 'unavailable'; readonly message: string }

export interface GatewayLogin {
  /**
   * Checks a password or a verified public key and opens the user's file system view.
   * Failures are delayed and throttled per address exactly as the HTTP API's logins.
   */
  login(req: LoginRequest): Promise<LoginResult>
  /**
   * Whether `key` is one of `user`'s authorized keys, without a signature and without
   * counting as a login attempt (SSH asks this before the client signs).
   */
  keyAuthorized(user: string, key: PublicKey): Promise<boolean>
}

/**
 * What a bearer credential presented to an HTTP gateway (MCP) grants: a filegate
 * session token, or an access token issued by filegate's OAuth authorization server
 * for `resource`. Resolved by front/ exactly as the HTTP API resolves it (same root,
 * same rights).
 */
export type BearerResult =
  | {
      readonly ok: true
      /** Who acts, for the logs (never a credential). */
      readonly subject: string
      readonly fs: View
      /** Makes a share link to `path` where the credential may (absent: it may not). */
      readonly share?: (path: string, opts: ShareRequest) => Promise<ShareLink>
    }
  /** `invalid`: unknown, malformed, revoked; `expired`; `audience`: issued for another resource; `unavailable`: the storage cannot be reached now. */
  | { readonly ok: false; readonly reason: 'invalid' | 'expired' | 'audience' | 'unavailable'; readonly message: string }

/** A share link's options, as the HTTP API's `POST /api/shares` takes them (docs/api.md). */
export interface ShareRequest {
  readonly can_read?: boolean
  readonly can_upload?: boolean
  readonly can_write?: boolean
  readonly password?: string
  /** Epoch ms. */
  readonly expire?: number
}

/** A share as made: used with `?share=<id>` on any file endpoint of the HTTP API (docs/api.md, "Shares"). */
export interface ShareLink {
  readonly id: string
  readonly kind: 'file' | 'directory'
}

/** An HTTP listener of a gateway's own (e.g. the S3 endpoint's port). */
export interface HttpListenOptions {
  readonly host: string
  /** 0: any free port. */
  readonly port: number
  readonly handler: HttpHandler
  /** Largest request body the engine lets through (null: no limit); larger ones are refused before the handler reads them. */
  readonly maxBodyBytes: number | null
  /**
   * Renders the errors the engine answers itself (a malformed or refused request, a server
   * shutting down, a reply that failed before its first byte) in the gateway's protocol;
   * default: the HTTP API's JSON envelope.
   */
  readonly errorReply?: (err: unknown, req: HttpRequest) => HttpReply
  /**
   * The handler needs every header byte as sent and `100 Continue` only once it reads the
   * body (S3 signs header bytes and checks a request before inviting its body): served by
   * node:http, since uWS trims bytes outside ASCII at a value's ends and answers 100
   * Continue itself (docs/http-engines.md).
   */
  readonly exactHeaders?: boolean
  /** What the request log shows for a path (its route; default: the path as sent). */
  readonly routeOf?: (path: string) => string
}

export interface HttpListener {
  readonly port: number
  /** Stops accepting, waits up to `graceMs` for requests in flight, then closes every connection. */
  close(graceMs: number): Promise<void>
}

export interface GatewayContext {
  readonly login: GatewayLogin
  /**
   * Serves `handler` on a port of the gateway's own, with the same HTTP engine (and the
   * same request checks and request log) as the HTTP API: gateways never import an engine.
   */
  listenHttp(opts: HttpListenOptions): Promise<HttpListener>
  /**
   * Resolves `Authorization: Bearer <token>` for an HTTP gateway's request; `resource`
   * is the canonical URL of the resource asked (e.g. `http://127.0.0.1:8334/mcp`), which
   * an OAuth access token must have been issued for (RFC 8707).
   */
  bearer(token: string, req: { readonly resource: string; readonly address: string; readonly requestId: string }): Promise<BearerResult>
  /** The state store (gateway users, keys, ...), shared by every node. */
  readonly state: StateStore
  /** The service's data directory (absolute): a gateway keeps its own files under `<data_dir>/<gateway name>/`. */
  readonly dataDir: string
  /**
   * Where a gateway stages what any node may have to finish (`staging_dir`, by default the
   * data directory; absolute): in a cluster, a folder every node reaches. Its own files go
   * under `<staging dir>/<gateway name>-...`; several nodes may sweep them at once.
   */
  readonly stagingDir: string
  /** The bounds on bytes staged for uploads (core/staging-quota.ts), shared by every door. */
  readonly stagingQuota: StagingQuota
  /** Staged uploads' bytes (core/staged.ts), written and read on worker threads: a door's staging area is `staged.area(<staging dir>/<its folder>)`. */
  readonly staged: StagedUploads
  /**
   * Seals a secret a protocol needs back in clear (e.g. an S3 secret key) under the
   * server secret, bound to `purpose`; `unseal` throws on anything not sealed so.
   */
  seal(purpose: string, plain: string): string
  unseal(purpose: string, sealed: string): string
  /**
   * A view of a backend with `permissions` (for plugins' own gateways), as the built-in
   * gateways get from a login: the caller closes it when done.
   */
  openView(spec: BackendSpec, permissions: Permissions): Promise<View>
  log(level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void
  /** The door's counters on `/metrics` (requests, errors, file bytes, sessions). */
  meter(door: Door): DoorMeter
  /** The one shutdown drain: a gateway registers what it must stop, wait for and end. */
  readonly drain: DoorDrain
}

export interface Gateway {
  readonly name: string
  /** HTTP routes the gateway serves on the main port, each by its exact path (e.g. `/mcp`; front/server.ts matches the whole path). */
  readonly routes?: Readonly<Record<string, HttpHandler>>
  /** Starts the gateway's own listener, if it has one. */
  start(ctx: GatewayContext): Promise<void>
  /** The port its own listener is bound to, once started (0 or absent: none). */
  readonly port?: number
  /**
   * Closes the listener at once, lets work in flight finish for up to `graceMs` (a
   * shutdown's grace; absent: the gateway's own default), then ends every session (open
   * handles are aborted, nothing half written).
   */
  stop(graceMs?: number): Promise<void>
}

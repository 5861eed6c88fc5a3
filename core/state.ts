/**
 * @module core/state
 * The state store: what the service remembers between requests and restarts
 * (revoked tokens, share links, API keys, gateway users, login throttles, OAuth
 * codes, MCP sessions, resumable uploads): everything several nodes must share. One
 * small interface so an embedded store (SQLite, front/state/sqlite-state.ts) and a
 * shared one (PostgreSQL, for several nodes) are interchangeable: every method is
 * async, the records are plain data (times in epoch ms), and nothing here names a
 * database type.
 *
 * Secrets never reach the store in clear: passwords are scrypt hashes, API keys
 * sha256 hashes, a share's backend credentials and S3 secret keys are sealed under
 * the server secret.
 */

import type { Permissions } from './permissions.js'

/** A share link (docs/api.md, "Shares"). */
export interface ShareRecord {
  /** Random, URL-safe, at least 64 bits. */
  readonly id: string
  /** The backendID of the session that created it: its owner. */
  readonly owner: string
  /** Canonical path inside the owner's storage; it becomes `/` for the share's users. */
  readonly path: string
  /** What `path` was when the share was created. */
  readonly kind: 'file' | 'directory'
  readonly can_read: boolean
  readonly can_upload: boolean
  readonly can_write: boolean
  /** scrypt hash (front/passwords.ts), or null: no password. */
  readonly password_hash: string | null
  /** Epoch ms after which the share is GONE; null: never. */
  readonly expire: number | null
  /** The owner's backend spec and key, sealed under the server secret. Never returned to a client. */
  readonly sealed: string
  readonly created: number
}

/** An API key (docs/api.md, "API keys"). The key itself is never stored, only its hash. */
export interface ApiKeyRecord {
  readonly id: string
  readonly name: string
  /** Hex sha256 of the key. */
  readonly hash: string
  /** Browser origins (`scheme://host[:port]`) the key may be used from. */
  readonly origins: readonly string[]
  readonly created: number
  readonly last_used: number | null
}

/** An SSH public key a gateway user may log in with (docs/gateways.md). */
export interface AuthorizedKeyRecord {
  /** `SHA256:<base64, no padding>` of `blob`, as `ssh-keygen -l` prints it; unique per user. */
  readonly fingerprint: string
  /** The key's type, e.g. `ssh-ed25519`. */
  readonly type: string
  /** The key in SSH wire format, base64 (what an authorized_keys line holds). */
  readonly blob: string
  /** The comment of the authorized_keys line ('' when none). */
  readonly comment: string
  readonly created: number
}

/** A user of the protocol gateways (SFTP, S3), defined by the admin. */
export interface GatewayUserRecord {
  readonly name: string
  /** scrypt hash, or null: the user logs in with a key only. */
  readonly password_hash: string | null
  /** Public keys the user may log in with, oldest first. */
  readonly keys: readonly AuthorizedKeyRecord[]
  /** The label of a configured connection (or "tmp"). */
  readonly connection: string
  /** Canonical root path inside that connection. */
  readonly root: string
  /** What the user may do, at every door (core/permissions.ts); `read_only` in the admin API is a shorthand for reading only. */
  readonly permissions: Permissions
  readonly created: number
}

/**
 * An S3 access key of a gateway user (docs/s3-keys.md): the id is public, the secret
 * is kept sealed under the server secret (S3's signatures need it in clear to be
 * checked) and never returned after its creation.
 */
export interface S3KeyRecord {
  /** The access key id: 20 characters of A-Z and 0-9, unique. */
  readonly id: string
  /** The gateway user it acts as. */
  readonly user: string
  /** The secret access key, sealed under the server secret. */
  readonly sealed: string
  /** Narrows the user's permissions for requests signed with this key (never widens them); null: the user's. */
  readonly permissions: Permissions | null
  readonly created: number
  readonly last_used: number | null
}

/** An OAuth client (docs/mcp-auth.md): registered dynamically (RFC 7591). Public clients only: no secret. */
export interface OAuthClientRecord {
  readonly client_id: string
  /** Client-supplied: shown escaped, never trusted. */
  readonly name: string
  readonly redirect_uris: readonly string[]
  readonly created: number
  /** When a token was last issued to it; null: never (such clients are purged after a day). */
  readonly last_used: number | null
}

/**
 * What the S3 gateway keeps of an object written through it, where the storage cannot
 * keep it itself (gateways/s3/meta/): valid while the file still has `size` and `mtime_ms`.
 */
export interface ObjectMetaRecord {
  /** A hash of the storage's identity (never a credential) and the view's root. */
  readonly storage: string
  /** Canonical path inside that view. */
  readonly path: string
  readonly size: number
  readonly mtime_ms: number | null
  /** S3's ETag without quotes: hex MD5, or md5-of-md5s `-N`. */
  readonly etag: string
  readonly content_type: string | null
  /** `x-amz-meta-*` without the prefix, lower-case names. */
  readonly user_meta: Readonly<Record<string, string>>
}

/** An S3 multipart upload in progress, or completed a short while ago (gateways/s3/multipart/). */
export interface MultipartUploadRecord {
  /** Random, unguessable; also the name of its staging folder. */
  readonly id: string
  /** The gateway user that created it: only that user's keys see it. */
  readonly user: string
  readonly bucket: string
  readonly key: string
  readonly created: number
  readonly content_type: string | null
  readonly user_meta: Readonly<Record<string, string>>
  /** Set once completed: the object's ETag (a repeated Complete answers it again). */
  readonly completed_etag: string | null
}

/** One staged part of a multipart upload. */
export interface MultipartPartRecord {
  readonly upload_id: string
  /** 1..10000. */
  readonly number: number
  readonly size: number
  /** Hex MD5 of the part. */
  readonly etag: string
  /** The part's staging file name inside the upload's folder. */
  readonly file: string
  readonly modified: number
}

/**
 * An OAuth refresh token (docs/mcp-auth.md). The token itself is never stored, only
 * its hash. Every refresh token of one login is in one `family`: a rotated token
 * used again revokes the family.
 */
export interface OAuthRefreshRecord {
  /** Hex sha256 of the token. */
  readonly hash: string
  readonly family: string
  readonly client_id: string
  /** The resource (RFC 8707) its access tokens are for. */
  readonly resource: string
  /** What the login granted, sealed under the server secret. */
  readonly grant: string
  /** Epoch ms: the end of the family (refreshing does not extend it). */
  readonly expires: number
  /** When it was exchanged for a new pair; null: not yet. */
  readonly used: number | null
}

/**
 * A login throttle's count (front/throttle.ts): the attempts counted from one address
 * against one scope in the current window. Its key names the scope and the address's
 * unit (never a password).
 */
export interface ThrottleCount {
  /** Attempts counted in the window, the latest included. */
  readonly count: number
  /** Epoch ms: when the window began (its first attempt). */
  readonly since: number
}

/**
 * An OAuth authorization code (docs/mcp-auth.md): single use, short-lived. The code
 * itself is never stored, only its hash; the grant is sealed under the server secret.
 */
export interface OAuthCodeRecord {
  /** Hash of the code (front/oauth/codes.ts). */
  readonly hash: string
  readonly client_id: string
  readonly redirect_uri: string
  /** Whether the authorization request named the redirect URI. */
  readonly redirect_given: boolean
  /** The PKCE challenge (S256). */
  readonly challenge: string
  readonly resource: string
  /** What the login granted, sealed under the server secret. */
  readonly grant: string
  /** Epoch ms after which it can no longer be exchanged. */
  readonly expires: number
  /** When it was exchanged; null: not yet. */
  readonly used: number | null
  /** The token family its exchange creates (revoked when the code is replayed); null: not exchanged. */
  readonly family: string | null
}

/**
 * An MCP Streamable HTTP session (docs/mcp-gateway.md), so that any node can serve
 * it: what rebuilds its server. Neither the session id nor a bearer token is stored.
 */
export interface McpSessionRecord {
  /** Hash of the session id. */
  readonly hash: string
  /** Hash of the login it is bound to (the subject): only that login may use it. */
  readonly owner: string
  /** The protocol version agreed at initialization. */
  readonly protocol_version: string
  /** The client's `initialize` request params, JSON. */
  readonly init: string
  readonly created: number
  readonly last_seen: number
}

/** A resumable (tus) upload's record: what @tus/file-store keeps of it (its configstore). */
export interface TusUploadRecord {
  /** The upload's id, also the name of its staged file. */
  readonly id: string
  /** The library's record of the upload (offset excluded: the staged file has it), JSON. */
  readonly upload: string
  readonly created: number
}

export interface StateStore {
  /** Remembers a revoked token id until `untilMs` (its expiry): it is refused until then. */
  revokeToken(id: string, untilMs: number): Promise<void>
  isTokenRevoked(id: string): Promise<boolean>

  putShare(share: ShareRecord): Promise<void>
  getShare(id: string): Promise<ShareRecord | null>
  /** All shares, or those of one owner; newest first. */
  listShares(owner?: string): Promise<ShareRecord[]>
  /** @returns false when there was no such share */
  deleteShare(id: string): Promise<boolean>

  putApiKey(key: ApiKeyRecord): Promise<void>
  getApiKeyByHash(hash: string): Promise<ApiKeyRecord | null>
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Records a use (best effort; stores may coarsen it). */
  touchApiKey(id: string, atMs: number): Promise<void>
  /** @returns false when there was no such key */
  deleteApiKey(id: string): Promise<boolean>

  /** @returns false when a user of that name exists already (nothing changed) */
  addGatewayUser(user: GatewayUserRecord): Promise<boolean>
  getGatewayUser(name: string): Promise<GatewayUserRecord | null>
  listGatewayUsers(): Promise<GatewayUserRecord[]>
  /** Removes the user with its authorized keys and S3 keys. @returns false when there was no such user */
  deleteGatewayUser(name: string): Promise<boolean>
  /** Sets (or, with null, removes) a user's password hash. @returns false when there was no such user */
  setGatewayUserPassword(name: string, hash: string | null): Promise<boolean>
  /** @returns 'duplicate' when the user has a key of that fingerprint already (nothing changed) */
  addGatewayUserKey(name: string, key: AuthorizedKeyRecord): Promise<'added' | 'duplicate' | 'no-user'>
  /** @returns false when the user has no key of that fingerprint */
  deleteGatewayUserKey(name: string, fingerprint: string): Promise<boolean>

  /** @returns 'no-user' when there is no such gateway user (nothing stored) */
  addS3Key(key: S3KeyRecord): Promise<'added' | 'no-user'>
  getS3Key(id: string): Promise<S3KeyRecord | null>
  /** A user's S3 keys, oldest first. */
  listS3Keys(user: string): Promise<S3KeyRecord[]>
  /** Records a use (best effort; stores may coarsen it). */
  touchS3Key(id: string, atMs: number): Promise<void>
  /** @returns false when `user` has no key `id` */
  deleteS3Key(user: string, id: string): Promise<boolean>
  /** Replaces the record of (storage, path). */
  putObjectMeta(meta: ObjectMetaRecord): Promise<void>
  getObjectMeta(storage: string, path: string): Promise<ObjectMetaRecord | null>
  /** The records of those of `paths` that have one (a listing's page: one call), by path. */
  getObjectMetas(storage: string, paths: readonly string[]): Promise<Map<string, ObjectMetaRecord>>
  deleteObjectMeta(storage: string, path: string): Promise<void>

  putMultipartUpload(upload: MultipartUploadRecord): Promise<void>
  getMultipartUpload(id: string): Promise<MultipartUploadRecord | null>
  /** A user's uploads not completed in `bucket`, by key then creation then id. */
  listMultipartUploads(user: string, bucket: string): Promise<MultipartUploadRecord[]>
  /** Uploads (completed or not) created before `beforeMs`, oldest first. */
  expiredMultipartUploads(beforeMs: number): Promise<MultipartUploadRecord[]>
  /** Marks an upload completed with its ETag; its parts' records go. @returns false when there was no such upload */
  completeMultipartUpload(id: string, etag: string): Promise<boolean>
  /** The upload and its parts' records. @returns false when there was no such upload */
  deleteMultipartUpload(id: string): Promise<boolean>
  /**
   * Records a part, replacing one of the same number.
   * @returns the file of the part replaced (to remove), null when none; 'no-upload' when the upload is gone or completed (nothing recorded)
   */
  putMultipartPart(part: MultipartPartRecord): Promise<string | null | 'no-upload'>
  /** An upload's parts by number. */
  listMultipartParts(id: string): Promise<MultipartPartRecord[]>
  putOAuthClient(client: OAuthClientRecord): Promise<void>
  getOAuthClient(id: string): Promise<OAuthClientRecord | null>
  countOAuthClients(): Promise<number>
  /** Records that a token was issued to the client. */
  touchOAuthClient(id: string, atMs: number): Promise<void>
  /** Removes clients never used that were registered before `beforeMs`. @returns how many */
  purgeOAuthClients(beforeMs: number): Promise<number>
  /** Removes the `count` oldest clients never used (to make room for a new one). @returns how many */
  evictUnusedOAuthClients(count: number): Promise<number>

  putOAuthRefresh(token: OAuthRefreshRecord): Promise<void>
  getOAuthRefresh(hash: string): Promise<OAuthRefreshRecord | null>
  /**
   * Marks a refresh token used, atomically. @returns the record as it was before
   * (`used` null the first time), or null when there is no such token
   */
  useOAuthRefresh(hash: string, atMs: number): Promise<OAuthRefreshRecord | null>
  /** Removes every refresh token of a family (and expired ones of any family). */
  deleteOAuthFamily(family: string): Promise<void>

  /**
   * Counts one attempt under `key`, atomically (concurrent nodes never lose a count). A
   * window that has ended (begun `windowMs` or more before `nowMs`) starts again at 1.
   * @returns the count, this attempt included, and when its window began
   */
  throttleHit(key: string, windowMs: number, nowMs: number): Promise<ThrottleCount>
  /** The count under `key`, without counting; null when there is none or its window ended at or before `nowMs`. */
  throttlePeek(key: string, nowMs: number): Promise<ThrottleCount | null>
  /** Takes back one attempt counted under `key` (the count goes at 0). */
  throttleRefund(key: string): Promise<void>
  /** Forgets what was counted under `key`. */
  throttleForget(key: string): Promise<void>
  /** Removes counts whose window ended at or before `nowMs`. @returns how many */
  purgeThrottles(nowMs: number): Promise<number>

  putOAuthCode(code: OAuthCodeRecord): Promise<void>
  /**
   * Marks a code used by the exchange that creates `family`, atomically: only the
   * first call finds `used` null. @returns the record as it was before, or null when there is no such code
   */
  useOAuthCode(hash: string, family: string, atMs: number): Promise<OAuthCodeRecord | null>
  /** Removes codes that expired before `beforeMs`. @returns how many */
  purgeOAuthCodes(beforeMs: number): Promise<number>

  putMcpSession(session: McpSessionRecord): Promise<void>
  getMcpSession(hash: string): Promise<McpSessionRecord | null>
  /** Records a use. @returns false when there is no such session (ended, purged) */
  touchMcpSession(hash: string, atMs: number): Promise<boolean>
  /** @returns false when there was no such session */
  deleteMcpSession(hash: string): Promise<boolean>
  /** Removes sessions last seen before `beforeMs`. @returns how many */
  purgeMcpSessions(beforeMs: number): Promise<number>

  /** Creates or replaces the record of an upload. */
  putTusUpload(upload: TusUploadRecord): Promise<void>
  getTusUpload(id: string): Promise<TusUploadRecord | null>
  /** @returns false when there was no such upload */
  deleteTusUpload(id: string): Promise<boolean>
  /** Ids of the uploads created before `beforeMs`, oldest first. */
  expiredTusUploads(beforeMs: number): Promise<string[]>

  /** A shared store's connections to its server (for /metrics); absent on an embedded store. */
  connections?(): StoreConnections

  close(): Promise<void>
}

/** A shared store's pool of connections. */
export interface StoreConnections {
  /** Open, busy or idle. */
  readonly open: number
  readonly idle: number
  /** Queries waiting for a connection (the pool is at its size). */
  readonly waiting: number
}

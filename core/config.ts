/**
 * @module core/config
 * The configuration's shape, its defaults and its validation (docs/configuration.md).
 * Pure: loading from files, environment and flags is front/config-load.ts.
 * Options are validated here, with precise messages, and trusted everywhere else.
 */
import { isIP } from 'node:net'
import { PLUGIN_NAME, type PluginConfig } from './plugin.js'
import { redirectUriProblem } from './redirect-uris.js'
import { STAGING_DEFAULTS, type StagingLimits } from './staging-quota.js'

export interface ConnectionConfig {
  /** Picked by `label` in a session request (or by `type` when only one connection has it). */
  readonly label: string
  readonly type: string
  /**
   * Fixed parameters: they override what the client sends. A `local` connection
   * also has `password` (checked at login, never passed on) or `public: true`.
   */
  readonly [param: string]: unknown
}

export interface Config {
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  /** Absolute: state, tmp spaces. */
  readonly data_dir: string
  /** Worker threads in the pool. */
  readonly workers: number
  /** Concurrent tasks (live transfers included) per worker thread. */
  readonly tasks_per_worker: number
  /** Tasks waiting for a worker beyond which requests get 503 UNAVAILABLE. */
  readonly max_queue: number
  /** Live transfers (downloads, uploads, zips) per worker thread; they hold no task. */
  readonly transfers_per_worker: number
  /** Concurrent transfers from one client address beyond which the answer is 429 RATE_LIMITED. */
  readonly transfers_per_address: number
  /** Concurrent transfers with one credential (session token, share link, API key + share): 429 beyond. */
  readonly transfers_per_credential: number
  /** Bytes buffered in memory for all transfers together. */
  readonly transfer_buffer_bytes: number
  readonly connections: readonly ConnectionConfig[]
  /**
   * `tmp` sessions (the embedded default, unauthenticated) are allowed. When the
   * setting is not given: on for a loopback `host`, off for any other.
   */
  readonly tmp_sessions: boolean
  readonly session: { readonly ttl_seconds: number }
  /** Largest accepted upload body in bytes; null: no limit. */
  readonly max_upload_bytes: number | null
  /**
   * Entries one HTTP `ls` answer holds at most: a larger folder is refused (413) unless
   * asked for in pages (`limit`, `cursor`), and a page holds at most this many.
   */
  readonly ls_max_entries: number
  /** Seconds transfers in flight get to finish after SIGTERM. */
  readonly shutdown_grace_seconds: number
  /**
   * Seconds a remote backend (sftp, ftp, smb, s3) may stay silent, connecting or in a
   * request, before the request fails as a timeout; null: each driver's own (20 s, S3 30 s).
   */
  readonly backend_timeout_seconds: number | null
  /**
   * The HTTP engine: "auto" (uWebSockets.js when a native build loads, else node:http
   * with a warning), "uws" or "node" to force one.
   */
  readonly http_engine: 'auto' | 'uws' | 'node'
  readonly log: { readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly requests: boolean }
  /**
   * Enabled plugins (core/plugin.ts), in order. In the file: a built-in's name, or
   * `{"name", "path"?, "options"?}` (`path`: a third-party plugin's module, absolute).
   */
  readonly plugins: readonly PluginConfig[]
  /** CORS (docs/api.md, "CORS"): browser origins (`scheme://host[:port]`) allowed on every endpoint. */
  readonly cors: { readonly origins: readonly string[] }
  /**
   * The admin console's password (also FILEGATE_ADMIN_PASSWORD); null: the admin API
   * is off. Hashed (scrypt) at start-up; only the hash is used afterwards.
   */
  readonly admin_password: string | null
  /**
   * Who may read GET /metrics: clients on the loopback interface (`allow_loopback`),
   * and anyone sending `Authorization: Bearer <token>` when a token is set.
   */
  readonly metrics: { readonly allow_loopback: boolean; readonly token: string | null }
  /** Resumable uploads (tus, front/tus/): unfinished ones are removed `expiry_seconds` after their creation. */
  readonly tus: { readonly expiry_seconds: number }
  /**
   * The SFTP gateway (gateways/sftp/): its own port (0 picks a free one) or "off"; `host`
   * null listens on the service's `host`; `proxy_protocol`: connections from the
   * `trust_proxy` addresses begin with a PROXY protocol v1 header naming the client.
   * Connections not logged in yet are capped as OpenSSH's MaxStartups caps them:
   * `max_startups` "start:rate:full" (past `start`, `rate`% of new ones are refused, rising
   * to all at `full`) and `max_startups_per_address`; one that has not finished its key
   * exchange within `kex_grace_seconds`, or logged in within `login_grace_seconds`, is
   * dropped. `max_connections` caps the door's connections of every kind (0: a quarter of
   * the process's descriptor limit). `threads`: the SSH threads its connections are spread
   * over (each connection's key exchange, ciphers and SFTP in one of them), "auto" (one per
   * core, at most 8; none on a single core) or a number; 0 runs every connection in the
   * main thread.
   */
  readonly sftp: {
    readonly port: number | 'off'
    readonly host: string | null
    readonly proxy_protocol: boolean
    readonly max_startups: string
    readonly max_startups_per_address: number
    readonly kex_grace_seconds: number
    readonly login_grace_seconds: number
    readonly max_connections: number
    readonly threads: number | 'auto'
  }
  /**
   * The S3 gateway (gateways/s3/): its own port (0 picks a free one) or "off"; `host` null
   * listens on the service's `host`; `region` is the one clients sign for; `base_domain`
   * turns on virtual-hosted style (`<bucket>.<base_domain>`), null: path-style only;
   * multipart uploads not completed within `multipart_expiry_hours` of their creation are
   * removed, parts and all.
   */
  readonly s3: {
    readonly port: number | 'off'
    readonly host: string | null
    readonly region: string
    readonly base_domain: string | null
    readonly multipart_expiry_hours: number
  }
  /**
   * The HTTP API's address as clients reach it (`scheme://host[:port]`, no path): the
   * issuer and resource URLs of OAuth (MCP) and the links filegate hands out. null:
   * `http://<host>:<port>` as listened (fine on loopback; set it behind a proxy).
   */
  readonly public_url: string | null
  /**
   * The MCP gateway (gateways/mcp/) on the HTTP port: `/mcp` and `/sse`. Sessions end after
   * `session_idle_seconds` without a message; at most `max_sessions` are open at once.
   */
  readonly mcp: McpConfig
  /** The OAuth authorization server of the MCP gateway (front/oauth/, docs/mcp-auth.md). */
  readonly oauth: OAuthConfig
  /**
   * A file holding the server secret (docs/cluster-state.md): 32 bytes, raw or as 64 hex
   * or 44 base64 characters; never group- or world-readable. Absolute once loaded. null:
   * the secret generated in the data directory.
   */
  readonly secret_file: string | null
  /**
   * Where uploads another node may finish are staged (tus uploads, S3 multipart parts): a
   * folder every node reaches in a cluster. Absolute once loaded. null: the data directory.
   */
  readonly staging_dir: string | null
  /**
   * Bounds on the bytes staged on this node's disk for uploads not stored yet (tus, S3
   * multipart parts, the gateways' staging copies; core/staging-quota.ts): per login, per
   * share link, in total, and the free space always left on the staging folder's and the
   * data folder's disks (the state store lives there).
   */
  readonly staging_limits: StagingLimits
  /**
   * The shared state store (docs/postgresql.md): a `postgres://` or `postgresql://` URL (its
   * password is a secret: never logged). null: SQLite in the data folder.
   */
  readonly state_url: string | null
  /** Connections at most to the state store's database, per node. */
  readonly state_pool_size: number
  /**
   * Addresses of the reverse proxies (load balancers) whose `X-Forwarded-For` names the
   * client: a request from one of them counts as coming from the address it forwards for
   * (throttles, per-address limits, logs). Empty: the TCP peer is the client.
   */
  readonly trust_proxy: readonly string[]
}

export interface McpConfig {
  readonly enabled: boolean
  readonly session_idle_seconds: number
  /** Sessions open at once, all logins together; when full, the biggest holder's least recently used idle session makes room. */
  readonly max_sessions: number
  /** Sessions one login may hold; past it, its own least recently used idle session ends. */
  readonly sessions_per_login: number
  /** Sessions one client address (an IPv6 /64) may hold; past it, that address's least recently used idle session ends. */
  readonly sessions_per_address: number
  /** Tool calls (and resource reads) one login may have running at once; more are refused with a JSON-RPC error. */
  readonly calls_per_login: number
  /** Messages one JSON-RPC batch may hold. */
  readonly max_batch: number
}

export interface OAuthConfig {
  /** Clients known in advance (public clients: no secret). */
  readonly clients: readonly { readonly client_id: string; readonly redirect_uris: readonly string[]; readonly name: string }[]
  /** Dynamic client registration (RFC 7591) at /register. */
  readonly dynamic_registration: boolean
  /** How long an authorization code may wait for its exchange. */
  readonly code_seconds: number
  readonly access_token_seconds: number
  /** How long a login's refresh tokens live (never past the filegate session it holds). */
  readonly refresh_token_seconds: number
  /** Registered clients kept at most; when full, the clients never used make room, the oldest first. */
  readonly max_clients: number
  /** Registrations per hour from one network (an IPv4 /24, an IPv6 /56). */
  readonly registrations_per_hour: number
}

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 8334,
  data_dir: './data',
  workers: 2,
  tasks_per_worker: 64,
  max_queue: 1024,
  transfers_per_worker: 4096,
  transfers_per_address: 32,
  transfers_per_credential: 128,
  transfer_buffer_bytes: 64 * 1024 * 1024,
  connections: [],
  tmp_sessions: true, // for a loopback host; validateConfig turns it off for others unless it is set
  session: { ttl_seconds: 7 * 24 * 3600 },
  max_upload_bytes: null,
  ls_max_entries: 10_000,
  shutdown_grace_seconds: 30,
  backend_timeout_seconds: null,
  http_engine: 'auto',
  log: { level: 'info', requests: true },
  plugins: [],
  cors: { origins: [] },
  admin_password: null,
  metrics: { allow_loopback: true, token: null },
  tus: { expiry_seconds: 24 * 3600 },
  sftp: { port: 2222, host: null, proxy_protocol: false, max_startups: '32:30:256', max_startups_per_address: 16, kex_grace_seconds: 15, login_grace_seconds: 120, max_connections: 0, threads: 0 },
  s3: { port: 8335, host: null, region: 'us-east-1', base_domain: null, multipart_expiry_hours: 24 },
  public_url: null,
  mcp: { enabled: true, session_idle_seconds: 1800, max_sessions: 1000, sessions_per_login: 32, sessions_per_address: 100, calls_per_login: 8, max_batch: 20 },
  oauth: {
    clients: [],
    dynamic_registration: true,
    code_seconds: 60,
    access_token_seconds: 3600,
    refresh_token_seconds: 30 * 24 * 3600,
    max_clients: 10_000,
    registrations_per_hour: 20,
  },
  secret_file: null,
  staging_dir: null,
  staging_limits: STAGING_DEFAULTS,
  state_url: null,
  state_pool_size: 10,
  trust_proxy: [],
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

const int = (v: unknown, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(v)})`)
  }
  return v
}
const str = (v: unknown, name: string): string => {
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${name} must be a non-empty string (got ${JSON.stringify(v)})`)
  return v
}
const bool = (v: unknown, name: string): boolean => {
  if (typeof v !== 'boolean') throw new ConfigError(`${name} must be true or false (got ${JSON.stringify(v)})`)
  return v
}

const oneOf = <T extends string>(v: unknown, name: string, options: readonly T[]): T => {
  if (!options.includes(v as T)) throw new ConfigError(`${name} must be one of ${options.join(', ')} (got ${JSON.stringify(v)})`)
  return v as T
}

const KNOWN = new Set(Object.keys(DEFAULTS))

/** Merges `input` over the defaults and validates the result. */
export function validateConfig(input: Record<string, unknown>): Config {
  for (const k of Object.keys(input)) if (!KNOWN.has(k)) throw new ConfigError(`unknown setting "${k}"`)
  const m = { ...DEFAULTS, ...input } as Record<string, unknown>
  const session = { ...DEFAULTS.session, ...(m.session as object) } as Record<string, unknown>
  const log = { ...DEFAULTS.log, ...(m.log as object) } as Record<string, unknown>
  const tus = { ...DEFAULTS.tus, ...(m.tus as object) } as Record<string, unknown>
  for (const k of Object.keys(tus)) if (!(k in DEFAULTS.tus)) throw new ConfigError(`tus: unknown key "${k}" (known: expiry_seconds)`)
  if (!['debug', 'info', 'warn', 'error'].includes(log.level as string)) {
    throw new ConfigError(`log.level must be one of debug, info, warn, error (got ${JSON.stringify(log.level)})`)
  }
  if (!Array.isArray(m.connections)) throw new ConfigError('connections must be a list')
  const labels = new Set<string>()
  const connections = m.connections.map((c: unknown, i: number): ConnectionConfig => {
    if (c === null || typeof c !== 'object') throw new ConfigError(`connections[${i}] must be an object`)
    const o = c as Record<string, unknown>
    const type = str(o.type, `connections[${i}].type`)
    const label = o.label === undefined ? type : str(o.label, `connections[${i}].label`)
    if (labels.has(label)) throw new ConfigError(`connections[${i}]: label "${label}" is used twice`)
    labels.add(label)
    if (type === 'local') localConnection(o, `connections[${i}]`)
    gatewayPassthrough({ ...o, label, type }, `connections[${i}]`)
    return { ...o, label, type }
  })
  const plugins = pluginList(m.plugins)
  const cors = corsConfig(m.cors)
  if (m.admin_password !== null && (typeof m.admin_password !== 'string' || m.admin_password.length < 8)) {
    throw new ConfigError('admin_password must be null or a string of at least 8 characters')
  }
  const metrics = metricsConfig(m.metrics)
  const sftp = sftpConfig(m.sftp)
  const trust_proxy = trustProxy(m.trust_proxy)
  if (sftp.proxy_protocol && trust_proxy.length === 0) {
    throw new ConfigError('sftp.proxy_protocol reads the PROXY header from the balancers listed in trust_proxy, which is empty: list their addresses')
  }
  return {
    host: str(m.host, 'host'),
    port: int(m.port, 'port', 0, 65535),
    data_dir: str(m.data_dir, 'data_dir'),
    workers: int(m.workers, 'workers', 1, 256),
    tasks_per_worker: int(m.tasks_per_worker, 'tasks_per_worker', 1, 4096),
    max_queue: int(m.max_queue, 'max_queue', 0),
    transfers_per_worker: int(m.transfers_per_worker, 'transfers_per_worker', 1, 1_000_000),
    transfers_per_address: int(m.transfers_per_address, 'transfers_per_address', 1),
    transfers_per_credential: int(m.transfers_per_credential, 'transfers_per_credential', 1),
    transfer_buffer_bytes: int(m.transfer_buffer_bytes, 'transfer_buffer_bytes', 1024 * 1024),
    connections,
    tmp_sessions: input.tmp_sessions === undefined ? isLoopbackHost(str(m.host, 'host')) : bool(m.tmp_sessions, 'tmp_sessions'),
    session: { ttl_seconds: int(session.ttl_seconds, 'session.ttl_seconds', 1) },
    max_upload_bytes: m.max_upload_bytes === null ? null : int(m.max_upload_bytes, 'max_upload_bytes', 0),
    ls_max_entries: int(m.ls_max_entries, 'ls_max_entries', 1, 1_000_000),
    shutdown_grace_seconds: int(m.shutdown_grace_seconds, 'shutdown_grace_seconds', 0, 86400),
    backend_timeout_seconds: m.backend_timeout_seconds === null ? null : int(m.backend_timeout_seconds, 'backend_timeout_seconds', 1, 3600),
    http_engine: oneOf(m.http_engine, 'http_engine', ['auto', 'uws', 'node'] as const),
    log: { level: log.level as Config['log']['level'], requests: bool(log.requests, 'log.requests') },
    plugins,
    cors,
    admin_password: m.admin_password as string | null,
    metrics,
    tus: { expiry_seconds: int(tus.expiry_seconds, 'tus.expiry_seconds', 1, 365 * 24 * 3600) },
    sftp,
    s3: s3Config(m.s3),
    public_url: m.public_url === null ? null : publicUrl(m.public_url),
    mcp: mcpConfig(m.mcp),
    oauth: oauthConfig(m.oauth),
    secret_file: m.secret_file === null ? null : str(m.secret_file, 'secret_file'),
    staging_dir: m.staging_dir === null ? null : str(m.staging_dir, 'staging_dir'),
    staging_limits: stagingLimits(m.staging_limits),
    state_url: m.state_url === null ? null : stateUrl(m.state_url),
    state_pool_size: int(m.state_pool_size, 'state_pool_size', 1, 1000),
    trust_proxy,
  }
}

/** `staging_limits`: `{"total_bytes", "per_login_bytes", "per_share_bytes", "reserve_bytes"}`, each a byte count. */
function stagingLimits(v: unknown): StagingLimits {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('staging_limits must be an object {"total_bytes", "per_login_bytes", "per_share_bytes", "reserve_bytes"}')
  const o = { ...STAGING_DEFAULTS, ...(v as object) } as Record<string, unknown>
  for (const k of Object.keys(o)) if (!(k in STAGING_DEFAULTS)) throw new ConfigError(`staging_limits: unknown key "${k}" (known: ${Object.keys(STAGING_DEFAULTS).join(', ')})`)
  return {
    total_bytes: int(o.total_bytes, 'staging_limits.total_bytes', 0),
    per_login_bytes: int(o.per_login_bytes, 'staging_limits.per_login_bytes', 0),
    per_share_bytes: int(o.per_share_bytes, 'staging_limits.per_share_bytes', 0),
    reserve_bytes: int(o.reserve_bytes, 'staging_limits.reserve_bytes', 0),
  }
}

/** `state_url`: a PostgreSQL URL. Never quoted back: it may hold a password. */
function stateUrl(v: unknown): string {
  const protocol = typeof v === 'string' && URL.canParse(v) ? new URL(v).protocol : ''
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError('state_url must be a PostgreSQL URL, postgres://user:password@host:port/database or postgresql://... (or null: SQLite in the data folder)')
  }
  return v as string
}

/** `trust_proxy`: a list of IP addresses (no names, no ranges). */
function trustProxy(v: unknown): string[] {
  if (!Array.isArray(v) || v.some((a) => typeof a !== 'string' || isIP(a) === 0)) {
    throw new ConfigError(`trust_proxy must be a list of IP addresses of your proxies, like ["10.0.0.5"] (got ${JSON.stringify(v)})`)
  }
  return v as string[]
}

/** `public_url`: an origin, `http(s)://host[:port]`, nothing after it. */
function publicUrl(v: unknown): string {
  const s = str(v, 'public_url')
  let u: URL | undefined
  try {
    u = new URL(s)
  } catch {
    u = undefined
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.origin !== s.replace(/\/$/, '') || u.username || u.password) {
    throw new ConfigError(`public_url must be an origin like "https://files.example.com" (scheme, host, optional port; no path; got ${JSON.stringify(s)})`)
  }
  return u.origin
}

const OAUTH_CLIENT_ID = /^[A-Za-z0-9._~-]{1,128}$/

/** `oauth`: pre-registered clients, dynamic registration on or off, token lifetimes. */
function oauthConfig(v: unknown): OAuthConfig {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('oauth must be an object {"clients", "dynamic_registration", ...}')
  for (const k of Object.keys(v)) if (!(k in DEFAULTS.oauth)) throw new ConfigError(`oauth: unknown key "${k}" (known: ${Object.keys(DEFAULTS.oauth).join(', ')})`)
  const o = { ...DEFAULTS.oauth, ...v } as Record<string, unknown>
  if (!Array.isArray(o.clients)) throw new ConfigError('oauth.clients must be a list of {"client_id", "redirect_uris", "name"}')
  const ids = new Set<string>()
  const clients = o.clients.map((c: unknown, i: number) => {
    const at = `oauth.clients[${i}]`
    if (c === null || typeof c !== 'object' || Array.isArray(c)) throw new ConfigError(`${at} must be an object {"client_id", "redirect_uris", "name"}`)
    const { client_id, redirect_uris, name, ...rest } = c as Record<string, unknown>
    if (Object.keys(rest).length > 0) throw new ConfigError(`${at}: unknown key "${Object.keys(rest)[0]}" (known: client_id, redirect_uris, name)`)
    if (typeof client_id !== 'string' || !OAUTH_CLIENT_ID.test(client_id)) throw new ConfigError(`${at}.client_id must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", "~" or "-"`)
    if (ids.has(client_id)) throw new ConfigError(`${at}: client_id "${client_id}" is used twice`)
    ids.add(client_id)
    if (!Array.isArray(redirect_uris) || redirect_uris.length === 0) throw new ConfigError(`${at}.redirect_uris must be a non-empty list`)
    redirect_uris.forEach((u: unknown, j: number) => {
      const problem = redirectUriProblem(u)
      if (problem) throw new ConfigError(`${at}.redirect_uris[${j}]: ${problem}`)
    })
    return { client_id, redirect_uris: redirect_uris as string[], name: name === undefined ? client_id : str(name, `${at}.name`) }
  })
  return {
    clients,
    dynamic_registration: bool(o.dynamic_registration, 'oauth.dynamic_registration'),
    code_seconds: int(o.code_seconds, 'oauth.code_seconds', 1, 60),
    access_token_seconds: int(o.access_token_seconds, 'oauth.access_token_seconds', 1, 24 * 3600),
    refresh_token_seconds: int(o.refresh_token_seconds, 'oauth.refresh_token_seconds', 60, 365 * 24 * 3600),
    max_clients: int(o.max_clients, 'oauth.max_clients', 1, 10_000_000),
    registrations_per_hour: int(o.registrations_per_hour, 'oauth.registrations_per_hour', 1, 1_000_000),
  }
}

/** `sftp`: `{"port": 2222 | "off", "host": null | "<address>", "proxy_protocol": false, "max_startups": "10:30:100", ...}`. */
function sftpConfig(v: unknown): Config['sftp'] {
  const known = Object.keys(DEFAULTS.sftp).join(', ')
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(`sftp must be an object {${known}}`)
  for (const k of Object.keys(v)) if (!(k in DEFAULTS.sftp)) throw new ConfigError(`sftp: unknown key "${k}" (known: ${known})`)
  const s = { ...DEFAULTS.sftp, ...v } as Record<string, unknown>
  const kex = int(s.kex_grace_seconds, 'sftp.kex_grace_seconds', 1, 600)
  const login = int(s.login_grace_seconds, 'sftp.login_grace_seconds', 1, 3600)
  if (kex > login) throw new ConfigError(`sftp.kex_grace_seconds (${kex}) cannot be longer than sftp.login_grace_seconds (${login})`)
  return {
    port: s.port === 'off' ? 'off' : int(s.port, 'sftp.port (a port number or "off")', 0, 65535),
    host: s.host === null ? null : str(s.host, 'sftp.host'),
    proxy_protocol: bool(s.proxy_protocol, 'sftp.proxy_protocol'),
    max_startups: maxStartups(s.max_startups),
    max_startups_per_address: int(s.max_startups_per_address, 'sftp.max_startups_per_address', 1, 100_000),
    kex_grace_seconds: kex,
    login_grace_seconds: login,
    max_connections: int(s.max_connections, 'sftp.max_connections (0: automatic)', 0, 10_000_000),
    threads: s.threads === 'auto' ? 'auto' : int(s.threads, 'sftp.threads ("auto" or a number of threads, 0: the main thread)', 0, 64),
  }
}

/** Parses OpenSSH's MaxStartups form, "start:rate:full" (or a lone "full"). */
export function parseMaxStartups(v: string): { readonly start: number; readonly rate: number; readonly full: number } | null {
  const m = /^(\d{1,7})(?::(\d{1,3}):(\d{1,7}))?$/.exec(v)
  if (!m) return null
  const full = Number(m[3] ?? m[1])
  const start = Number(m[1])
  const rate = m[2] === undefined ? 100 : Number(m[2])
  if (start < 1 || rate > 100 || full < start) return null
  return { start, rate, full }
}

function maxStartups(v: unknown): string {
  if (typeof v !== 'string' || parseMaxStartups(v) === null) {
    throw new ConfigError(`sftp.max_startups must be "start:rate:full" as OpenSSH's MaxStartups (e.g. "10:30:100": past 10 connections not logged in, 30% of new ones are refused, all at 100), or one number (got ${JSON.stringify(v)})`)
  }
  return v
}

/** `s3`: `{"port": 8335 | "off", "host": null | "<address>", "region": "us-east-1", "base_domain": null | "<domain>", "multipart_expiry_hours": 24}`. */
function s3Config(v: unknown): Config['s3'] {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('s3 must be an object {"port", "host", "region", "base_domain", "multipart_expiry_hours"}')
  const known = Object.keys(DEFAULTS.s3)
  for (const k of Object.keys(v)) if (!known.includes(k)) throw new ConfigError(`s3: unknown key "${k}" (known: ${known.join(', ')})`)
  const s = { ...DEFAULTS.s3, ...v } as Record<string, unknown>
  const region = str(s.region, 's3.region')
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new ConfigError(`s3.region must be a region name like "us-east-1" (got ${JSON.stringify(region)})`)
  const domain = s.base_domain === null ? null : str(s.base_domain, 's3.base_domain').toLowerCase()
  if (domain !== null && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(domain)) {
    throw new ConfigError(`s3.base_domain must be a domain name like "s3.example.com" (got ${JSON.stringify(domain)})`)
  }
  return {
    port: s.port === 'off' ? 'off' : int(s.port, 's3.port (a port number or "off")', 0, 65535),
    host: s.host === null ? null : str(s.host, 's3.host'),
    region,
    base_domain: domain,
    multipart_expiry_hours: int(s.multipart_expiry_hours, 's3.multipart_expiry_hours', 1, 24 * 365),
  }
}

/** `mcp`: `{"enabled", "session_idle_seconds", "max_sessions", ...}`. */
function mcpConfig(v: unknown): Config['mcp'] {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('mcp must be an object {"enabled", "session_idle_seconds", "max_sessions", ...}')
  for (const k of Object.keys(v)) if (!(k in DEFAULTS.mcp)) throw new ConfigError(`mcp: unknown key "${k}" (known: ${Object.keys(DEFAULTS.mcp).join(', ')})`)
  const m = { ...DEFAULTS.mcp, ...v } as Record<string, unknown>
  return {
    enabled: bool(m.enabled, 'mcp.enabled'),
    session_idle_seconds: int(m.session_idle_seconds, 'mcp.session_idle_seconds', 1, 7 * 24 * 3600),
    max_sessions: int(m.max_sessions, 'mcp.max_sessions', 1, 1_000_000),
    sessions_per_login: int(m.sessions_per_login, 'mcp.sessions_per_login', 1, 1_000_000),
    sessions_per_address: int(m.sessions_per_address, 'mcp.sessions_per_address', 1, 1_000_000),
    calls_per_login: int(m.calls_per_login, 'mcp.calls_per_login', 1, 10_000),
    max_batch: int(m.max_batch, 'mcp.max_batch', 1, 10_000),
  }
}

/** True for a host that only this machine reaches: localhost, 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1')
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/**
 * A `local` connection serves a folder of the server's disk, with write access: it
 * needs `path` (absolute), and either a `password` that clients send with
 * POST /api/session, or `"public": true` to let anyone who reaches the port in.
 */
function localConnection(o: Record<string, unknown>, at: string): void {
  if (typeof o.path !== 'string' || !o.path.startsWith('/')) throw new ConfigError(`${at}: a local connection needs "path", an absolute folder`)
  if (o.public !== undefined && typeof o.public !== 'boolean') throw new ConfigError(`${at}: "public" must be true or false`)
  if (o.password !== undefined && (typeof o.password !== 'string' || o.password.length < 8 || o.password.length > 1024)) {
    throw new ConfigError(`${at}: "password" must be a string of 8 to 1024 characters`)
  }
  if (o.public === true && o.password !== undefined) throw new ConfigError(`${at}: a local connection is either "public": true or has a "password", not both`)
  if (o.public !== true && o.password === undefined) {
    throw new ConfigError(
      `${at}: a local connection gives write access to ${o.path}: set "password" (clients send it with POST /api/session), or "public": true to let anyone who can reach the port use it`,
    )
  }
}

/**
 * The parameters by which a storage type takes its user's credentials: a connection
 * that fixes none of them leaves the credentials to each user.
 */
const CREDENTIAL_PARAMS: Readonly<Record<string, readonly string[]>> = {
  sftp: ['username', 'password', 'private_key'],
  ftp: ['username', 'password'],
  smb: ['username', 'password'],
  s3: ['access_key_id', 'secret_access_key'],
}

/** An sftp, ftp, smb or s3 connection that fixes none of its credential parameters. */
export function leavesCredentialsToUsers(c: ConnectionConfig): boolean {
  const creds = CREDENTIAL_PARAMS[c.type]
  return creds !== undefined && creds.every((k) => c[k] === undefined)
}

/**
 * `gateway_passthrough` (docs/gateways.md): pass-through gateway logins
 * (`<user>@<label>`), on by default where the connection leaves the credentials to
 * its users; `false` turns them off; `true` anywhere else is a mistake said at start-up.
 */
function gatewayPassthrough(c: ConnectionConfig, at: string): void {
  const v = c.gateway_passthrough
  if (v === undefined) return
  if (typeof v !== 'boolean') throw new ConfigError(`${at}: "gateway_passthrough" must be true or false`)
  if (v && !leavesCredentialsToUsers(c)) {
    throw new ConfigError(
      `${at}: "gateway_passthrough" needs an sftp, ftp, smb or s3 connection that leaves the credentials to its users (it fixes none of ${(CREDENTIAL_PARAMS[c.type] ?? ['username', 'password']).join(', ')})`,
    )
  }
}

/** `metrics`: `{"allow_loopback": true, "token": null}`; a token is a secret of at least 16 characters. */
function metricsConfig(v: unknown): Config['metrics'] {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('metrics must be an object {"allow_loopback", "token"}')
  for (const k of Object.keys(v)) if (!(k in DEFAULTS.metrics)) throw new ConfigError(`metrics: unknown key "${k}" (known: allow_loopback, token)`)
  const m = { ...DEFAULTS.metrics, ...v } as Record<string, unknown>
  if (m.token !== null && (typeof m.token !== 'string' || m.token.length < 16 || /\s/.test(m.token))) {
    throw new ConfigError('metrics.token must be null or a string of at least 16 characters without spaces')
  }
  return { allow_loopback: bool(m.allow_loopback, 'metrics.allow_loopback'), token: m.token as string | null }
}

/** `cors`: `{"origins": ["https://app.example.com", ...]}`, each exactly a browser Origin. */
function corsConfig(v: unknown): Config['cors'] {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('cors must be an object {"origins": [...]}')
  for (const k of Object.keys(v)) if (k !== 'origins') throw new ConfigError(`cors: unknown key "${k}" (known: origins)`)
  const origins = (v as { origins?: unknown }).origins ?? []
  if (!Array.isArray(origins)) throw new ConfigError('cors.origins must be a list of origins like "https://app.example.com"')
  origins.forEach((o: unknown, i: number) => {
    let ok = false
    try {
      const u = new URL(o as string)
      ok = typeof o === 'string' && (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === o
    } catch {}
    if (!ok) throw new ConfigError(`cors.origins[${i}] must be an origin like "https://app.example.com" (scheme, host, optional port; no path or trailing "/"; got ${JSON.stringify(o)})`)
  })
  return { origins: origins as string[] }
}

const PLUGIN_KEYS = new Set(['name', 'path', 'options'])

/** `plugins`: names of built-ins, or objects; normalised to PluginConfig. */
function pluginList(v: unknown): PluginConfig[] {
  if (!Array.isArray(v)) throw new ConfigError('plugins must be a list of plugin names or {"name", "path", "options"} objects')
  const seen = new Set<string>()
  return v.map((p: unknown, i: number): PluginConfig => {
    const at = `plugins[${i}]`
    let o: Record<string, unknown>
    if (typeof p === 'string') o = { name: p }
    else if (p !== null && typeof p === 'object' && !Array.isArray(p)) o = p as Record<string, unknown>
    else throw new ConfigError(`${at} must be a plugin name or a {"name", "path", "options"} object`)
    for (const k of Object.keys(o)) if (!PLUGIN_KEYS.has(k)) throw new ConfigError(`${at}: unknown key "${k}" (known: name, path, options)`)
    const name = o.name
    if (typeof name !== 'string' || !PLUGIN_NAME.test(name)) {
      throw new ConfigError(`${at}: the name must be 1 to 64 of a-z, 0-9 and "_", starting with a letter (got ${JSON.stringify(name)})`)
    }
    if (seen.has(name)) throw new ConfigError(`${at}: plugin "${name}" is enabled twice`)
    seen.add(name)
    if (o.path !== undefined && (typeof o.path !== 'string' || !o.path.startsWith('/'))) {
      throw new ConfigError(`${at}: "path" must be the absolute path of the plugin's module (got ${JSON.stringify(o.path)})`)
    }
    const options = o.options ?? {}
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new ConfigError(`${at}: "options" must be an object`)
    const base = { name, options: options as Record<string, unknown> }
    return typeof o.path === 'string' ? { ...base, path: o.path } : base
  })
}

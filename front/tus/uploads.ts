/**
 * @module front/tus/uploads
 * Resumable uploads: the tus 1.0 protocol (core, creation, creation-with-upload,
 * creation-defer-length, termination, expiration) under /api/files/tus/, spoken by
 * @tus/server, the bytes staged in `<staging_dir>/tus/` (the data directory by default)
 * by a worker thread (staging-store.ts over core/staged.ts: the main thread does no
 * file I/O for them) and their records in the state store (records.ts): with the store
 * and the staging folder shared, any node serves any upload.
 *
 * filegate keeps what the library does not know about:
 * - who may: every request is authenticated like POST /api/files/cat (the caller's
 *   Access, front/server.ts); the creation checks the target as cat's write would (the view's `checkWrite`), and the
 *   upload is bound to the credential that created it (a hash of the session's or
 *   share's id, kept in the upload's record): any other caller gets 404;
 * - where it goes: the target path is fixed at creation (`?path=` or `path` in
 *   Upload-Metadata); when the last byte is staged, the file is committed into the
 *   storage with the same rights and the same atomic write as cat (the view's
 *   `commitStaged`: one task on the thread that writes the target reads the staged file
 *   there, no byte comes back to this thread), then the staged copy is removed. The
 *   target never exists half-written;
 * - what is left: an upload that expired, was terminated, or can never be stored
 *   (say the target appeared meanwhile and may not be replaced) leaves nothing. Expiry
 *   is checked on every access and by a periodic sweep, which goes by the records in
 *   the store: several nodes may sweep one shared folder.
 *
 * Where the library departs from the protocol's MUSTs, the checks come first here:
 * an unsupported Tus-Resumable is 412 (with Tus-Version), a PATCH of another type 415.
 */
import { createHash, randomBytes } from 'node:crypto'
import { Metadata, Server, type Upload } from '@tus/server'
import { ApiError, toApiError } from '../../core/api-error.js'
import { stagingError } from '../../core/errors.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import type { StagedArea } from '../../core/staged.js'
import type { StagingHold, StagingQuota } from '../../core/staging-quota.js'
import type { StateStore } from '../../core/state.js'
import { DOOR_PATH_RULES } from '../../core/paths.js'
import { refusal } from '../../core/permissions.js'
import type { RequestContext } from '../../core/view.js'
import type { Access } from '../access.js'
import type { Logger } from '../log.js'
import { HTTP_STATUS } from '../http/status.js'
import { ctxOf, flag } from '../routes/files.js'
import { StoreConfigstore } from './records.js'
import { StagingStore } from './staging-store.js'
import { fromWebResponse, toWebRequest } from './web.js'

export const TUS_PATH = '/api/files/tus'
export const isTusPath = (path: string): boolean => path === TUS_PATH || path.startsWith(`${TUS_PATH}/`)

const TUS_VERSION = '1.0.0'
/** An upload's id: 128 random bits, hex; checked before the library names any file with it. */
const UPLOAD_ID = /^[0-9a-f]{32}$/
/** filegate's own entries in an upload's metadata; a client's keys of these names are dropped. */
const OWNER = 'filegate-owner'
const TARGET = 'filegate-target'
const OVERWRITE = 'filegate-overwrite'
/** "share" when the upload was made through a share link: its bytes count against the share's limit, else the login's. */
const VIA = 'filegate-via'
const RESERVED = new Set([OWNER, TARGET, OVERWRITE, VIA])
/** The query parameters that carry a share link's credential, kept in the upload's URL. */
const CREDENTIAL_PARAMS = ['share', 'key'] as const

export interface TusOptions {
  /** The staging area (its folder created 0700 by the first upload), shared by the nodes of a cluster. */
  readonly area: StagedArea
  /** Where the uploads' records are. */
  readonly state: StateStore
  readonly expiryMs: number
  /** Largest Upload-Length (413 over it); null: no limit. */
  readonly maxSize: number | null
  readonly logger: Logger
  /** The bounds on staged bytes (per login, per share, in total, the disk's reserve); none: unbounded. */
  readonly quota?: StagingQuota
}

/** Resolves the caller the way every file route does (front/server.ts). */
export type Authenticate = () => Promise<Access>

/** What one request through the library carries besides the web Request. */
interface Call {
  readonly access: Access
  readonly requestId: string
  readonly target?: string
  readonly overwrite?: boolean
  /** An error that is not the protocol's: answered by filegate's envelope, not the library's text. */
  failure?: unknown
  /** An upload stored by its creation request, to remove from the staging folder once answered. */
  stored?: string
  /** A creation's body length, to charge once the upload has an id… */
  readonly reserve?: number
  /** …and the upload it was charged to. */
  created?: string
}

const NOT_FOUND = () => new ApiError('NOT_FOUND', 'no such upload')

export class TusUploads {
  readonly #opts: TusOptions
  readonly #store: StagingStore
  readonly #records: StoreConfigstore
  readonly #server: Server
  readonly #calls = new WeakMap<Request, Call>()
  /** Uploads being stored into their target, by id: a second finisher waits for the first. */
  readonly #commits = new Map<string, Promise<void>>()
  /** The staged bytes of each upload, counted against its owner's and the server's limits. */
  readonly #holds = new Map<string, StagingHold>()
  /** Bytes charged to an upload's hold for the request writing it now (its declared length). */
  readonly #reserved = new Map<string, number>()
  readonly #sweeper: NodeJS.Timeout

  /** Opens the staging folder and removes what expired while filegate was stopped. */
  static async open(opts: TusOptions): Promise<TusUploads> {
    await opts.area.prepare()
    const uploads = new TusUploads(opts)
    await uploads.sweep()
    await uploads.#countStaged()
    return uploads
  }

  private constructor(opts: TusOptions) {
    this.#opts = opts
    this.#records = new StoreConfigstore(opts.state)
    this.#store = new StagingStore({
      area: opts.area,
      records: this.#records,
      expiryMs: opts.expiryMs,
      chargeOf: (id) => {
        const hold = this.#holds.get(id)
        return hold && { hold, reserved: this.#reserved.get(id) ?? 0 }
      },
    })
    this.#server = new Server({
      path: TUS_PATH,
      datastore: this.#store,
      ...(opts.maxSize === null ? {} : { maxSize: opts.maxSize }),
      // front/cors.ts answers CORS for every route; the library adds none.
      allowedOrigins: () => false,
      namingFunction: () => randomBytes(16).toString('hex'),
      getFileIdFromRequest: (req) => uploadIdOf(new URL(req.url).pathname) ?? undefined,
      // Relative, with the share link's parameters: a client resumes with the same credential.
      generateUrl: (req, { path, id }) => {
        const from = new URL(req.url).searchParams
        const keep = new URLSearchParams()
        for (const p of CREDENTIAL_PARAMS) for (const v of from.getAll(p)) keep.append(p, v)
        return `${path}/${id}${keep.size > 0 ? `?${keep}` : ''}`
      },
      onUploadCreate: async (req, upload) => {
        const call = this.#call(req)
        const metadata: Record<string, string | null> = {}
        for (const [k, v] of Object.entries(upload.metadata ?? {})) if (!RESERVED.has(k)) metadata[k] = v
        metadata[OWNER] = ownerOf(call.access)
        metadata[TARGET] = call.target!
        metadata[OVERWRITE] = String(call.overwrite)
        if (viaShare(call.access)) metadata[VIA] = 'share'
        const hold = this.#holdOf(upload.id, metadata)
        if (hold && call.reserve !== undefined) {
          // creation-with-upload: the body's declared length, charged before it is read
          await hold.grow(call.reserve)
          this.#reserved.set(upload.id, call.reserve)
          call.created = upload.id
        }
        return { metadata }
      },
      onUploadFinish: async (req, upload) => {
        const call = this.#call(req)
        // A creation still reads the upload's record after this hook: its staged copy
        // goes once the library is done (nobody else knows the id before the answer).
        const creating = req.method === 'POST'
        await this.#commit(upload, call.access, call.requestId, !creating)
        if (creating) call.stored = upload.id
        return {}
      },
      onResponseError: (req, err) => {
        if (typeof (err as { status_code?: unknown }).status_code === 'number') return undefined // the protocol's own answer
        this.#call(req).failure = stagingError(err)
        return { status_code: 500, body: 'internal error\n' }
      },
    })
    const every = Math.min(Math.max(opts.expiryMs / 2, 1000), 10 * 60_000)
    this.#sweeper = setInterval(() => {
      this.sweep().catch((err: unknown) => opts.logger.log('warn', 'tus sweep failed', { err: String(err) }))
    }, every)
    this.#sweeper.unref()
  }

  /** A request under /api/files/tus; errors are thrown, for front/server.ts to answer through `tusReply`. */
  async handle(req: HttpRequest, authenticate: Authenticate): Promise<HttpReply> {
    return tusReply(req, await this.#handle(req, authenticate))
  }

  async #handle(req: HttpRequest, authenticate: Authenticate): Promise<HttpReply> {
    const version = req.header('tus-resumable')
    if (version !== undefined && version !== TUS_VERSION) {
      return { status: 412, headers: { 'tus-version': TUS_VERSION, 'content-type': 'text/plain; charset=utf-8' }, body: `Tus-Resumable ${TUS_VERSION} required\n` }
    }
    const id = req.path.replace(/\/+$/, '') === TUS_PATH ? null : uploadIdOf(req.path)
    if (id === null) {
      if (req.method !== 'POST') throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${TUS_PATH}; use POST to create an upload`)
      return this.#create(req, await authenticate())
    }
    if (id === undefined) throw NOT_FOUND()
    if (req.method !== 'HEAD' && req.method !== 'PATCH' && req.method !== 'DELETE') {
      throw new ApiError('INVALID_INPUT', `${req.method} is not supported on an upload; use HEAD, PATCH or DELETE`)
    }
    if (req.method === 'PATCH' && req.header('content-type') !== 'application/offset+octet-stream') {
      throw new ApiError('UNSUPPORTED_MEDIA', 'a PATCH must be sent as Content-Type: application/offset+octet-stream')
    }
    const access = await authenticate()
    await this.#commits.get(id)?.catch(() => {})
    const upload = await this.#owned(id, access)
    if (req.method === 'PATCH') {
      if (!access.view.permissions.can_upload) throw refusal('can_upload')
      return this.#patch(req, access, upload)
    }
    if (req.method === 'HEAD' && upload.size !== undefined && upload.offset === upload.size) {
      // All bytes are in but the target is not stored yet (it failed before): store it
      // now, so that an offset equal to the length always means the file is there.
      await this.#commit(upload, access, req.requestId)
      return { status: 200, headers: headHeaders(upload) }
    }
    const reply = await this.#delegate(req, { access, requestId: req.requestId })
    if (req.method === 'DELETE' && reply.status === 204) this.#dropHold(id) // terminated: its bytes are gone
    return reply
  }

  /**
   * A PATCH: its declared length is charged to the upload's hold before a byte is read
   * (over a limit, 413 or 507 comes before the body); what is not sent is given back.
   */
  async #patch(req: HttpRequest, access: Access, upload: Upload): Promise<HttpReply> {
    const hold = this.#holdOf(upload.id, upload.metadata ?? {})
    const length = Number(req.header('content-length') ?? NaN)
    const declared = Number.isSafeInteger(length) && length > 0 ? Math.min(length, upload.size === undefined ? length : upload.size - upload.offset) : 0
    if (hold && declared > 0) {
      if (this.#reserved.has(upload.id)) throw new ApiError('CONFLICT', 'this upload is being written by another request')
      await hold.grow(declared)
      this.#reserved.set(upload.id, declared)
    }
    try {
      return await this.#delegate(req, { access, requestId: req.requestId })
    } finally {
      if (declared > 0 && this.#reserved.get(upload.id) === declared) {
        this.#reserved.delete(upload.id)
        // The write set the hold to what is on disk; a PATCH that never wrote gives its reservation back.
        const size = await this.#store.stagedSize(upload.id).catch(() => null)
        if (size === null) this.#dropHold(upload.id)
        else hold?.setTo(size)
      }
    }
  }

  /** The hold of upload `id`'s staged bytes (made on first use); none without a quota. */
  #holdOf(id: string, metadata: Record<string, string | null>): StagingHold | undefined {
    const quota = this.#opts.quota
    if (!quota) return undefined
    let hold = this.#holds.get(id)
    if (!hold) {
      const owner = metadata[OWNER] ?? id
      hold = quota.hold(this.#opts.area.dir, metadata[VIA] === 'share' ? { login: null, share: owner } : { login: owner, share: null })
      this.#holds.set(id, hold)
    }
    return hold
  }

  #dropHold(id: string): void {
    this.#holds.get(id)?.release()
    this.#holds.delete(id)
    this.#reserved.delete(id)
  }

  /** Counts the uploads staged before a restart against their owners' limits. */
  async #countStaged(): Promise<void> {
    if (!this.#opts.quota) return
    for (const id of await this.#opts.state.expiredTusUploads(Number.MAX_SAFE_INTEGER)) {
      const r = await this.#opts.state.getTusUpload(id)
      const size = await this.#store.stagedSize(id).catch(() => null)
      if (r === null || size === null) continue
      this.#holdOf(id, (JSON.parse(r.upload) as Upload).metadata ?? {})?.setTo(size)
    }
  }

  /** OPTIONS: the protocol's discovery headers, added to the CORS preflight answer. */
  options(preflight: HttpReply): HttpReply {
    const headers: Record<string, string> = {
      ...preflight.headers,
      'tus-resumable': TUS_VERSION,
      'tus-version': TUS_VERSION,
      'tus-extension': this.#store.extensions.join(','),
    }
    if (this.#opts.maxSize !== null) headers['tus-max-size'] = String(this.#opts.maxSize)
    return { ...preflight, headers }
  }

  /**
   * Removes every upload past its expiry, going by the records in the store (nodes that
   * share the staging folder sweep it together: an upload another node is writing has
   * its record), and the staged files no record names that nobody wrote to for as long
   * (a crash between a file and its record).
   */
  async sweep(): Promise<void> {
    const now = Date.now()
    const { area, expiryMs, state } = this.#opts
    for (const id of await state.expiredTusUploads(now - expiryMs)) if (!this.#commits.has(id)) await this.#discard(id)
    // Uploads another node (sharing the staging folder) finished or terminated: no longer counted here.
    for (const id of [...this.#holds.keys()]) {
      if (!this.#reserved.has(id) && !this.#commits.has(id) && (await state.getTusUpload(id)) === null) this.#dropHold(id)
    }
    for (const { name, mtimeMs } of await area.entries()) {
      if (name.endsWith('.json') && UPLOAD_ID.test(name.slice(0, -'.json'.length))) {
        await this.#adopt(name.slice(0, -'.json'.length))
        continue
      }
      if (!UPLOAD_ID.test(name) || this.#commits.has(name) || (await state.getTusUpload(name)) !== null) continue
      if (now > mtimeMs + expiryMs) await area.remove(name)
    }
  }

  /** A record an earlier filegate kept beside the bytes (`<id>.json`): moved into the store. */
  async #adopt(id: string): Promise<void> {
    try {
      const text = await this.#opts.area.take(`${id}.json`)
      if (text !== null && (await this.#opts.state.getTusUpload(id)) === null) await this.#records.set(id, JSON.parse(text) as Upload)
    } catch {
      // unreadable: its upload cannot be resumed; the bytes go as debris
    }
  }

  close(): void {
    clearInterval(this.#sweeper)
  }

  async #create(req: HttpRequest, access: Access): Promise<HttpReply> {
    if (!access.view.permissions.can_upload) throw refusal('can_upload')
    let metadata: Record<string, string | null> = {}
    const header = req.header('upload-metadata')
    if (header !== undefined) {
      try {
        metadata = Metadata.parse(header)
      } catch {
        throw new ApiError('INVALID_INPUT', 'Upload-Metadata must be comma-separated "key base64value" pairs with unique keys')
      }
    }
    const { path, dirHint } = DOOR_PATH_RULES.http(req.query.get('path') ?? metadata.path ?? undefined, 'path')
    if (dirHint || path === '/') throw new ApiError('INVALID_INPUT', 'the upload path must name a file, not a directory')
    const overwrite = flag(req, 'overwrite', true)
    const length = Number(req.header('upload-length') ?? NaN)
    const owner = viaShare(access) ? { login: null, share: ownerOf(access) } : { login: ownerOf(access), share: null }
    // An upload that could never be staged is refused before it exists.
    if (Number.isSafeInteger(length)) this.#opts.quota?.fits(owner, length)
    // What the write would refuse is refused now (the rights, a file that may not be
    // replaced, a link that leads outside the storage...), not after the body is staged.
    await access.view.checkWrite(ctxOf(req), path, { overwrite })
    const body = Number(req.header('content-length') ?? NaN)
    const reserve = Number.isSafeInteger(body) && body > 0 ? body : undefined
    const call: Call = { access, requestId: req.requestId, target: path, overwrite, ...(reserve === undefined ? {} : { reserve }) }
    try {
      return await this.#delegate(req, call)
    } finally {
      const id = call.created
      if (id !== undefined) {
        // creation-with-upload: the write set the hold to what is on disk, if anything is
        this.#reserved.delete(id)
        const size = await this.#store.stagedSize(id).catch(() => null)
        if (size === null) this.#dropHold(id)
        else this.#holds.get(id)?.setTo(size)
      }
    }
  }

  async #delegate(req: HttpRequest, call: Call): Promise<HttpReply> {
    const web = toWebRequest(req)
    this.#calls.set(web, call)
    const res = await this.#server.handleWeb(web)
    if (call.stored !== undefined) await this.#discard(call.stored)
    if (call.failure !== undefined) throw call.failure
    const reply = await fromWebResponse(res)
    const meta = reply.headers?.['upload-metadata']
    if (meta === undefined) return reply
    const { 'upload-metadata': _, ...headers } = reply.headers!
    const shown = clientMetadata(Metadata.parse(meta))
    return { ...reply, headers: shown === null ? headers : { ...headers, 'upload-metadata': shown } }
  }

  #call(req: Request): Call {
    const call = this.#calls.get(req)
    if (!call) throw new Error('tus: a request reached the library without going through TusUploads.handle')
    return call
  }

  /** The upload if `access` created it and it has not expired (then it is removed: 410). */
  async #owned(id: string, access: Access): Promise<Upload> {
    let upload: Upload
    try {
      upload = await this.#store.getUpload(id)
    } catch {
      throw NOT_FOUND()
    }
    if (upload.metadata?.[OWNER] !== ownerOf(access)) throw NOT_FOUND()
    const created = upload.creation_date ? Date.parse(upload.creation_date) : 0
    if (Date.now() > created + this.#opts.expiryMs) {
      await this.#discard(id)
      throw new ApiError('GONE', 'this upload expired')
    }
    return upload
  }

  /**
   * Stores a complete upload into its target and removes the staged copy; once. The
   * write is not tied to the client's connection: the last byte is in, the file is
   * stored even if the client leaves. A refusal (4xx: the target appeared and may not
   * be replaced, a parent is a file...) can never succeed, so it removes the upload
   * too; a backend failure (5xx) keeps it for a retry.
   */
  #commit(upload: Upload, access: Access, requestId: string, discard = true): Promise<void> {
    const running = this.#commits.get(upload.id)
    if (running) return running
    const id = upload.id
    const meta = upload.metadata ?? {}
    const ctx: RequestContext = { requestId, signal: new AbortController().signal }
    const opts = upload.size === undefined ? { overwrite: meta[OVERWRITE] === 'true' } : { overwrite: meta[OVERWRITE] === 'true', size: upload.size }
    const commit = (async () => {
      let written
      try {
        // One task on the thread that writes the target: it reads the staged file itself.
        written = await access.view.commitStaged(ctx, meta[TARGET]!, { area: this.#opts.area.dir, id }, opts)
      } catch (err) {
        if (HTTP_STATUS[toApiError(err).code] < 500) await this.#discard(id)
        throw err
      }
      if (written === null) {
        // Terminated or swept meanwhile: nothing was written, nothing is left to retry.
        await this.#discard(id)
        throw NOT_FOUND()
      }
      if (discard) await this.#discard(id)
    })().finally(() => this.#commits.delete(id))
    this.#commits.set(id, commit)
    return commit
  }

  async #discard(id: string): Promise<void> {
    await this.#opts.state.deleteTusUpload(id)
    await this.#opts.area.remove(id)
    this.#dropHold(id)
  }
}

/**
 * Every answer of the protocol names its version, errors included; an answer to HEAD
 * has no body (uploads are probed with HEAD on kept-alive connections).
 */
export function tusReply(req: HttpRequest, reply: HttpReply): HttpReply {
  const headers = { ...reply.headers, 'tus-resumable': TUS_VERSION }
  if (req.method !== 'HEAD') return { ...reply, headers }
  const { body: _, ...rest } = reply
  return { ...rest, headers }
}

/** The upload id in `/api/files/tus/<id>`; undefined when the path has one of another shape. */
function uploadIdOf(path: string): string | undefined {
  const id = path.slice(TUS_PATH.length + 1).replace(/\/+$/, '')
  return UPLOAD_ID.test(id) ? id : undefined
}

/** The credential an upload is bound to: a token's id, or `share:<id>` for a share link; hashed. */
function ownerOf(access: Access): string {
  return createHash('sha256').update(`filegate tus owner\0${access.session.id}`).digest('base64url')
}

/** Whether `access` is a share link's (its uploads count against the share's staging limit). */
const viaShare = (access: Access): boolean => access.session.id.startsWith('share:')

/** The client's own metadata, as the header shows it; null when there is none. */
function clientMetadata(metadata: Record<string, string | null>): string | null {
  const own = Object.fromEntries(Object.entries(metadata).filter(([k]) => !RESERVED.has(k)))
  return Object.keys(own).length > 0 ? Metadata.stringify(own) : null
}

/** HEAD of a finished upload, as the protocol shows it. */
function headHeaders(upload: Upload): Record<string, string> {
  const headers: Record<string, string> = {
    'cache-control': 'no-store',
    'upload-offset': String(upload.offset),
    'upload-length': String(upload.size),
  }
  const meta = clientMetadata(upload.metadata ?? {})
  if (meta !== null) headers['upload-metadata'] = meta
  return headers
}

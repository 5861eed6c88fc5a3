/**
 * @module front/routes/files
 * The /api/files/* endpoints (docs/api.md, "Files"). Each handler validates its
 * parameters (paths through core/paths.ts, once) and calls the caller's view
 * (core/view.ts), which checks the caller's rights; errors become the contract's
 * envelope in front/server.ts (a refused right: 403 FORBIDDEN, naming it).
 */
import mime from 'mime-types'
import { ApiError } from '../../core/api-error.js'
import type { Entry, EntryKind } from '../../core/driver.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import type { ReadHead, TransformRequest, ZipCompression } from '../../core/messages.js'
import type { TransformFile } from '../../core/plugin.js'
import { type ClientPath, DOOR_PATH_RULES, baseName, trailingSlashOnFile } from '../../core/paths.js'
import { parseRange } from '../../core/range.js'
import type { FsEntry, HeadedStream, RequestContext } from '../../core/view.js'
import type { Access } from '../access.js'
import { errorReply, okReply } from '../http/status.js'

/** The HTTP API's path rule (core/paths.ts). */
const parseClientPath = DOOR_PATH_RULES.http

export type FileHandler = (req: HttpRequest, access: Access) => Promise<HttpReply>

export const ctxOf = (req: HttpRequest): RequestContext => ({ requestId: req.requestId, signal: req.signal })
/** For transfers: the client's address and credential, which the transfer limits count. */
export const transferCtx = (req: HttpRequest, access: Access): RequestContext => ({
  requestId: req.requestId,
  signal: req.signal,
  client: { address: req.remoteAddress, credential: access.session.id },
})

/** A path parameter, canonical. */
const pathParam = (req: HttpRequest, name = 'path') => parseClientPath(req.query.get(name) ?? undefined, name)

/** What is at `path`: a file, a directory, or nothing (null). */
async function kindOf(req: HttpRequest, access: Access, path: string): Promise<EntryKind | null> {
  try {
    return (await access.view.stat(ctxOf(req), path)).kind
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return null
    throw err
  }
}

/**
 * The trailing-slash rule (core/paths.ts), for every endpoint: a path written with a
 * trailing "/" names a directory, so a file named that way is the same 400 whatever
 * the operation. Costs a stat only when the client wrote the "/".
 */
async function slashRule(req: HttpRequest, access: Access, what: string, p: ClientPath): Promise<void> {
  if (p.dirHint && p.path !== '/' && (await kindOf(req, access, p.path)) === 'file') throw trailingSlashOnFile(what, p.path)
}

/** true/false parameter; absent → `dflt`. */
export function flag(req: HttpRequest, name: string, dflt: boolean): boolean {
  const v = req.query.get(name)
  if (v === null) return dflt
  if (v === 'true' || v === '1' || v === '') return true
  if (v === 'false' || v === '0') return false
  throw new ApiError('INVALID_INPUT', `"${name}" must be true or false`)
}

/** Entries one `ls` answer holds at most, by default (`ls_max_entries`); and the most a page may ask for. */
export const LS_MAX_ENTRIES = 10_000

/**
 * GET /api/files/ls. A folder of up to `max` entries is answered whole, in the storage's
 * order, as it always was. A larger one is refused (413) unless asked for in pages:
 * `limit` (1 to `max`) entries at a time in UTF-8 byte order of their names, each answer
 * with the `next_cursor` that asks for the next page (null after the last). Pages come
 * from the view's listing snapshots, as the gateways' pages do (gateways/connection/list-pages.ts):
 * the folder is listed once for all its pages while they follow each other, and a
 * caller's snapshots count against its own share (a session, or one share link) of
 * their budget.
 */
export const ls = async (req: HttpRequest, access: Access, opts: { max?: number } = {}): Promise<HttpReply> => {
  const max = opts.max ?? LS_MAX_ENTRIES
  const { path, dirHint } = pathParam(req)
  const cursor = req.query.get('cursor')
  const limitParam = req.query.get('limit')
  const refine = (err: unknown): never => {
    // The trailing-slash rule without a stat: listing a file is ENOTDIR anyway.
    throw dirHint && (err as { code?: unknown }).code === 'ENOTDIR' ? trailingSlashOnFile('path', path) : err
  }
  if (limitParam === null && cursor === null) {
    const entries = await access.view.listAll(ctxOf(req), path).catch(refine)
    if (entries.length > max) {
      throw new ApiError('TOO_LARGE', `${path} holds ${entries.length} entries, more than one answer holds (${max}): ask for it in pages with limit=${max} (then cursor=<next_cursor>)`)
    }
    return okReply({ results: entries.map(toListing), permissions: access.view.permissions })
  }
  const limit = limitParam === null ? max : Number(limitParam)
  if (!/^[1-9][0-9]*$/.test(limitParam ?? '1') || !Number.isSafeInteger(limit) || limit > max) throw new ApiError('INVALID_INPUT', `"limit" must be a whole number from 1 to ${max}`)
  if (cursor === '') throw new ApiError('INVALID_INPUT', '"cursor" is empty: pass the next_cursor of the previous page, or leave it out for the first page')
  const page = await access.view.list(ctxOf(req), path, { cursor, limit }).catch(refine)
  return okReply({ results: page.entries.map(toListing), next_cursor: page.cursor, permissions: access.view.permissions })
}

const toListing = (e: FsEntry) => ({ name: e.name, type: e.kind === 'dir' ? 'directory' : 'file', size: e.size, time: e.mtimeMs ?? 0 })

/** Picks a plugin's download transform for a request (front/plugins.ts). */
export interface TransformSelector {
  selectTransform(query: URLSearchParams, file: TransformFile): TransformRequest | null
}

/** GET and HEAD. With `transforms`, a plugin may take the download over (docs/plugins.md). */
export const download = async (req: HttpRequest, access: Access, transforms?: TransformSelector): Promise<HttpReply> => {
  const p = pathParam(req)
  const { path, dirHint } = p
  await slashRule(req, access, 'path', p)
  if (dirHint || path === '/') throw new ApiError('INVALID_INPUT', `${path} is a directory: use /api/files/ls or /api/files/zip`)
  const name = baseName(path)
  const transform = transforms?.selectTransform(req.query, { path, name, type: contentTypeOf(name) }) ?? null
  if (transform) return transformedReply(req, path, await access.view.readFile(transferCtx(req, access), path, { transform }))
  const spec = parseRange(req.header('range'))
  const stream = await access.view.readFile(transferCtx(req, access), path, spec === 'invalid' || spec === null ? {} : { range: spec })
  try {
    return replyFor(req, path, spec === 'invalid', stream)
  } catch (err) {
    stream.cancel() // the worker would otherwise wait for credits that never come
    throw err
  }
}

/** The reply to a read whose head arrived: 200, 206, 304, 416, or HEAD's headers. */
function replyFor(req: HttpRequest, path: string, badRange: boolean, stream: HeadedStream<ReadHead>): HttpReply {
  const { entry, range, unsatisfiable } = stream.head
  const headers = fileHeaders(req, entry, path)
  const cancel = () => stream.cancel()
  if (notModified(req, entry, headers.etag!)) return { status: 304, headers, finally: cancel }
  if (badRange || unsatisfiable) {
    stream.cancel()
    const { reply } = errorReply(new ApiError('RANGE_NOT_SATISFIABLE', `the range must lie within the file's ${entry.size} bytes`))
    return { ...reply, headers: { ...reply.headers, 'content-range': `bytes */${entry.size}` } }
  }
  const status = range ? 206 : 200
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${entry.size}`
  const length = range ? range.end - range.start + 1 : entry.size
  if (req.method === 'HEAD') return { status, headers, length, finally: cancel }
  return { status, headers, length, body: stream.body, finally: cancel }
}

/**
 * A transformed download: the plugin's media type, streamed with no length; no ETag,
 * Last-Modified or Accept-Ranges, as they would describe the original file (Range and
 * conditional headers were not applied).
 */
function transformedReply(req: HttpRequest, path: string, stream: HeadedStream<ReadHead>): HttpReply {
  const cancel = () => stream.cancel()
  try {
    const headers: Record<string, string> = {
      'content-type': stream.head.transformed?.type ?? 'application/octet-stream',
      'cache-control': 'private, no-cache',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
    }
    const name = req.query.get('name')
    if (name !== null) headers['content-disposition'] = attachment(name === '' ? baseName(path) : name)
    if (req.method === 'HEAD') return { status: 200, headers, finally: cancel }
    return { status: 200, headers, body: stream.body, finally: cancel }
  } catch (err) {
    cancel()
    throw err
  }
}

const contentTypeOf = (name: string): string => mime.contentType(name) || 'application/octet-stream'

function fileHeaders(req: HttpRequest, e: Entry, path: string): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': contentTypeOf(baseName(path)),
    'accept-ranges': 'bytes',
    etag: `"${e.size.toString(16)}-${(e.mtimeMs ?? 0).toString(16)}"`,
    'cache-control': 'private, no-cache',
    // Uploaded content must never run as a page of this origin.
    'x-content-type-options': 'nosniff',
    'content-security-policy': "sandbox; default-src 'none'",
  }
  if (e.mtimeMs !== null) h['last-modified'] = new Date(e.mtimeMs).toUTCString()
  const name = req.query.get('name')
  if (name !== null) h['content-disposition'] = attachment(name === '' ? baseName(path) : name)
  return h
}

function notModified(req: HttpRequest, e: Entry, etag: string): boolean {
  const inm = req.header('if-none-match')
  if (inm !== undefined) {
    return inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)
  }
  const ims = req.header('if-modified-since')
  if (ims === undefined || e.mtimeMs === null) return false
  const since = Date.parse(ims)
  return !Number.isNaN(since) && Math.floor(e.mtimeMs / 1000) * 1000 <= since
}

/** Content-Disposition with an ASCII fallback and the exact UTF-8 name (RFC 6266). */
export function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_')
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

export const upload: FileHandler = async (req, access) => {
  const p = pathParam(req)
  const { path, dirHint } = p
  const overwrite = flag(req, 'overwrite', true)
  await slashRule(req, access, 'path', p)
  if (dirHint || path === '/') throw new ApiError('INVALID_INPUT', 'the upload path must name a file, not a directory')
  const size = req.contentLength
  await access.view.writeFile(transferCtx(req, access), path, req.body, size === null ? { overwrite } : { overwrite, size })
  return okReply()
}

export const zip: FileHandler = async (req, access) => {
  const raw = req.query.getAll('path')
  if (raw.length === 0) throw new ApiError('INVALID_INPUT', 'missing parameter "path"')
  const parsed = raw.map((p) => parseClientPath(p, 'path'))
  for (const p of parsed) await slashRule(req, access, 'path', p)
  const paths = parsed.map((p) => p.path)
  const c = req.query.get('compression')
  if (c !== null && c !== 'store' && c !== 'auto') throw new ApiError('INVALID_INPUT', '"compression" must be "store" or "auto"')
  const compression: ZipCompression = c === 'store' ? 'store' : 'auto'
  const stream = await access.view.zip(transferCtx(req, access), paths, compression)
  const single = paths.length === 1 && paths[0] !== '/' ? baseName(paths[0]!) : 'download'
  return {
    status: 200,
    headers: { 'content-type': 'application/zip', 'content-disposition': attachment(`${single}.zip`), 'cache-control': 'no-store' },
    body: stream.body,
    finally: () => stream.cancel(),
  }
}

export const mv: FileHandler = async (req, access) => {
  const from = pathParam(req, 'from')
  const to = pathParam(req, 'to')
  const overwrite = flag(req, 'overwrite', false)
  await slashRule(req, access, 'from', from)
  await slashRule(req, access, 'to', to)
  // "to" written as a directory cannot become the new name of a file either.
  if (to.dirHint && !from.dirHint && (await kindOf(req, access, from.path)) === 'file') throw trailingSlashOnFile('to', from.path)
  await access.view.move(ctxOf(req), from.path, to.path, { overwrite })
  return okReply()
}

export const rm: FileHandler = async (req, access) => {
  const p = pathParam(req)
  await slashRule(req, access, 'path', p)
  await access.view.removeTree(ctxOf(req), p.path)
  return okReply()
}

export const mkdir: FileHandler = async (req, access) => {
  const p = pathParam(req)
  await access.view.makeFolders(ctxOf(req), p.path).catch(async (err: unknown) => {
    // The trailing-slash rule, checked only when something is there already.
    if ((err as { code?: unknown }).code === 'EEXIST') await slashRule(req, access, 'path', p)
    throw err
  })
  return okReply()
}

export const touch: FileHandler = async (req, access) => {
  const p = pathParam(req)
  await slashRule(req, access, 'path', p)
  if (p.dirHint) throw new ApiError('INVALID_INPUT', 'the touch path must name a file, not a directory')
  await access.view.touch(ctxOf(req), p.path)
  return okReply()
}

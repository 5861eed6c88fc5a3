/**
 * @module front/routes/admin
 * The admin JSON API under /admin/api/ (docs/api.md, "Admin API") and the
 * console's static files under /admin (front/admin/). Every call but the login
 * needs an admin token.
 */
import { readFile } from 'node:fs/promises'
import { ApiError } from '../../core/api-error.js'
import type { HttpReply, HttpRequest } from '../../core/http.js'
import type { StateStore } from '../../core/state.js'
import type { AdminService, GatewayUserTargets } from '../admin.js'
import { userView, permissionsInput } from '../admin.js'
import type { ApiKeyService } from '../api-keys.js'
import type { S3Keys } from '../s3-keys.js'
import { readJson } from '../http/body.js'
import { pageFileReply, refuseWrites } from '../http/page-file.js'
import { jsonReply, okReply } from '../http/status.js'
import { shareView } from '../shares.js'

export interface AdminDeps {
  readonly admin: AdminService
  readonly keys: ApiKeyService
  readonly state: StateStore
  /** Where gateway users may be served from. */
  readonly users: GatewayUserTargets
  /** Gateway users' S3 keys. */
  readonly s3Keys: S3Keys
  readonly status: () => Record<string, unknown>
}

const ASSETS: Readonly<Record<string, string>> = {
  '/admin': 'index.html',
  '/admin/': 'index.html',
  '/admin/console.css': 'console.css',
  '/admin/console.js': 'console.js',
}
/**
 * The console's files (plain HTML/CSS/JS next to the sources, front/admin/; a build keeps
 * them in place), read once when this module loads at start-up: serving them reads no
 * file on the main thread.
 */
const assetTexts: Promise<Map<string, string>> = Promise.all(
  [...new Set(Object.values(ASSETS))].map(
    async (file) =>
      [file, await readFile(new URL(`../admin/${file}`, import.meta.url), 'utf8').catch(() => readFile(new URL(`../../../front/admin/${file}`, import.meta.url), 'utf8'))] as const,
  ),
).then((pairs) => new Map(pairs))
// A failure is answered to the requests that need the files (not an unhandled rejection at start-up).
assetTexts.catch(() => {})

/** The admin API's resources: /admin/api/<resource>[/<id>]. */
const RESOURCES = new Set(['session', 'keys', 'shares', 'users', 'status'])

/**
 * The route `path` (trailing "/" removed) matches, with ids replaced by "{id}", for
 * the request log; null when it is not one of the admin's.
 */
export function adminPattern(path: string): string | null {
  if (Object.hasOwn(ASSETS, path)) return path
  if (!path.startsWith('/admin/api/')) return null
  const [what, id, sub, subId, extra] = path.slice('/admin/api/'.length).split('/')
  if (!RESOURCES.has(what!) || extra !== undefined) return null
  if (sub !== undefined && (what !== 'users' || (sub !== 'keys' && sub !== 's3-keys'))) return null
  return [`/admin/api/${what}`, id && '{id}', sub, subId && (sub === 'keys' ? '{fingerprint}' : '{id}')].filter(Boolean).join('/')
}

/** Answers /admin and /admin/...; null when `path` is not the admin's. */
export function adminRoute(deps: AdminDeps, req: HttpRequest, path: string): Promise<HttpReply> | null {
  if (path === '/admin' || path === '/admin/' || (path.startsWith('/admin/') && !path.startsWith('/admin/api/'))) return asset(req, path)
  if (!path.startsWith('/admin/api/')) return null
  return api(deps, req, path.slice('/admin/api/'.length).replace(/\/+$/, ''))
}

const CONSOLE_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

async function asset(req: HttpRequest, path: string): Promise<HttpReply> {
  const file = ASSETS[path]
  if (!file) throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
  refuseWrites(req)
  const text = (await assetTexts).get(file)!
  return pageFileReply(req, file, text, CONSOLE_CSP)
}

/** One path segment, percent-decoded. @throws ApiError INVALID_INPUT on a malformed escape */
export function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    throw new ApiError('INVALID_INPUT', `malformed percent-encoding in ${JSON.stringify(s)}`)
  }
}

async function api(deps: AdminDeps, req: HttpRequest, rest: string): Promise<HttpReply> {
  const [what, id, extra] = rest.split('/') as [string, string | undefined, string | undefined]
  const m = req.method
  if (what === 'session' && id === undefined) {
    if (m === 'DELETE') return (await deps.admin.logout(req.header('authorization')), okReply())
    if (m !== 'POST') throw new ApiError('INVALID_INPUT', `${m} is not supported on ${req.path}; use POST or DELETE`)
    // A body that is not JSON is a malformed credential: refused like a wrong password, not at once.
    const body = await readJson(req).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'INVALID_INPUT') return undefined
      throw err
    })
    const { token, expires } = await deps.admin.login(body, req.remoteAddress)
    return okReply({ result: { authorization: token, expires } })
  }
  await deps.admin.authenticate(req.header('authorization'))
  const one = id === undefined ? undefined : decodeSegment(id)
  const bad = (allowed: string) => new ApiError('INVALID_INPUT', `${m} is not supported on ${req.path}; use ${allowed}`)
  if (what === 'users' && one !== undefined && extra !== undefined) return userKeys(deps, req, one, rest.split('/').slice(2))
  if (extra !== undefined || (one !== undefined && m !== 'DELETE' && !(what === 'users' && m === 'PATCH'))) throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
  switch (what) {
    case 'keys':
      if (one !== undefined) return (await deps.keys.remove(one), okReply())
      if (m === 'GET') return okReply({ results: await deps.keys.list() })
      if (m === 'POST') return okReply({ result: await deps.keys.create(await readJson(req)) })
      throw bad('GET or POST')
    case 'shares':
      if (one !== undefined) {
        if (!(await deps.state.deleteShare(one))) throw new ApiError('NOT_FOUND', 'no such share')
        return okReply()
      }
      if (m === 'GET') return okReply({ results: (await deps.state.listShares()).map((s) => ({ ...shareView(s), owner: s.owner })) })
      throw bad('GET')
    case 'users':
      if (one !== undefined) {
        if (m === 'PATCH') {
          const result = await deps.admin.patchUser(one, await readJson(req))
          await deps.users.changed(one)
          return okReply({ result })
        }
        return (await deps.admin.removeUser(one, deps.users), okReply())
      }
      if (m === 'GET') return okReply({ results: (await deps.state.listGatewayUsers()).map(userView) })
      if (m === 'POST') return okReply({ result: await deps.admin.addUser(await readJson(req), deps.users) })
      throw bad('GET or POST')
    case 'status':
      if (m === 'GET' && one === undefined) return okReply({ result: deps.status() })
      throw bad('GET')
    default:
      throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
  }
}

/**
 * /admin/api/users/<name>/keys (POST) and /admin/api/users/<name>/keys/<fingerprint> (DELETE);
 * /admin/api/users/<name>/s3-keys (GET, POST) and /admin/api/users/<name>/s3-keys/<id> (PATCH, DELETE).
 */
async function userKeys(deps: AdminDeps, req: HttpRequest, name: string, [sub, fp, extra]: string[]): Promise<HttpReply> {
  if (sub === 's3-keys' && extra === undefined) return s3Keys(deps, req, name, fp)
  if (sub !== 'keys' || extra !== undefined) throw new ApiError('NOT_FOUND', `no endpoint ${req.path}`)
  if (fp === undefined) {
    if (req.method === 'POST') return okReply({ result: await deps.admin.addUserKey(name, await readJson(req)) })
    throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use POST (GET /admin/api/users lists the keys)`)
  }
  if (req.method === 'DELETE') return (await deps.admin.removeUserKey(name, decodeSegment(fp)), await deps.users.changed(name), okReply())
  throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use DELETE`)
}

async function s3Keys(deps: AdminDeps, req: HttpRequest, name: string, id: string | undefined): Promise<HttpReply> {
  if (id === undefined) {
    if (req.method === 'GET') return okReply({ results: await deps.s3Keys.list(name) })
    // The secret is in this answer, and in no other: no cache may keep it.
    if (req.method === 'POST') {
      // The body is optional: `{"permissions": {...}}` or `{"read_only": true}` narrows the key.
      const body = req.contentLength === 0 || (req.contentLength === null && req.header('transfer-encoding') === undefined) ? {} : await readJson(req)
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_INPUT', 'the body must be a JSON object')
      for (const k of Object.keys(body)) if (k !== 'permissions' && k !== 'read_only') throw new ApiError('INVALID_INPUT', `"${k}" is not a field of an S3 key: give "permissions" or "read_only", or no body`)
      const result = await deps.s3Keys.create(name, permissionsInput(body as Record<string, unknown>) ?? null)
      return jsonReply(201, { status: 'ok', result }, { 'cache-control': 'no-store' })
    }
    throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use GET or POST`)
  }
  if (req.method === 'DELETE') return (await deps.s3Keys.revoke(name, decodeSegment(id)), okReply())
  if (req.method === 'PATCH') return okReply({ result: await deps.s3Keys.patch(name, decodeSegment(id), await readJson(req)) })
  throw new ApiError('INVALID_INPUT', `${req.method} is not supported on ${req.path}; use PATCH or DELETE`)
}

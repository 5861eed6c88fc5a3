/**
 * @module front/api-keys
 * API keys (docs/api.md, "API keys"): created by the admin, 256 random bits, shown
 * once, stored as a sha256 hash. A fast hash is enough here: a key is 256 bits of
 * server randomness, not a human password, so no dictionary or brute force can
 * invert its hash; a slow hash would only cost time on every request.
 *
 * Also keeps the set of every key's origins in memory for CORS (front/cors.ts).
 */
import { createHash, randomBytes } from 'node:crypto'
import { ApiError } from '../core/api-error.js'
import { CONTROL } from '../core/paths.js'
import type { ApiKeyRecord, ApiKeyStore } from '../core/state.js'
import { isOrigin } from './cors.js'

export interface ApiKeyView {
  readonly id: string
  readonly name: string
  readonly origins: readonly string[]
  readonly created: number
  readonly last_used: number | null
}

const view = (k: ApiKeyRecord): ApiKeyView => ({ id: k.id, name: k.name, origins: k.origins, created: k.created, last_used: k.last_used })
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex')
const KEY = /^fgk_[A-Za-z0-9_-]{43}$/

export class ApiKeyService {
  readonly #state: ApiKeyStore
  /** origin → number of keys that list it. */
  #origins = new Map<string, number>()
  /** last_used is written at most once a minute per key. */
  readonly #touched = new Map<string, number>()

  private constructor(state: ApiKeyStore) {
    this.#state = state
  }

  static async open(state: ApiKeyStore): Promise<ApiKeyService> {
    const s = new ApiKeyService(state)
    await s.#reload()
    return s
  }

  async #reload(): Promise<void> {
    const m = new Map<string, number>()
    for (const k of await this.#state.listApiKeys()) for (const o of k.origins) m.set(o, (m.get(o) ?? 0) + 1)
    this.#origins = m
  }

  /** Does any key list this origin? (CORS) */
  hasOrigin(origin: string): boolean {
    return this.#origins.has(origin)
  }

  /** POST /admin/api/keys: the key appears in this answer only. */
  async create(body: unknown): Promise<ApiKeyView & { key: string }> {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_INPUT', 'the body must be a JSON object {"name", "origins"}')
    const { name, origins = [] } = body as { name?: unknown; origins?: unknown }
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200) throw new ApiError('INVALID_INPUT', '"name" must be a string of 1 to 200 characters')
    if (CONTROL.test(name)) throw new ApiError('INVALID_INPUT', '"name" contains a control character')
    if (!Array.isArray(origins) || origins.length > 100) throw new ApiError('INVALID_INPUT', '"origins" must be a list of browser origins like "https://app.example.com"')
    for (const o of origins) {
      if (typeof o !== 'string' || !isOrigin(o)) {
        throw new ApiError('INVALID_INPUT', `${JSON.stringify(o)} is not an origin: scheme, host and optional port, like "https://app.example.com" (no path, no trailing "/")`)
      }
    }
    const key = `fgk_${randomBytes(32).toString('base64url')}`
    const record: ApiKeyRecord = {
      id: randomBytes(9).toString('base64url'),
      name: name.trim(),
      hash: hashOf(key),
      origins: [...new Set(origins as string[])],
      created: Date.now(),
      last_used: null,
    }
    await this.#state.putApiKey(record)
    await this.#reload()
    return { ...view(record), key }
  }

  async list(): Promise<ApiKeyView[]> {
    return (await this.#state.listApiKeys()).map(view)
  }

  async remove(id: string): Promise<void> {
    if (!(await this.#state.deleteApiKey(id))) throw new ApiError('NOT_FOUND', 'no such API key')
    await this.#reload()
  }

  /**
   * `?key=`: unknown or revoked 401; a browser Origin the key does not list 403.
   * A request without Origin (curl, a server) is not a browser's and passes.
   */
  async check(key: string, origin: string | undefined): Promise<ApiKeyView> {
    const k = KEY.test(key) ? await this.#state.getApiKeyByHash(hashOf(key)) : null
    if (!k) throw new ApiError('NOT_AUTHENTICATED', 'unknown or revoked API key')
    if (origin !== undefined && !k.origins.includes(origin)) throw new ApiError('FORBIDDEN', `this API key may not be used from ${origin}`)
    const now = Date.now()
    if ((this.#touched.get(k.id) ?? 0) < now - 60_000) {
      this.#touched.set(k.id, now)
      await this.#state.touchApiKey(k.id, now)
    }
    return view(k)
  }
}

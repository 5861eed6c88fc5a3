/**
 * @module core/state/api-keys
 * API keys (front/api-keys.ts): only their hashes. Part of the state store (core/state.ts).
 */

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

export interface ApiKeyStore {
  putApiKey(key: ApiKeyRecord): Promise<void>
  getApiKeyByHash(hash: string): Promise<ApiKeyRecord | null>
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Records a use (best effort; stores may coarsen it). */
  touchApiKey(id: string, atMs: number): Promise<void>
  /** @returns false when there was no such key */
  deleteApiKey(id: string): Promise<boolean>
}

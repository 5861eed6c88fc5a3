/**
 * @module front/stores
 * What start-up opens first: the server secret (front/server-secret.ts) and the state
 * store (front/state/), with the records kept in it that need nothing else: API keys,
 * the admin login, S3 keys.
 */
import { join } from 'node:path'
import type { Config } from '../core/config.js'
import type { StateStore } from '../core/state.js'
import { AdminService } from './admin.js'
import { ApiKeyService } from './api-keys.js'
import type { Logger } from './log.js'
import { S3Keys } from './s3-keys.js'
import { loadOrCreateSecret, readSecretFile } from './server-secret.js'
import { openState } from './state/open-state.js'

export interface Stores {
  readonly secret: Buffer
  readonly state: StateStore
  readonly keys: ApiKeyService
  readonly admin: AdminService
  readonly s3Keys: S3Keys
}

export async function openStores(config: Config, logger: Logger): Promise<Stores> {
  const stateDir = join(config.data_dir, 'state')
  const secret = config.secret_file === null ? await loadOrCreateSecret(stateDir) : await readSecretFile(config.secret_file)
  const state = await openState(config, stateDir, logger)
  const keys = await ApiKeyService.open(state)
  const admin = await AdminService.open(config.admin_password, secret, state)
  return { secret, state, keys, admin, s3Keys: new S3Keys(state, secret) }
}

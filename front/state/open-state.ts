/**
 * @module front/state/open-state
 * Picks the state store: PostgreSQL when `state_url` is set (several nodes share it,
 * docs/postgresql.md), else the embedded SQLite file in the data folder's state folder.
 */
import type { Config } from '../../core/config.js'
import type { StateStore } from '../../core/state.js'
import type { Logger } from '../log.js'
import { openPgState, pgAddress } from './pg-state.js'
import { openSqliteState } from './sqlite-state.js'

export async function openState(config: Config, stateDir: string, logger: Logger): Promise<StateStore> {
  if (config.state_url === null) return openSqliteState(stateDir)
  const at = pgAddress(config.state_url) // host:port only: the URL's password is never logged
  const store = await openPgState(config.state_url, {
    poolSize: config.state_pool_size,
    onIdleError: (err) => logger.log('warn', 'state store: an idle connection was lost', { at, err: err.message }),
  })
  logger.log('info', 'state store: PostgreSQL', { at, pool_size: config.state_pool_size })
  return store
}

/**
 * `backend_timeout_seconds` (docs/configuration.md): absent or empty, each driver keeps
 * its own; a whole number of seconds from the file or FILEGATE_BACKEND_TIMEOUT_SECONDS;
 * anything else is refused at start-up. (What it does to a silent server: the "no answer"
 * and "stalled mid-download" cases of test/reliability/faults-*.test.ts.)
 */
import t from 'tap'
import { ConfigError, validateConfig } from '../../core/config.js'
import { loadConfig } from '../../front/config-load.js'

t.test('values', async (t) => {
  t.equal(validateConfig({}).backend_timeout_seconds, null, 'default: each driver its own')
  t.equal(validateConfig({ backend_timeout_seconds: 5 }).backend_timeout_seconds, 5)
  for (const bad of [0, -1, 3601, 1.5, '5', true]) t.throws(() => validateConfig({ backend_timeout_seconds: bad }), ConfigError, `refused: ${JSON.stringify(bad)}`)
})

t.test('from the environment', async (t) => {
  t.equal(loadConfig([], { FILEGATE_BACKEND_TIMEOUT_SECONDS: '7' }).backend_timeout_seconds, 7)
  t.equal(loadConfig([], { FILEGATE_BACKEND_TIMEOUT_SECONDS: '' }).backend_timeout_seconds, null, 'empty: the default')
  t.throws(() => loadConfig([], { FILEGATE_BACKEND_TIMEOUT_SECONDS: 'soon' }), ConfigError)
})

/**
 * `public_url`: the API's address as clients reach it, an origin; anything else is a
 * configuration error naming the setting.
 */
import t from 'tap'
import { DEFAULTS, validateConfig } from '../../core/config.js'
import { loadConfig } from '../../front/config-load.js'

t.test('public_url: an origin or null', async (t) => {
  t.equal(DEFAULTS.public_url, null, 'derived from host and port by default')
  t.equal(loadConfig([], { FILEGATE_PUBLIC_URL: 'https://files.example.com' }).public_url, 'https://files.example.com', 'from FILEGATE_PUBLIC_URL')
  t.equal(validateConfig({ public_url: 'http://127.0.0.1:8334/' }).public_url, 'http://127.0.0.1:8334', 'a trailing slash is dropped')
  for (const bad of ['files.example.com', 'ftp://x', 'https://x/api', 'https://u:p@x', 'https://x?a=1', '']) {
    t.throws(() => validateConfig({ public_url: bad }), { name: 'ConfigError', message: /public_url/ }, `refused: ${JSON.stringify(bad)}`)
  }
})

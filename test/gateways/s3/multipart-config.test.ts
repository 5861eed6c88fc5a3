/**
 * `s3.multipart_expiry_hours` (FILEGATE_S3_MULTIPART_EXPIRY_HOURS): how long an S3
 * multipart upload may stay unfinished; validated, 24 by default.
 */
import t from 'tap'
import { ConfigError, DEFAULTS, validateConfig } from '../../../core/config.js'
import { loadConfig } from '../../../front/config-load.js'

t.test('s3.multipart_expiry_hours', async (t) => {
  t.equal(DEFAULTS.s3.multipart_expiry_hours, 24, 'a day by default')
  t.equal(loadConfig([], {}).s3.multipart_expiry_hours, 24)
  t.equal(loadConfig([], { FILEGATE_S3_MULTIPART_EXPIRY_HOURS: '2' }).s3.multipart_expiry_hours, 2, 'from the environment')
  t.equal(validateConfig({ s3: { multipart_expiry_hours: 168 } }).s3.multipart_expiry_hours, 168, 'from the config file')
  t.throws(() => loadConfig([], { FILEGATE_S3_MULTIPART_EXPIRY_HOURS: 'soon' }), ConfigError)
  t.throws(() => validateConfig({ s3: { multipart_expiry_hours: 0 } }), { name: 'ConfigError', message: /s3\.multipart_expiry_hours/ })
  t.throws(() => validateConfig({ s3: { multipart_expiry_hours: 1.5 } }), { name: 'ConfigError', message: /s3\.multipart_expiry_hours/ })
  t.throws(() => validateConfig({ s3: { multipart_expiry: 3 } }), { name: 'ConfigError', message: /s3: unknown key "multipart_expiry"/ })
})

/**
 * @module workers/drivers
 * The registry: backend type → driver factory. Driver modules are imported
 * statically (relative dynamic imports do not resolve under the test runner's
 * TypeScript loader in worker threads); a driver that needs a heavy SDK imports
 * that package lazily inside its factory, so a worker loads only what it opens.
 */
import type { BackendSpec } from '../../core/backend.js'
import type { Driver } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import { assertNever } from '../../core/messages.js'
import { createPluginDriver } from '../plugins.js'
import type { PoolKnobs } from '../sessions.js'
import { createFtpDriver } from './ftp/index.js'
import { createLocalDriver } from './local.js'
import { createS3Driver } from './s3/index.js'
import { createSmbDriver } from './smb/index.js'
import { createSftpDriver } from './sftp/index.js'

/** `knobs` apply to the remote drivers' session pools (timeouts); local and plugin drivers have none. */
export async function createDriver(spec: BackendSpec, knobs: PoolKnobs = {}): Promise<Driver> {
  switch (spec.type) {
    case 'local':
      return createLocalDriver(spec.createRoot ? { root: spec.root, createRoot: true } : { root: spec.root })
    case 'sftp':
      return createSftpDriver({ ...spec, ...knobs })
    case 'ftp':
      return createFtpDriver({ ...spec, ...knobs })
    case 's3':
      return createS3Driver({ ...spec, ...knobs })
    case 'smb':
      return createSmbDriver({ ...spec, ...knobs })
    case 'plugin':
      return createPluginDriver(spec)
    default:
      return assertNever(spec)
  }
}

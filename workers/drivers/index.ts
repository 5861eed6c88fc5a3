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
import { createLocalDriver } from './local.js'

export async function createDriver(spec: BackendSpec): Promise<Driver> {
  switch (spec.type) {
    case 'local':
      return createLocalDriver(spec.createRoot ? { root: spec.root, createRoot: true } : { root: spec.root })
    case 's3':
    case 'sftp':
    case 'ftp':
    case 'smb':
      throw new FsError('ENOTSUP', `the ${spec.type} backend is not available in this version`)
    default:
      return assertNever(spec)
  }
}

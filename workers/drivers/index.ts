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
import { createPluginDriver } from '../plugins.js'
import { createFtpDriver } from './ftp/index.js'
import { createLocalDriver } from './local.js'
import { createS3Driver } from './s3.js'
import { createSmbDriver } from './smb/index.js'
import { createSftpDriver } from './sftp/index.js'

export async function createDriver(spec: BackendSpec): Promise<Driver> {
  switch (spec.type) {
    case 'local':
      return createLocalDriver(spec.createRoot ? { root: spec.root, createRoot: true } : { root: spec.root })
    case 'sftp':
      return createSftpDriver(spec)
    case 'ftp':
      return createFtpDriver(spec)
    case 's3':
      return createS3Driver(spec)
    case 'smb':
      return createSmbDriver(spec)
    default: {
      // Each of filegate's own types has its case above (this line fails to compile otherwise);
      // anything else is a storage type that an enabled plugin provides, or ENOTSUP.
      const other: never = spec
      return createPluginDriver(other)
    }
  }
}

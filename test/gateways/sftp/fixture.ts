/**
 * A real filegate with its SFTP gateway on a free port, and a user who logs in to a
 * folder of the test's (`root`, an absolute path on this machine).
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { validateConfig } from '../../../core/config.js'
import type { Gateway } from '../../../core/gateway.js'
import { type Filegate, startFilegate } from '../../../front/app.js'
import { type Logger, silentLogger } from '../../../front/log.js'
import { createSftpGateway } from '../../../gateways/sftp/index.js'
import { serverDir } from '../../servers/process.js'
import type { Login } from './clients.js'
import { withTempLogin } from './temp-login.js'

export interface Gw {
  readonly app: Filegate
  readonly gateway: Gateway
  readonly login: Login
  /** The user's root on disk. */
  readonly root: string
  readonly dataDir: string
}

export async function startGateway(t: Test, opts: { readOnly?: boolean; dataDir?: string; logger?: Logger; loginGraceMs?: number } = {}): Promise<Gw> {
  const base = serverDir(t, 'sftp-gw')
  const root = join(base, 'root')
  mkdirSync(root, { recursive: true })
  const dataDir = opts.dataDir ?? join(base, 'data')
  const user = 'alice'
  const password = 'alice-password-1'
  const gateway = withTempLogin(t, createSftpGateway({ port: 0, host: '127.0.0.1', ...(opts.loginGraceMs ? { loginGraceMs: opts.loginGraceMs } : {}) }), { root, dataDir, user, password, readOnly: opts.readOnly ?? false })
  const app = await startFilegate(validateConfig({ port: 0, workers: 1, shutdown_grace_seconds: 1, data_dir: dataDir, sftp: { port: 'off' } }), {
    logger: opts.logger ?? silentLogger,
    gateways: [gateway],
  })
  t.teardown(() => app.close(0))
  return { app, gateway, login: { port: gateway.port!, user, password }, root, dataDir }
}

/**
 * @module front/services
 * The logins and what they lead to, for the HTTP API and the gateways alike: gateway
 * users' logins (SFTP, S3, a gateway session), sessions, share links, filegate's OAuth
 * server, resumable uploads (tus), and what a bearer credential sent to an HTTP gateway
 * (MCP) grants.
 */
import { join } from 'node:path'
import type { Config } from '../core/config.js'
import type { GatewayContext } from '../core/gateway.js'
import { FULL_ACCESS } from '../core/permissions.js'
import { chainBearers, sessionBearer } from './gateway-bearer.js'
import { GatewayLoginService } from './gateway-login.js'
import type { Logger } from './log.js'
import { type OAuthServer, createOAuth } from './oauth/index.js'
import type { PluginHost } from './plugins.js'
import { SessionService } from './sessions.js'
import { ShareService } from './shares.js'
import type { Stores } from './stores.js'
import { TusUploads } from './tus/uploads.js'
import type { Views } from './views.js'

export interface Services {
  readonly gatewayLogin: GatewayLoginService
  readonly sessions: SessionService
  readonly shares: ShareService
  readonly oauth: OAuthServer
  readonly tus: TusUploads
  /** `GatewayContext.bearer`: a filegate session token, else an access token of the OAuth server. */
  readonly bearer: GatewayContext['bearer']
  /** Ends the logins' shared views and the uploads' expiry sweep. */
  close(): void
}

export interface ServiceDeps {
  readonly config: Config
  readonly logger: Logger
  readonly plugins: PluginHost
  readonly stores: Stores
  readonly views: Views
  /** The API's address as clients reach it (the OAuth issuer): known once the port is. */
  readonly publicUrl: () => string
}

export async function openServices({ config, logger, plugins, stores, views, publicUrl }: ServiceDeps): Promise<Services> {
  const { secret, state, s3Keys } = stores
  const gatewayLogin = await GatewayLoginService.open({ config, state, s3Keys, plugins, logger, openFs: (spec, o) => views.open(spec, o.permissions, o.client) })
  const sessions = await SessionService.open({
    secret,
    config,
    state,
    plugins,
    gatewayLogin,
    probe: async (spec, requestId) => {
      const view = await views.http({ spec, permissions: FULL_ACCESS, login: '' })
      await view.stat({ requestId, signal: new AbortController().signal }, '/')
    },
  })
  const shares = new ShareService({ state, secret, openView: views.http })
  const openFs = views.bearer
  const oauth = createOAuth({ config, secret, state, gatewayLogin, issuer: publicUrl, sessions, shares, openFs })
  const area = views.staged.area(join(views.sharedStaging, 'tus'))
  const tus = await TusUploads.open({ area, state, expiryMs: config.tus.expiry_seconds * 1000, maxSize: config.max_upload_bytes, logger, quota: views.stagingQuota })
  return {
    gatewayLogin,
    sessions,
    shares,
    oauth,
    tus,
    bearer: chainBearers([sessionBearer({ sessions, shares, openFs }), oauth.bearer]),
    close() {
      gatewayLogin.close()
      tus.close()
    },
  }
}

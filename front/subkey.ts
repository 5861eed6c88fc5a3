/**
 * @module front/subkey
 * Keys derived from the server secret, one per purpose, so a value sealed for one
 * purpose (a share's credentials, an admin token) never opens as another (a session
 * token): a user token is never an admin token.
 */
import { createHmac } from 'node:crypto'

/** `gateway:<purpose>`: a value a gateway seals (core/gateway.ts, `seal`). */
export type KeyPurpose = 'admin-token' | 'share-credentials' | 'oauth-access' | 'oauth-grant' | 'oauth-flow' | `gateway:${string}`

export const subkey = (secret: Buffer, purpose: KeyPurpose): Buffer => createHmac('sha256', secret).update(`filegate ${purpose}`).digest()

/**
 * @module gateways/sftp/algorithms
 * The SSH algorithms the gateway offers, in whichever thread runs its SSH: modern ones
 * only (no SHA-1, no CBC; the Ed25519 host key).
 */
import type { Algorithms } from 'ssh2'

export const ALGORITHMS: Algorithms = {
  kex: ['curve25519-sha256', 'curve25519-sha256@libssh.org', 'ecdh-sha2-nistp256'],
  cipher: ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr', 'aes256-ctr'],
  hmac: ['hmac-sha2-256-etm@openssh.com', 'hmac-sha2-512-etm@openssh.com', 'hmac-sha2-256', 'hmac-sha2-512'],
  serverHostKey: ['ssh-ed25519'],
  compress: ['none'],
}

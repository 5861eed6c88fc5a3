/**
 * @module gateways/sftp/server
 * The gateway's SSH listener: ssh2's server with modern algorithms only (no SHA-1,
 * no CBC), the Ed25519 host key, each connection handed to ./connection.ts.
 */
import { Server } from './ssh2.js'
import type { Algorithms } from 'ssh2'
import { type ConnectionOptions, onConnection } from './connection.js'

export const ALGORITHMS: Algorithms = {
  kex: ['curve25519-sha256', 'curve25519-sha256@libssh.org', 'ecdh-sha2-nistp256'],
  cipher: ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr', 'aes256-ctr'],
  hmac: ['hmac-sha2-256-etm@openssh.com', 'hmac-sha2-512-etm@openssh.com', 'hmac-sha2-256', 'hmac-sha2-512'],
  serverHostKey: ['ssh-ed25519'],
  compress: ['none'],
}

export interface SshListener {
  readonly port: number
  close(): Promise<void>
}

/** Listens on host:port; a port in use rejects with an error naming `sftp.port`. */
export function listenSsh(hostKey: string, host: string, port: number, opts: ConnectionOptions): Promise<SshListener> {
  const clients = new Set<{ end(): unknown }>()
  const server = new Server({ hostKeys: [hostKey], algorithms: ALGORITHMS, ident: 'filegate' }, (client, info) => {
    clients.add(client)
    client.once('close', () => clients.delete(client))
    onConnection(client, info, opts)
  })
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`sftp.port: port ${port} on ${host} is already in use (set sftp.port / FILEGATE_SFTP_PORT to another port, or "off")`)
          : new Error(`sftp.port: cannot listen on ${host}:${port}: ${err.message}`),
      )
    }
    server.once('error', onError)
    server.listen(port, host, () => {
      server.off('error', onError)
      server.on('error', (err: Error) => opts.log('error', 'sftp listener error', { err: err.message }))
      resolve({
        port: (server.address() as { port: number }).port,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res())
            for (const c of clients) c.end()
          }),
      })
    })
  })
}

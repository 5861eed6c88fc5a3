/**
 * @module gateways/sftp/server
 * The gateway's SSH listener: a TCP server whose sockets are handed to ssh2's server
 * (modern algorithms only: no SHA-1, no CBC; the Ed25519 host key), each connection
 * then to ./connection.ts. The login grace time runs from the TCP accept, so a client
 * that never even sends its SSH banner is dropped too.
 */
import { type Socket, createServer } from 'node:net'
import type { Algorithms } from 'ssh2'
import { type ConnectionOptions, onConnection } from './connection.js'
import { readProxyHeader } from './proxy-header.js'
import type { Work } from './session.js'
import { Server } from './ssh2.js'

export const ALGORITHMS: Algorithms = {
  kex: ['curve25519-sha256', 'curve25519-sha256@libssh.org', 'ecdh-sha2-nistp256'],
  cipher: ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr', 'aes256-ctr'],
  hmac: ['hmac-sha2-256-etm@openssh.com', 'hmac-sha2-512-etm@openssh.com', 'hmac-sha2-256', 'hmac-sha2-512'],
  serverHostKey: ['ssh-ed25519'],
  compress: ['none'],
}

/**
 * Time a connection gets to log in: OpenSSH's LoginGraceTime (120 s), which also leaves
 * room for a burst of password logins queued for the password hash.
 */
export const LOGIN_GRACE_MS = 120_000

export interface SshListener {
  readonly port: number
  /**
   * Stops listening; each connection is closed once it has nothing under way (no request
   * in flight, no file open), and whatever is left after `graceMs` (default 0) is dropped.
   */
  close(graceMs?: number): Promise<void>
}

/** How often a closing listener looks for connections that became idle. */
const CLOSE_POLL_MS = 50

export interface ListenOptions extends Omit<ConnectionOptions, 'loggedIn' | 'socket' | 'work'> {
  readonly graceMs?: number
  /** Whether a connection from this peer begins with a PROXY protocol header (./proxy-header.ts), naming the client. */
  readonly proxied?: (peer: string) => boolean
}

/** Listens on host:port; a port in use rejects with an error naming `sftp.port`. */
export function listenSsh(hostKey: string, host: string, port: number, opts: ListenOptions): Promise<SshListener> {
  /** Open sockets, by remote address and port, with their grace timers, their work under way and the client's address (a balancer's PROXY header). */
  const sockets = new Map<string, { socket: Socket; grace: NodeJS.Timeout; work: Work; client?: string }>()
  const ssh = new Server({ hostKeys: [hostKey], algorithms: ALGORITHMS, ident: 'filegate' }, (client, info) => {
    const key = `${info.ip}:${info.port}`
    const open = sockets.get(key)
    onConnection(client, open?.client ? { ...info, ip: open.client } : info, { ...opts, loggedIn: () => clearTimeout(open?.grace), ...(open ? { socket: open.socket, work: open.work } : {}) })
  })
  const tcp = createServer((socket) => {
    const key = `${socket.remoteAddress}:${socket.remotePort}`
    // As sshd: small SFTP replies (a WRITE's STATUS) go out at once. With Nagle they wait
    // for the client's delayed ACK, and an upload crawls.
    socket.setNoDelay(true)
    const grace = setTimeout(() => {
      opts.log('info', 'sftp login grace time over: connection closed', { address: socket.remoteAddress })
      socket.destroy()
    }, opts.graceMs ?? LOGIN_GRACE_MS)
    const open: { socket: Socket; grace: NodeJS.Timeout; work: Work; client?: string } = { socket, grace, work: { busy: 0 } }
    sockets.set(key, open)
    socket.once('close', () => {
      clearTimeout(grace)
      sockets.delete(key)
    })
    if (!opts.proxied?.(socket.remoteAddress ?? '')) return ssh.injectSocket(socket)
    void readProxyHeader(socket).then((client) => {
      if (client === null) {
        opts.log('info', 'sftp connection from a balancer without a valid PROXY header: closed', { address: socket.remoteAddress })
        return socket.destroy()
      }
      open.client = client
      ssh.injectSocket(socket)
      socket.resume()
    })
  })
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`sftp.port: port ${port} on ${host} is already in use (set sftp.port / FILEGATE_SFTP_PORT to another port, or "off")`)
          : new Error(`sftp.port: cannot listen on ${host}:${port}: ${err.message}`),
      )
    }
    tcp.once('error', onError)
    tcp.listen(port, host, () => {
      tcp.off('error', onError)
      tcp.on('error', (err: Error) => opts.log('error', 'sftp listener error', { err: err.message }))
      resolve({
        port: (tcp.address() as { port: number }).port,
        close: (graceMs = 0) =>
          new Promise<void>((res) => {
            const deadline = Date.now() + graceMs
            const ending = new Set<Socket>()
            let listening = true
            tcp.close(() => (listening = false))
            const sweep = () => {
              const late = Date.now() >= deadline
              for (const { socket, work } of sockets.values()) {
                // Late: dropped, its open files aborted (nothing committed). Idle: closed once what was written is sent.
                if (late) socket.destroy()
                else if (work.busy === 0 && !ending.has(socket)) {
                  ending.add(socket)
                  socket.destroySoon()
                }
              }
              if (sockets.size === 0 && !listening) return res()
              setTimeout(sweep, late ? 5 : CLOSE_POLL_MS)
            }
            sweep()
          }),
      })
    })
  })
}

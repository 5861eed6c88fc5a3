/**
 * @module gateways/sftp/server
 * The gateway's SSH listener: a TCP server whose sockets are handed to ssh2's server
 * (modern algorithms only: no SHA-1, no CBC; the Ed25519 host key), each connection
 * then to ./connection.ts. Before a login, a connection is held briefly and counted
 * (docs/security.md, "SFTP connections before login"):
 * - ./startups.ts caps connections not logged in, in all and per client address;
 * - one that has not finished its key exchange within the key exchange grace (15 s), or
 *   logged in within the login grace (120 s), both from the TCP accept, is dropped (a
 *   client that never even sends its SSH banner too);
 * - `maxConnections` caps the door's connections of every kind, so that it cannot take
 *   every descriptor of the process from the other doors: past it, Node closes a new
 *   connection as soon as it is accepted.
 * Refusals are logged once a minute with their count, not once each (a flood would
 * flood the log). Each connection has a cap on bytes queued for its client (./send-budget.ts).
 */
import { type Socket, createServer } from 'node:net'
import type { Algorithms } from 'ssh2'
import type { DrainPart } from '../../core/doors.js'
import { type ConnectionOptions, onConnection } from './connection.js'
import { readProxyHeader } from './proxy-header.js'
import { SendBudget } from './send-budget.js'
import type { Work } from './session.js'
import { Server } from './ssh2.js'
import { type Refusal, type StartupLimits, Startups } from './startups.js'

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
/** Time a connection gets to finish its key exchange: a real client needs a few round trips. */
export const KEX_GRACE_MS = 15_000
/**
 * The caps before login, "32:30:256" and 16 per address: OpenSSH's MaxStartups (10:30:100)
 * scaled for one door that serves many users; a connection not logged in holds a socket
 * and a few KiB, and logins wait their turn for the password hash (front/gateway-login.ts).
 */
export const STARTUPS: StartupLimits = { start: 32, rate: 30, full: 256, perAddress: 16 }
/** Refusals are summed up in the log once per this period. */
const REFUSAL_LOG_MS = 60_000

export interface SshListener {
  readonly port: number
  /**
   * Its share of the drain (gateways/connection/drain.ts): stops listening; each
   * connection is closed once it has nothing under way (no request in flight, no file
   * open), and whatever is left at the deadline is dropped, its open files aborted.
   */
  readonly drain: DrainPart
}

/** How often an ended listener looks whether its connections are gone. */
const CLOSE_POLL_MS = 5

export interface ListenOptions extends Omit<ConnectionOptions, 'loggedIn' | 'socket' | 'work' | 'sendBudget'> {
  readonly graceMs?: number
  readonly kexGraceMs?: number
  readonly startups?: StartupLimits
  /** Connections of every kind the door holds at most (absent: no cap). */
  readonly maxConnections?: number
  /** Whether a connection from this peer begins with a PROXY protocol header (./proxy-header.ts), naming the client. */
  readonly proxied?: (peer: string) => boolean
}

/** Listens on host:port; a port in use rejects with an error naming `sftp.port`. */
export function listenSsh(hostKey: string, host: string, port: number, opts: ListenOptions): Promise<SshListener> {
  /** Open sockets, by remote address and port, with their timers, their work under way, the client's address (a balancer's PROXY header) and their count as not logged in. */
  const sockets = new Map<string, Open>()
  const startups = new Startups(opts.startups ?? STARTUPS)
  const refusals = refusalLog(opts.log)
  const ssh = new Server({ hostKeys: [hostKey], algorithms: ALGORITHMS, ident: 'filegate' }, (client, info) => {
    const key = `${info.ip}:${info.port}`
    const open = sockets.get(key)
    // The first key exchange done: the client is a real SSH client, now on the login grace.
    client.once('handshake', () => open && clearTimeout(open.kex))
    onConnection(client, open?.client ? { ...info, ip: open.client } : info, {
      ...opts,
      loggedIn: () => {
        if (!open) return
        clearTimeout(open.grace)
        open.release()
      },
      ...(open ? { socket: open.socket, work: open.work, sendBudget: open.budget } : {}),
    })
  })
  const tcp = createServer((socket) => {
    const key = `${socket.remoteAddress}:${socket.remotePort}`
    const peer = socket.remoteAddress ?? ''
    const proxied = opts.proxied?.(peer) ?? false
    const total = startups.enter()
    // Behind a balancer the per-address count waits for the client's address (its header).
    const own = typeof total === 'string' || proxied ? null : startups.enterFrom(peer)
    const refused = typeof total === 'string' ? total : typeof own === 'string' ? own : null
    if (refused !== null) {
      if (typeof total === 'function') total()
      refusals(refused, peer)
      return void socket.destroy()
    }
    const releases = [total as () => void, ...(own ? [own as () => void] : [])]
    // As sshd: small SFTP replies (a WRITE's STATUS) go out at once. With Nagle they wait
    // for the client's delayed ACK, and an upload crawls.
    socket.setNoDelay(true)
    const drop = (msg: string) => () => {
      opts.log('info', msg, { address: open.client ?? peer })
      socket.destroy()
    }
    const open: Open = {
      socket,
      grace: setTimeout(() => drop('sftp login grace time over: connection closed')(), opts.graceMs ?? LOGIN_GRACE_MS),
      kex: setTimeout(() => drop('sftp key exchange not finished in time: connection closed')(), opts.kexGraceMs ?? KEX_GRACE_MS),
      work: { busy: 0 },
      budget: new SendBudget(socket),
      release: () => {
        for (const r of releases.splice(0)) r()
      },
    }
    sockets.set(key, open)
    socket.once('close', () => {
      clearTimeout(open.grace)
      clearTimeout(open.kex)
      open.release()
      sockets.delete(key)
    })
    if (!proxied) return ssh.injectSocket(socket)
    void readProxyHeader(socket).then((client) => {
      if (client === null) {
        opts.log('info', 'sftp connection from a balancer without a valid PROXY header: closed', { address: peer })
        return socket.destroy()
      }
      if (socket.destroyed) return
      const from = startups.enterFrom(client)
      if (typeof from === 'string') {
        refusals(from, client)
        return socket.destroy()
      }
      releases.push(from)
      open.client = client
      ssh.injectSocket(socket)
      socket.resume()
    })
  })
  if (opts.maxConnections !== undefined) {
    tcp.maxConnections = opts.maxConnections
    let dropped = 0
    let timer: NodeJS.Timeout | null = null
    tcp.on('drop', () => {
      dropped++
      if (timer) return
      opts.log('warn', 'sftp connection limit reached: new connections are closed at once', { max_connections: opts.maxConnections })
      timer = setTimeout(() => {
        timer = null
        if (dropped > 1) opts.log('warn', 'sftp connections closed at the connection limit', { count: dropped, max_connections: opts.maxConnections })
        dropped = 0
      }, REFUSAL_LOG_MS).unref()
    })
  }
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`sftp.port: port ${port} on ${host} is already in use (set sftp.port / FILEGATE_SFTP_PORT to another port, or "off")`)
          : new Error(`sftp.port: cannot listen on ${host}:${port}: ${err.message}`),
      )
    }
    tcp.once('error', onError)
    let listening = true
    const ending = new Set<Socket>()
    tcp.listen(port, host, () => {
      tcp.off('error', onError)
      tcp.on('error', (err: Error) => opts.log('error', 'sftp listener error', { err: err.message }))
      resolve({
        port: (tcp.address() as { port: number }).port,
        drain: {
          name: 'sftp',
          stopAccepting: () => tcp.close(() => (listening = false)),
          busy: () => {
            let n = 0
            for (const { work } of sockets.values()) n += work.busy
            return n
          },
          // An idle connection is closed once what was written to it is sent.
          closeIdle: () => {
            for (const { socket, work } of sockets.values()) {
              if (work.busy === 0 && !ending.has(socket)) {
                ending.add(socket)
                socket.destroySoon()
              }
            }
          },
          // What is left is dropped: its sessions end and abort their open files (nothing committed).
          end: () =>
            new Promise<void>((res) => {
              const sweep = () => {
                for (const { socket } of sockets.values()) socket.destroy()
                if (sockets.size === 0 && !listening) return res()
                setTimeout(sweep, CLOSE_POLL_MS)
              }
              sweep()
            }),
        },
      })
    })
  })
}

interface Open {
  readonly socket: Socket
  readonly grace: NodeJS.Timeout
  readonly kex: NodeJS.Timeout
  readonly work: Work
  readonly budget: SendBudget
  /** Stops counting it as not logged in (idempotent). */
  readonly release: () => void
  client?: string
}

/**
 * Logs the first refusal of a period at once, then how many followed at its end: a flood
 * of refused connections makes two lines a minute.
 */
function refusalLog(log: ListenOptions['log']): (why: Refusal, address: string) => void {
  let count = 0
  let timer: NodeJS.Timeout | null = null
  return (why, address) => {
    count++
    if (timer) return
    const reason = why === 'address' ? 'too many connections not logged in from this address' : 'too many connections not logged in'
    log('warn', 'sftp connection refused', { address, reason })
    timer = setTimeout(() => {
      timer = null
      if (count > 1) log('warn', 'sftp connections refused before login', { count })
      count = 0
    }, REFUSAL_LOG_MS).unref()
  }
}

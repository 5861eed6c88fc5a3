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
import { type Server as TcpServer, type Socket, createServer } from 'node:net'
import type { ClientInfo, Connection, Server as SshServer } from 'ssh2'
import type { DrainPart } from '../../core/doors.js'
import { ALGORITHMS } from './algorithms.js'
import { type ConnectionOptions, onConnection } from './connection.js'
import { readProxyHeader } from './proxy-header.js'
import { SendBudget } from './send-budget.js'
import type { Work } from './session.js'
import { SshThreads } from './ssh-threads.js'
import { Server } from './ssh2.js'
import { type Refusal, type StartupLimits, Startups } from './startups.js'

export { ALGORITHMS }

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
  /**
   * SSH threads (./ssh-threads.ts) the connections are spread over, each connection's SSH
   * and SFTP running in one of them; 0 or absent: every connection in the main thread.
   */
  readonly threads?: number
}

/** Listens on host:port (its SSH threads started first, if any); a port in use rejects with an error naming `sftp.port`. */
export async function listenSsh(hostKey: string, host: string, port: number, opts: ListenOptions): Promise<SshListener> {
  const threads = opts.threads ? new SshThreads(hostKey, opts.threads, opts.log) : null
  try {
    await threads?.start()
    const sockets = new OpenSockets(opts, threads)
    const ssh = new Server({ hostKeys: [hostKey], algorithms: ALGORITHMS, ident: 'filegate' }, (client, info) => sockets.connected(client, info))
    const tcp = createServer((socket) => sockets.accept(socket, ssh))
    if (opts.maxConnections !== undefined) capConnections(tcp, opts.maxConnections, opts.log)
    return { port: await listen(tcp, host, port, opts.log), drain: drainPart(tcp, sockets, threads) }
  } catch (err) {
    await threads?.stop()
    throw err
  }
}

/** Binds the listener; a port in use rejects with an error naming `sftp.port`; later errors are logged. @returns the port bound */
function listen(tcp: TcpServer, host: string, port: number, log: ListenOptions['log']): Promise<number> {
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
      tcp.on('error', (err: Error) => log('error', 'sftp listener error', { err: err.message }))
      resolve((tcp.address() as { port: number }).port)
    })
  })
}

/** Past `max` connections of every kind, Node closes a new one as soon as it is accepted: logged as refusals are, summed up. */
function capConnections(tcp: TcpServer, max: number, log: ListenOptions['log']): void {
  tcp.maxConnections = max
  tcp.on(
    'drop',
    summedLog(
      () => log('warn', 'sftp connection limit reached: new connections are closed at once', { max_connections: max }),
      (count) => log('warn', 'sftp connections closed at the connection limit', { count, max_connections: max }),
    ),
  )
}

/** The listener's share of the drain (`SshListener.drain`); its SSH threads end with the last connection. */
function drainPart(tcp: TcpServer, sockets: OpenSockets, threads: SshThreads | null): DrainPart {
  let listening = true
  return {
    name: 'sftp',
    stopAccepting: () => tcp.close(() => (listening = false)),
    busy: () => sockets.busy(),
    // An idle connection is closed once what was written to it is sent.
    closeIdle: () => sockets.closeIdle(),
    // What is left is dropped: its sessions end and abort their open files (nothing committed).
    end: async () => {
      await sockets.dropAll(() => !listening)
      await threads?.stop()
    },
  }
}

/** A socket of the door's, from its accept to its close. */
interface Open {
  readonly socket: Socket
  readonly grace: NodeJS.Timeout
  readonly kex: NodeJS.Timeout
  readonly work: Work
  readonly budget: SendBudget
  /** What counts it as not logged in (./startups.ts), each released once. */
  readonly counts: (() => void)[]
  /** The client's address, as a balancer's PROXY header named it. */
  client?: string
}

/** Stops counting a socket as not logged in (idempotent). */
function uncount(open: Open): void {
  for (const release of open.counts.splice(0)) release()
}

/**
 * The door's open sockets, by remote address and port, each with its timers, its work
 * under way, the client's address (a balancer's PROXY header) and its counts as not
 * logged in.
 */
class OpenSockets {
  readonly #byKey = new Map<string, Open>()
  readonly #opts: ListenOptions
  readonly #startups: Startups
  readonly #refusals: (why: Refusal, address: string) => void
  /** Idle sockets being closed (once what was written to them is sent). */
  readonly #ending = new Set<Socket>()
  /** Where connections are served: null, in this thread (ssh2's server here). */
  readonly #threads: SshThreads | null

  constructor(opts: ListenOptions, threads: SshThreads | null) {
    this.#opts = opts
    this.#threads = threads
    this.#startups = new Startups(opts.startups ?? STARTUPS)
    this.#refusals = refusalLog(opts.log)
  }

  /**
   * A TCP connection: counted as not logged in (closed at once past the caps), timed,
   * then handed to ssh2 (here or in an SSH thread); behind a balancer, once its PROXY
   * header has named the client.
   */
  accept(socket: Socket, ssh: SshServer): void {
    const peer = socket.remoteAddress ?? ''
    const proxied = this.#opts.proxied?.(peer) ?? false
    const counts = this.#admit(peer, proxied)
    if (counts === null) return void socket.destroy()
    // As sshd: small SFTP replies (a WRITE's STATUS) go out at once. With Nagle they wait
    // for the client's delayed ACK, and an upload crawls.
    socket.setNoDelay(true)
    const open = this.#track(socket, counts)
    if (!proxied) return this.#hand(open, ssh)
    void this.#fromBalancer(open, ssh)
  }

  /** The SSH of a socket admitted: ssh2's server in this thread, or an SSH thread's (the socket's bytes relayed to it). */
  #hand(open: Open, ssh: SshServer): void {
    if (this.#threads === null) return ssh.injectSocket(open.socket)
    this.#threads.adopt(open.socket, {
      login: this.#opts.login,
      ...(this.#opts.meter ? { meter: this.#opts.meter } : {}),
      log: this.#opts.log,
      work: open.work,
      ip: open.client ?? open.socket.remoteAddress ?? '',
      // As `connected` below: the login grace from the first key exchange on, no longer counted once logged in.
      onHandshake: () => clearTimeout(open.kex),
      onLoggedIn: () => {
        clearTimeout(open.grace)
        uncount(open)
      },
    })
  }

  /**
   * Counts a new connection as not logged in: in all, and by its address unless it comes
   * from a balancer (whose client is not known yet). @returns the counts' releases; null: refused (logged)
   */
  #admit(peer: string, proxied: boolean): (() => void)[] | null {
    const total = this.#startups.enter()
    if (typeof total === 'string') {
      this.#refusals(total, peer)
      return null
    }
    if (proxied) return [total]
    const own = this.#startups.enterFrom(peer)
    if (typeof own === 'string') {
      total()
      this.#refusals(own, peer)
      return null
    }
    return [total, own]
  }

  /** Holds the socket until it closes; one that has not finished its key exchange, or logged in, within its grace is dropped. */
  #track(socket: Socket, counts: (() => void)[]): Open {
    const key = `${socket.remoteAddress}:${socket.remotePort}`
    const drop = (msg: string) => {
      this.#opts.log('info', msg, { address: open.client ?? socket.remoteAddress ?? '' })
      socket.destroy()
    }
    const open: Open = {
      socket,
      grace: setTimeout(() => drop('sftp login grace time over: connection closed'), this.#opts.graceMs ?? LOGIN_GRACE_MS),
      kex: setTimeout(() => drop('sftp key exchange not finished in time: connection closed'), this.#opts.kexGraceMs ?? KEX_GRACE_MS),
      work: { busy: 0 },
      budget: new SendBudget(socket),
      counts,
    }
    this.#byKey.set(key, open)
    socket.once('close', () => {
      clearTimeout(open.grace)
      clearTimeout(open.kex)
      uncount(open)
      this.#byKey.delete(key)
    })
    return open
  }

  /** Behind a balancer: its PROXY header names the client, counted by that address from then on. */
  async #fromBalancer(open: Open, ssh: SshServer): Promise<void> {
    const { socket } = open
    const client = await readProxyHeader(socket)
    if (client === null) {
      this.#opts.log('info', 'sftp connection from a balancer without a valid PROXY header: closed', { address: socket.remoteAddress ?? '' })
      return void socket.destroy()
    }
    if (socket.destroyed) return
    const from = this.#startups.enterFrom(client)
    if (typeof from === 'string') {
      this.#refusals(from, client)
      return void socket.destroy()
    }
    open.counts.push(from)
    open.client = client
    this.#hand(open, ssh)
    socket.resume()
  }

  /** ssh2's connection on one of our sockets: on the login grace once its first key exchange is done, no longer counted once logged in. */
  connected(client: Connection, info: ClientInfo): void {
    const open = this.#byKey.get(`${info.ip}:${info.port}`)
    // The first key exchange done: the client is a real SSH client, now on the login grace.
    client.once('handshake', () => open && clearTimeout(open.kex))
    onConnection(client, open?.client ? { ...info, ip: open.client } : info, {
      ...this.#opts,
      loggedIn: () => {
        if (!open) return
        clearTimeout(open.grace)
        uncount(open)
      },
      ...(open ? { socket: open.socket, work: open.work, sendBudget: open.budget } : {}),
    })
  }

  /** Requests and open files under way, every connection's. */
  busy(): number {
    let n = 0
    for (const { work } of this.#byKey.values()) n += work.busy
    return n
  }

  /** Closes every connection with nothing under way, once what was written to it is sent. */
  closeIdle(): void {
    for (const { socket, work } of this.#byKey.values()) {
      if (work.busy === 0 && !this.#ending.has(socket)) {
        this.#ending.add(socket)
        socket.destroySoon()
      }
    }
  }

  /** Drops every connection, until none is left and `closed()` (the listener's) holds. */
  dropAll(closed: () => boolean): Promise<void> {
    return new Promise<void>((res) => {
      const sweep = () => {
        for (const { socket } of this.#byKey.values()) socket.destroy()
        if (this.#byKey.size === 0 && closed()) return res()
        setTimeout(sweep, CLOSE_POLL_MS)
      }
      sweep()
    })
  }
}

/**
 * Logs the first refusal of a period at once, then how many followed at its end: a flood
 * of refused connections makes two lines a minute.
 */
function refusalLog(log: ListenOptions['log']): (why: Refusal, address: string) => void {
  return summedLog(
    (why: Refusal, address: string) => {
      const reason = why === 'address' ? 'too many connections not logged in from this address' : 'too many connections not logged in'
      log('warn', 'sftp connection refused', { address, reason })
    },
    (count) => log('warn', 'sftp connections refused before login', { count }),
  )
}

/** Events a flood could repeat, logged by `first` at once, then summed up by `summary` at the period's end when more followed. */
function summedLog<A extends unknown[]>(first: (...a: A) => void, summary: (count: number) => void): (...a: A) => void {
  let count = 0
  let timer: NodeJS.Timeout | null = null
  return (...a) => {
    count++
    if (timer) return
    first(...a)
    timer = setTimeout(() => {
      timer = null
      if (count > 1) summary(count)
      count = 0
    }, REFUSAL_LOG_MS).unref()
  }
}

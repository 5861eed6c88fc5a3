/**
 * @module gateways/sftp/ssh-thread/entry
 * SSH THREAD. What an SSH thread runs (started by ../ssh-threads.ts): ssh2's server with
 * the gateway's host key and algorithms, and for each connection the main thread hands
 * over (a MessagePort relaying its socket's bytes) the same connection code as the main
 * thread's mode (../connection.ts: authentication, `sftp` sessions, the SFTP wire layer),
 * over a login and a view that the main thread answers (./remote.ts). So the key
 * exchange, the ciphers and the SFTP parsing of each connection run here, spread over
 * the threads, while the TCP socket, the pre-login caps and timers, the login and the
 * storage stay on the main thread.
 */
import type { Socket } from 'node:net'
import { parentPort, workerData } from 'node:worker_threads'
import type { Connection } from 'ssh2'
import type { DoorMeter } from '../../../core/doors.js'
import type { View } from '../../../core/view.js'
import { ALGORITHMS } from '../algorithms.js'
import { onConnection } from '../connection.js'
import { SendBudget } from '../send-budget.js'
import { Server } from '../ssh2.js'
import type { FromThread, LogLevel, NewConnection, ThreadData } from '../thread-messages.js'
import { PortSocket } from './port-socket.js'
import { Calls, remoteLogin } from './remote.js'

interface Conn {
  readonly socket: PortSocket
  readonly calls: Calls
  readonly ended: AbortController
}

const port = parentPort
if (port === null) throw new Error('gateways/sftp/ssh-thread/entry runs in a worker thread')
const { hostKey } = workerData as ThreadData
const conns = new WeakMap<PortSocket, Conn>()

const threadLog = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => port.postMessage({ t: 'log', level, msg, ...(fields ? { fields } : {}) } satisfies FromThread)

const ssh = new Server({ hostKeys: [hostKey], algorithms: ALGORITHMS, ident: 'filegate' }, (client: Connection, info) => {
  // ssh2 keeps the socket it was given; it is the connection's PortSocket.
  const socket = (client as unknown as { _sock: PortSocket })._sock
  const conn = conns.get(socket)
  if (conn === undefined) return void client.end()
  client.once('handshake', () => socket.post({ t: 'handshake' }))
  const log = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => socket.post({ t: 'log', level, msg, ...(fields ? { fields } : {}) })
  onConnection(client, info, {
    login: remoteLogin(conn.calls, conn.ended.signal),
    // The main thread counts the login from its own answer.
    loggedIn: () => {},
    socket,
    sendBudget: new SendBudget({
      get writableLength() {
        return socket.unsent
      },
      on: (event, fn) => socket.on(event === 'drain' ? 'sent' : 'close', fn),
    }),
    meter: remoteMeter(socket),
    log,
  })
})
ssh.on('error', (err: Error) => threadLog('error', 'sftp thread: ssh server error', { err: err.message }))

port.on('message', (m: NewConnection) => {
  if (m.t !== 'conn') return
  const calls = new Calls()
  const ended = new AbortController()
  const socket = new PortSocket(m.port, m.rings, { ip: m.ip, family: m.family, remotePort: m.remotePort }, { onReply: (r) => calls.reply(r), onEnded: () => ended.abort() })
  calls.attach(socket)
  conns.set(socket, { socket, calls, ended })
  socket.on('error', () => {})
  // ssh2 reads and writes its socket as a Duplex (data, write, end, destroy, the remote address).
  ssh.injectSocket(socket as unknown as Socket)
})

port.postMessage({ t: 'ready' } satisfies FromThread)

/** The door's counters, gathered per turn of the event loop and told to the main thread. */
function remoteMeter(socket: PortSocket): DoorMeter {
  let requests: Record<string, number> = {}
  let opened = 0
  let ended = 0
  let queued = false
  const flush = () => {
    queued = false
    if (opened === 0 && ended === 0 && Object.keys(requests).length === 0) return
    socket.post({ t: 'meter', requests, opened, ended })
    requests = {}
    opened = 0
    ended = 0
  }
  const later = () => {
    if (queued) return
    queued = true
    setImmediate(flush)
  }
  return {
    request(error?: string) {
      const k = error ?? ''
      requests[k] = (requests[k] ?? 0) + 1
      later()
    },
    bytes() {
      // Counted where the bytes are: the main thread's view.
    },
    session() {
      opened++
      later()
      let done = false
      return () => {
        if (done) return
        done = true
        ended++
        later()
      }
    },
    // The main thread's view already counts its files' bytes.
    fs: (fs: View) => fs,
  }
}

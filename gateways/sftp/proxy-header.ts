/**
 * @module gateways/sftp/proxy-header
 * The PROXY protocol's version 1 header (HAProxy's `send-proxy`, nginx stream's
 * `proxy_protocol on`): the line a TCP balancer sends first on each connection to name
 * the client it connected for, `PROXY TCP4 <client> <balancer> <client port> <port>\r\n`
 * (TCP6 alike; `PROXY UNKNOWN ...` for its own health checks). Read only from the
 * balancers listed in `trust_proxy`: from anyone else it would be a forged address.
 */
import { isIP } from 'node:net'
import type { Socket } from 'node:net'

/** The longest version 1 header, CRLF included. */
const MAX_HEADER = 107

/**
 * Reads the header off `socket` and gives back what follows it (unshifted, paused).
 * Resolves with the client's address, or the socket's own peer for `UNKNOWN`; null for
 * anything else (the caller drops the connection).
 */
export function readProxyHeader(socket: Socket): Promise<string | null> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0)
    const done = (address: string | null, rest?: Buffer) => {
      socket.off('data', onData)
      socket.off('close', onClose)
      socket.pause()
      if (rest && rest.length > 0) socket.unshift(rest)
      resolve(address)
    }
    const onClose = () => done(null)
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      const end = buf.indexOf('\r\n')
      if (end === -1) {
        if (buf.length >= MAX_HEADER) done(null)
        return
      }
      if (end + 2 > MAX_HEADER) return done(null)
      done(parseLine(buf.subarray(0, end).toString('latin1'), socket.remoteAddress ?? ''), buf.subarray(end + 2))
    }
    socket.on('data', onData)
    socket.once('close', onClose)
  })
}

function parseLine(line: string, peer: string): string | null {
  const parts = line.split(' ')
  if (parts[0] !== 'PROXY') return null
  if (parts[1] === 'UNKNOWN') return peer
  if (parts.length !== 6) return null
  const family = parts[1] === 'TCP4' ? 4 : parts[1] === 'TCP6' ? 6 : 0
  const [, , client, own, clientPort, ownPort] = parts as [string, string, string, string, string, string]
  const port = (p: string) => /^\d{1,5}$/.test(p) && Number(p) <= 65535
  if (family === 0 || isIP(client) !== family || isIP(own) !== family || !port(clientPort) || !port(ownPort)) return null
  return client
}

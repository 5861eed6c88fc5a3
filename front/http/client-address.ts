/**
 * @module front/http/client-address
 * The client's address behind trusted reverse proxies (`trust_proxy`): when the TCP peer
 * is one of them, `X-Forwarded-For` is read from its right end, where each proxy appends
 * the address it received from, skipping the trusted proxies; the first other address
 * is the client. Entries left of it were written by the client itself and prove nothing.
 * From any other peer the header is ignored: anyone can send it.
 */
import { isIP } from 'node:net'

/** `::ffff:10.0.0.5` (an IPv4 peer on a dual-stack socket) as `10.0.0.5`; lower case. */
const plain = (a: string): string => a.trim().toLowerCase().replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1')

/** Whether `peer` is one of the `trusted` proxies. */
export const isTrustedProxy = (peer: string, trusted: ReadonlySet<string>): boolean => trusted.has(plain(peer))

export function clientAddress(peer: string, forwardedFor: string | undefined, trusted: ReadonlySet<string>): string {
  if (trusted.size === 0 || forwardedFor === undefined || !isTrustedProxy(peer, trusted)) return peer
  const hops = forwardedFor.split(',').map(plain)
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    // A malformed entry: nothing left of it can be trusted; the last proxy's peer stands.
    if (isIP(hop) === 0) return peer
    if (!trusted.has(hop) || i === 0) return hop
  }
  return peer
}

/** The `trust_proxy` setting as the set `clientAddress` looks addresses up in. */
export const trustedProxies = (addresses: readonly string[]): ReadonlySet<string> => new Set(addresses.map(plain))

/**
 * @module front/oauth/network
 * The network an address belongs to, as registrations are counted: an IPv4 address's
 * /24 (also when written IPv4-mapped), an IPv6 address's /56 (what one subscriber is
 * usually given). One host or one small provider's block cannot rotate through its
 * addresses to register more.
 */
import { isIPv4, isIPv6 } from 'node:net'

export function networkOf(address: string): string {
  const bare = address.replace(/%.*$/, '') // a zone id names an interface, not a network
  if (isIPv4(bare)) return `${bare.split('.').slice(0, 3).join('.')}.0/24`
  if (!isIPv6(bare)) return address
  const g = groups(bare)
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.0/24`
  return `${g[0]!.toString(16)}:${g[1]!.toString(16)}:${g[2]!.toString(16)}:${(g[3]! & 0xff00).toString(16)}::/56`
}

/** A valid IPv6 address's eight 16-bit groups. */
function groups(a: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a)
  const s = dotted ? `${a.slice(0, dotted.index)}${((+dotted[1]! << 8) | +dotted[2]!).toString(16)}:${((+dotted[3]! << 8) | +dotted[4]!).toString(16)}` : a
  const [head, tail] = s.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const zeros = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0')
  return [...h, ...zeros, ...t].map((x) => parseInt(x, 16))
}

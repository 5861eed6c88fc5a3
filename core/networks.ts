/**
 * @module core/networks
 * The units client addresses are counted by, for every door's limits: a host
 * (`addressKey`: an IPv4 address, an IPv6 address's /64, what one subscriber is given) and
 * a network (`networkOf`: an IPv4 /24, an IPv6 /56, what one provider's customer can
 * rotate through). IPv4-mapped IPv6 addresses count as the IPv4 address they carry; a zone
 * id names an interface, not a host, and is ignored.
 */
import { isIPv4, isIPv6 } from 'node:net'

/** The host an address is counted as: an IPv4 address itself, an IPv6 address's /64. */
export function addressKey(address: string): string {
  const bare = address.replace(/%.*$/, '')
  if (!isIPv6(bare)) return address
  const g = ipv6Groups(bare)
  if (isMapped(g)) return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`
}

/** The network an address belongs to: an IPv4 address's /24, an IPv6 address's /56. */
export function networkOf(address: string): string {
  const bare = address.replace(/%.*$/, '')
  if (isIPv4(bare)) return `${bare.split('.').slice(0, 3).join('.')}.0/24`
  if (!isIPv6(bare)) return address
  const g = ipv6Groups(bare)
  if (isMapped(g)) return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.0/24`
  return `${g[0]!.toString(16)}:${g[1]!.toString(16)}:${g[2]!.toString(16)}:${(g[3]! & 0xff00).toString(16)}::/56`
}

function isMapped(g: number[]): boolean {
  return g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff
}

/** A valid IPv6 address's eight 16-bit groups (a trailing dotted IPv4 part included). */
function ipv6Groups(a: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a)
  const s = dotted ? `${a.slice(0, dotted.index)}${((+dotted[1]! << 8) | +dotted[2]!).toString(16)}:${((+dotted[3]! << 8) | +dotted[4]!).toString(16)}` : a
  const [head, tail] = s.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const zeros = tail === undefined ? [] : Array<string>(8 - h.length - t.length).fill('0')
  return [...h, ...zeros, ...t].map((x) => parseInt(x, 16))
}

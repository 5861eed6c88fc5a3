// The units every door counts client addresses by (core/networks.ts): the throttle and the
// MCP session limits by host, OAuth registrations by network. Three copies of this once
// disagreed on IPv4-mapped and dotted IPv6 forms; one module now answers for all.
import t from 'tap'
import { addressKey, networkOf } from '../../core/networks.js'

t.test('a host: an IPv4 address, an IPv6 /64', async (t) => {
  t.equal(addressKey('192.0.2.7'), '192.0.2.7')
  t.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7', 'IPv4-mapped is the IPv4 host')
  t.equal(addressKey('::ffff:c000:207'), '192.0.2.7', 'also written in hex')
  t.equal(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:2:ffff:eeee:dddd:cccc'), 'one /64')
  t.not(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'), 'another /64')
  t.equal(addressKey('fe80::1%eth0'), addressKey('fe80::2%eth1'), 'a zone id is ignored')
})

t.test('a network: an IPv4 /24, an IPv6 /56', async (t) => {
  t.equal(networkOf('192.0.2.7'), '192.0.2.0/24')
  t.equal(networkOf('::ffff:192.0.2.200'), '192.0.2.0/24', 'IPv4-mapped is the IPv4 network')
  t.equal(networkOf('2001:db8:1:2ff::1'), networkOf('2001:db8:1:200::9'), 'one /56')
  t.not(networkOf('2001:db8:1:200::1'), networkOf('2001:db8:1:300::1'), 'another /56')
  t.not(networkOf('192.0.2.7'), networkOf('192.0.3.7'), 'another /24')
})

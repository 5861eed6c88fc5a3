/**
 * @module test/gateways/mcp/limits.test
 * What one login (or one address) can take of the MCP gateway, tried as an attacker
 * would, and what everyone else still gets: sessions opened by the hundred from many
 * tmp ids cannot shut others out (the biggest holder loses its own); tool calls are
 * bounded per login and per JSON-RPC batch, with a JSON-RPC error past the bound; a
 * `find` over a huge folder stops at its deadline and its listings do not evict other
 * users' listing snapshots.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import t, { type Test } from 'tap'
import { startTestServer, tmpSession } from '../../helpers/filegate.js'
import { INITIALIZE, MCP_HEADERS, textOf } from './client.js'

/** The SDK's client from `address` (X-Forwarded-For, through a trusted proxy on loopback). */
async function clientFrom(t: Test, url: string, token: string, address: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } } })
  const client = new Client({ name: 'limits-test', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport }
}

/** A raw initialize from `address`: the HTTP status. */
async function open(url: string, token: string, address: string): Promise<number> {
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'x-forwarded-for': address }, body: JSON.stringify(INITIALIZE) })
  await res.text()
  return res.status
}

const ls = async (client: Client, path = '/'): Promise<CallToolResult> => (await client.callTool({ name: 'ls', arguments: { path } })) as CallToolResult

t.test('sessions: 40 tmp ids opening hundreds of sessions do not shut anyone else out', async (t) => {
  const MAX = 60
  const { url } = await startTestServer(t, { trust_proxy: ['127.0.0.1'], mcp: { max_sessions: MAX, sessions_per_login: 8, sessions_per_address: 30 } })
  const victim = await clientFrom(t, url, await tmpSession(url, 'victim'), '192.0.2.10')
  t.notOk((await ls(victim.client)).isError, 'the victim works before')

  const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => tmpSession(url, `flood${i}`)))
  // Wave 1: every id from one address (the per-address bound); wave 2: each id from its own address (the table's).
  const statuses: number[] = []
  for (const [wave, addressOf] of [
    [1, () => '198.51.100.7'],
    [2, (i: number) => `203.0.113.${i + 1}`],
  ] as const) {
    for (let round = 0; round < 5; round++) {
      statuses.push(...(await Promise.all(ids.map((token, i) => open(url, token, addressOf(i))))))
      t.notOk((await ls(victim.client)).isError, `the victim's session is still served (wave ${wave}, round ${round + 1})`)
    }
  }
  t.equal(statuses.length, 400, '400 sessions asked for')
  t.same([...new Set(statuses)], [200], 'every newcomer was let in (each in turn made room from the biggest holder)')

  const late = await clientFrom(t, url, await tmpSession(url, 'late'), '192.0.2.20')
  t.notOk((await ls(late.client)).isError, 'another user opens a session after the flood and is served')
  t.notOk((await ls(victim.client)).isError, 'the first victim too')
})

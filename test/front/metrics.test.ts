/**
 * @module test/front/metrics.test
 * GET /metrics over real HTTP: the figures move with the requests a client makes
 * (bytes out after a download, in after an upload, a live transfer while one streams,
 * login failures and throttles), routes are counted by pattern, and the endpoint is
 * refused to callers that are neither loopback clients nor holders of the token.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, validateConfig } from '../../core/config.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { type Sample, parseMetrics } from '../helpers/prometheus.js'



async function scrape(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/metrics`, { headers })
  const text = await res.text()
  return { res, text, samples: parseMetrics(text) }
}

/** The sum of the samples named `name` whose labels include `labels`. */
function value(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0)
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('the figures move with requests', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const call = api(url, token)
  const before = (await scrape(url)).samples
  t.equal(value(before, 'filegate_sessions_issued_total'), 1, 'the session issued')
  t.equal(value(before, 'filegate_pool_threads'), 1, 'the pool has its one thread')

  const body = Buffer.alloc(300_000, 7)
  t.equal((await call('POST', '/api/files/cat', { path: '/m/up.bin' }, { body })).status, 200)
  const res = await call('GET', '/api/files/cat', { path: '/m/up.bin' })
  t.equal((await res.arrayBuffer()).byteLength, body.length)
  await call('DELETE', '/api/share/some-share-id')

  const { res: scraped, text, samples } = await scrape(url)
  t.equal(scraped.status, 200)
  t.match(scraped.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const bytes = (direction: string) => value(samples, 'filegate_transfer_bytes_total', { backend: 'local', direction }) - value(before, 'filegate_transfer_bytes_total', { backend: 'local', direction })
  t.equal(bytes('in'), body.length, 'the upload counts as bytes in')
  t.equal(bytes('out'), body.length, 'the download counts as bytes out')
  t.equal(value(samples, 'filegate_http_requests_total', { route: '/api/files/cat', method: 'GET', status: '200' }), 1)
  t.equal(value(samples, 'filegate_http_requests_total', { route: '/api/files/cat', method: 'POST', status: '200' }), 1)
  t.equal(value(samples, 'filegate_http_requests_total', { route: '/api/session', method: 'POST', status: '200' }), 1)
  t.equal(value(samples, 'filegate_http_requests_total', { route: '/api/share/{id}', method: 'DELETE' }), 1, 'an id is counted under its pattern')
  t.notMatch(text, 'some-share-id', 'never a raw path or id')
  t.equal(value(samples, 'filegate_transfer_duration_seconds_count', { backend: 'local', direction: 'out' }), 1)
  t.equal(value(samples, 'filegate_transfer_duration_seconds_count', { backend: 'local', direction: 'in' }), 1)
  t.ok(value(samples, 'process_resident_memory_bytes') > 0, "the process's own figures")
  const documented = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')
  for (const [, name] of text.matchAll(/^# HELP (filegate_\w+)/gm)) t.match(documented, `| \`${name}\` |`, `${name} is in docs/api.md`)

  // A download held open: a live transfer, owned by a worker thread, until it ends.
  const home = join(dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, 'big.bin'), Buffer.alloc(64 * 1024 * 1024))
  const big = await call('GET', '/api/files/cat', { path: '/big.bin' })
  const reader = big.body!.getReader()
  await reader.read()
  const live = (await scrape(url)).samples
  t.equal(value(live, 'filegate_transfers_in_flight', { direction: 'out' }), 1, 'the download is live')
  t.ok(value(live, 'filegate_pool_transfers') >= 1, 'the pool owns it as a live transfer')
  await reader.cancel()
  await until('the transfer to end', async () => value((await scrape(url)).samples, 'filegate_transfers_in_flight', { direction: 'out' }) === 0)
})

t.test('login failures and throttles', async (t) => {
  const { url } = await startTestServer(t, { admin_password: 'the admin password' })
  const login = () => fetch(`${url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ password: 'wrong' }) })
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) statuses.push((await login()).status)
  t.same(statuses, [401, 401, 401, 401, 401, 429])
  const { samples } = await scrape(url)
  t.equal(value(samples, 'filegate_login_failures_total', { endpoint: 'admin' }), 5)
  t.equal(value(samples, 'filegate_throttled_total', { route: '/admin/api/session' }), 1)
  t.equal(value(samples, 'filegate_http_requests_total', { route: '/admin/api/session', method: 'POST', status: '401' }), 5)
})

t.test('who may scrape', async (t) => {
  t.test('loopback clients, by default; not through a proxy', async (t) => {
    const { url } = await startTestServer(t)
    t.equal((await scrape(url)).res.status, 200)
    const proxied = await scrape(url, { 'x-forwarded-for': '203.0.113.9' })
    t.equal(proxied.res.status, 403)
    t.match(JSON.parse(proxied.text), { status: 'error', code: 'FORBIDDEN' })
  })
  t.test('loopback turned off, no token: nobody', async (t) => {
    const { url } = await startTestServer(t, { metrics: { allow_loopback: false } })
    t.equal((await scrape(url)).res.status, 403)
  })
  t.test('with a token: its bearers only', async (t) => {
    const token = 'a-metrics-token-0123456789'
    const { url } = await startTestServer(t, { metrics: { allow_loopback: false, token } })
    const none = await scrape(url)
    t.equal(none.res.status, 401)
    t.match(JSON.parse(none.text), { status: 'error', code: 'NOT_AUTHENTICATED' })
    t.equal((await scrape(url, { authorization: `Bearer ${token}x` })).res.status, 401, 'a wrong token')
    t.equal((await scrape(url, { authorization: `Basic ${token}` })).res.status, 401, 'not a bearer token')
    const ok = await scrape(url, { authorization: `Bearer ${token}` })
    t.equal(ok.res.status, 200)
    t.match(ok.text, /^# HELP filegate_http_requests_total/m)
  })
  t.test('settings are checked', async (t) => {
    t.throws(() => validateConfig({ metrics: { token: 'short' } }), ConfigError)
    t.throws(() => validateConfig({ metrics: { allow_loopback: 'yes' } }), ConfigError)
    t.throws(() => validateConfig({ metrics: { tokens: 'x' } }), ConfigError)
    t.same(validateConfig({}).metrics, { allow_loopback: true, token: null })
  })
})

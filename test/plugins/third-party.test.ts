/**
 * The plugin mechanism (core/plugin.ts) with a third-party plugin loaded from a path in
 * the configuration: test/fixtures/plugins/plg_example/index.js, plain JavaScript that
 * filegate knows nothing about. Its route, its streamed transform, its gateway and its
 * storage type; transforms that fail before and in the middle of a download; plugins that
 * fail at start-up.
 */
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import type { BackendSpec } from '../../core/backend.js'
import { type PluginBackendSpec, checkPlugin } from '../../core/plugin.js'
import { loadPlugins } from '../../front/plugins.js'
import { FULL_ACCESS } from '../../core/permissions.js'
import { openView } from '../../gateways/connection/index.js'
import { WorkerPool } from '../../workers/pool.js'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/plugins/${name}/index.js`, import.meta.url))
const EXAMPLE = { name: 'plg_example', path: fixture('plg_example'), options: { greeting: 'hi' } }

const upper = (b: Buffer) => Buffer.from(b.map((c) => (c >= 0x61 && c <= 0x7a ? c - 0x20 : c)))

async function setup(t: Test, plugins: unknown[] = ['plg_image_ascii', EXAMPLE]) {
  const s = await startTestServer(t, { plugins })
  const token = await tmpSession(s.url)
  const call = api(s.url, token)
  return { s, token, call }
}

t.test('a route under /plugins/<name>/: authenticated by filegate, or by itself', async (t) => {
  const { s, call } = await setup(t)
  await call('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'a' })

  const anon = await fetch(`${s.url}/plugins/plg_example/hello`)
  t.equal(anon.status, 401, 'a session route without a token: 401')
  t.match(await anon.json(), { status: 'error', code: 'NOT_AUTHENTICATED' }, 'the contract envelope')

  const res = await call('GET', '/plugins/plg_example/hello')
  t.equal(res.status, 200, 'with a token: 200')
  const body = (await res.json()) as { result: { greeting: string; files: string[]; backendID: string; gateway_port: number } }
  t.equal(body.result.greeting, 'hi', 'the plugin got its options')
  t.strictSame(body.result.files, ['a.txt'], "the route reached the caller's own storage")
  const session = (await (await call('GET', '/api/session')).json()) as { result: { backendID: string } }
  t.equal(body.result.backendID, session.result.backendID, "the caller's backendID")

  for (const method of ['GET', 'POST']) {
    const r = await fetch(`${s.url}/plugins/plg_example/ping`, { method })
    t.equal(await r.text(), `pong ${method}\n`, `an auth:'none' route answers ${method} without a token`)
  }
  const put = await fetch(`${s.url}/plugins/plg_example/ping`, { method: 'PUT' })
  t.equal(put.status, 400, 'a method the route does not list: 400, as for built-in routes')
  t.equal((await fetch(`${s.url}/plugins/plg_example/ping/`)).status, 200, 'a trailing slash is the same route')
  t.equal((await call('GET', '/plugins/plg_example/nope')).status, 404, 'a sub-path it did not register: 404')
  t.equal((await call('GET', '/plugins/plg_other/hello')).status, 404, 'a plugin that is not enabled: 404')
})

t.test('a transform from a third-party plugin, streamed', async (t) => {
  const { call } = await setup(t)
  // 3 MiB of text: several 1 MiB chunks pass through the transform one at a time.
  const line = Buffer.from('the quick brown fox jumps over the lazy dog, déjà vu ünïcödé\n')
  const text = Buffer.concat(Array.from({ length: Math.ceil((3 * 1024 * 1024) / line.length) }, () => line))
  await call('POST', '/api/files/cat', { path: '/fox.txt' }, { body: text })

  const res = await call('GET', '/api/files/cat', { path: '/fox.txt', upper: '' })
  t.equal(res.status, 200, '200')
  t.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8', "the plugin's type")
  t.equal(res.headers.get('content-length'), null, 'no length: it is not known in advance')
  t.ok(Buffer.from(await res.arrayBuffer()).equals(upper(text)), 'the whole file, upper-cased (UTF-8 intact)')

  const off = await call('GET', '/api/files/cat', { path: '/fox.txt', upper: 'false' })
  t.ok(Buffer.from(await off.arrayBuffer()).equals(text), 'upper=false: untouched')

  await call('POST', '/api/files/cat', { path: '/data.bin' }, { body: new Uint8Array([1, 2, 3]) })
  const bin = await call('GET', '/api/files/cat', { path: '/data.bin', upper: '' })
  t.equal(bin.status, 415, "the plugin's own refusal (an FsError-shaped EMEDIA): 415")
  t.strictSame(await bin.json(), { status: 'error', code: 'UNSUPPORTED_MEDIA', message: 'data.bin is not a text file' }, 'its message')

  const bad = await call('GET', '/api/files/cat', { path: '/fox.txt', upper: '', upper_fail: 'sometimes' })
  t.equal(bad.status, 400, "the plugin's parameter check on the main thread: 400")
  t.match(await bad.json(), { code: 'INVALID_INPUT', message: /upper_fail/ })

  await call('POST', '/api/files/cat', { path: '/p.png' }, { body: 'not really a png' })
  const both = await call('GET', '/api/files/cat', { path: '/p.png', upper: '', ascii: '' })
  t.equal(both.status, 400, 'two transforms on one request: 400')
  t.match(await both.json(), { code: 'INVALID_INPUT', message: /one download transform at a time: plg_image_ascii and plg_example/ })
})

t.test('a transform that fails answers a contract-shaped error, and nothing crashes', async (t) => {
  const { s, call } = await setup(t)
  const text = Buffer.alloc(3 * 1024 * 1024, 'abcdefgh\n')
  await call('POST', '/api/files/cat', { path: '/t.txt' }, { body: text })
  const threads = s.app.pool.threads.map((w) => w.threadId)

  const before = await call('GET', '/api/files/cat', { path: '/t.txt', upper: '', upper_fail: 'open' })
  t.equal(before.status, 500, 'failing before the first byte: a JSON error')
  t.strictSame(await before.json(), { status: 'error', code: 'INTERNAL', message: 'internal error' }, 'the envelope, without the detail')

  const midway = await call('GET', '/api/files/cat', { path: '/t.txt', upper: '', upper_fail: 'stream' })
  t.equal(midway.status, 200, 'failing mid-stream: the head was already sent')
  await t.rejects(midway.arrayBuffer(), 'and the connection is aborted: the client sees a failed download, not a short one')

  const ok = await call('GET', '/api/files/cat', { path: '/t.txt', upper: '' })
  t.ok(Buffer.from(await ok.arrayBuffer()).equals(upper(text)), 'the server goes on serving the same transform')
  t.strictSame(
    s.app.pool.threads.map((w) => w.threadId),
    threads,
    'the worker threads are the same: none died',
  )
  t.equal((await call('GET', '/api/files/cat', { path: '/t.txt' })).status, 200, 'and plain downloads')
})

t.test("a plugin's gateway starts and stops with the server", async (t) => {
  const { s, call } = await setup(t, [{ ...EXAMPLE, options: { greeting: 'howdy' } }])
  const port = ((await (await call('GET', '/plugins/plg_example/hello')).json()) as { result: { gateway_port: number } }).result.gateway_port
  t.ok(port > 0, `listening on port ${port}`)
  const read = () =>
    new Promise<string>((resolve, reject) => {
      let got = ''
      connect(port, '127.0.0.1')
        .on('data', (c) => (got += c.toString()))
        .on('end', () => resolve(got))
        .on('error', reject)
    })
  t.equal(await read(), 'howdy from the plg_example gateway\n', 'it answers')
  await s.app.close(0)
  await t.rejects(read(), { code: 'ECONNREFUSED' }, 'stopped with the server')
})

t.test("a plugin's storage type: drivers made in the worker threads", async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 4, maxQueue: 10, plugins: [EXAMPLE] })
  t.teardown(() => pool.close())
  const ctx = { requestId: 'r1', signal: new AbortController().signal }
  // What a session on a connection of type "memory" would carry (see the report on wiring sessions).
  const spec: PluginBackendSpec = { type: 'plugin', plugin: 'plg_example', backend: 'memory', params: { bucket: 't' } }
  const view = (s: unknown) => openView({ pool, spec: s as BackendSpec, permissions: FULL_ACCESS, stagingDir: t.testdir() })
  const storage = await view(spec)
  await storage.writeFile(ctx, '/docs/a.txt', (async function* () {
    yield Buffer.from('in memory')
  })(), { overwrite: true })
  t.strictSame((await storage.listAll(ctx, '/docs')).map((e) => [e.name, e.size]), [['a.txt', 9]], 'written and listed')
  const read = await storage.readFile(ctx, '/docs/a.txt')
  const chunks: Uint8Array[] = []
  for await (const c of read.body) chunks.push(c)
  t.equal(Buffer.concat(chunks).toString(), 'in memory', 'read back')
  await t.rejects(storage.stat(ctx, '/nope'), { code: 'ENOENT' }, "the plugin driver's FsError-shaped errors keep their code across the thread")

  await t.rejects(view({ ...spec, plugin: 'plg_nope' }), { code: 'ENOTSUP', message: /plugin "plg_nope" is not enabled/ }, 'a plugin that is not enabled: ENOTSUP')
  await t.rejects(view({ ...spec, backend: 'disk' }), { code: 'ENOTSUP', message: /provides no "disk" storage/ }, 'a type it does not provide: ENOTSUP')

  const host = await loadPlugins([EXAMPLE])
  const memory = host.storageType('memory')
  t.equal(memory?.plugin, 'plg_example', 'the main thread knows which plugin provides "memory"')
  t.strictSame(memory?.backend.parse?.({ bucket: 'b1', other: 1 }, {}), { bucket: 'b1' }, 'and parses its parameters')
  t.throws(() => memory?.backend.parse?.({ bucket: 'B A D' }, {}), { name: 'ApiError', code: 'INVALID_INPUT' })
})

t.test('a plugin that fails at start-up stops it, naming the plugin', async (t) => {
  const cases: [string, unknown[], RegExp][] = [
    ['throws while loading', [{ name: 'plg_throws', path: fixture('plg_throws') }], /plugin "plg_throws" failed to load from .*plg_throws\/index\.js: libfoo\.so\.1: cannot open/],
    ['refuses its options', [{ ...EXAMPLE, options: { colour: 'red' } }], /plugin "plg_example" refused to start: unknown option "colour"/],
    ['is not where the path says', [{ name: 'plg_gone', path: '/nonexistent/plg_gone/index.js' }], /plugin "plg_gone" failed to load from \/nonexistent\/plg_gone\/index\.js/],
    ['is named otherwise', [{ name: 'plg_renamed', path: fixture('plg_example') }], /plugin "plg_renamed" \(.*\): it is named "plg_example"/],
    ['is not built in and has no path', ['plg_nope'], /no built-in plugin is named "plg_nope" \(built in: plg_image_ascii, plg_image_thumbnail\); a third-party plugin needs/],
    ['takes a built-in name', [{ name: 'plg_image_ascii', path: fixture('plg_example') }], /"plg_image_ascii" is a built-in plugin's name/],
  ]
  for (const [what, plugins, message] of cases) {
    await t.rejects(startTestServer(t, { plugins }), { message }, `a plugin that ${what}`)
  }

  // As an operator sees it: the command exits 1 with one line naming the plugin.
  const child = spawn(process.execPath, ['--import', 'tsx', 'front/main.ts', '--port', '0', '--data-dir', t.testdir()], {
    cwd: ROOT,
    env: { ...process.env, FILEGATE_PLUGINS: JSON.stringify([{ name: 'plg_throws', path: fixture('plg_throws') }]) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err = ''
  child.stderr.on('data', (c: Buffer) => (err += c.toString()))
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  t.equal(code, 1, 'the CLI exits 1')
  t.match(err, /^filegate: filegate could not start: plugin "plg_throws" failed to load from .*: libfoo\.so\.1/m, 'and says which plugin, and why')
})

t.test('checkPlugin: a module of the wrong shape is refused with a precise message', async (t) => {
  const ok = { name: 'p', routes: { hi: { handle: async () => ({ status: 200 }) } } }
  t.equal(checkPlugin(ok, 'p', 'x').name, 'p', 'a good one passes')
  const bad: [unknown, RegExp][] = [
    [undefined, /no default export/],
    [{ name: 'p', transfrom: {} }, /unknown hook "transfrom"/],
    [{ name: 'p', init: 1 }, /"init" must be a function/],
    [{ name: 'p', transform: { open: 'x' } }, /"transform.open" must be a function/],
    [{ name: 'p', routes: { '../x': { handle() {} } } }, /route "..\/x" must be segments/],
    [{ name: 'p', routes: { x: {} } }, /route "x" needs a "handle" function/],
    [{ name: 'p', routes: { x: { handle() {}, auth: 'maybe' } } }, /"auth" must be "session" or "none"/],
    [{ name: 'p', routes: { x: { handle() {}, methods: ['get'] } } }, /upper-case HTTP methods/],
    [{ name: 'p', backends: { Mem: { create() {} } } }, /backend type "Mem"/],
    [{ name: 'p', backends: { mem: {} } }, /backend "mem" needs a "create" function/],
  ]
  for (const [value, message] of bad) t.throws(() => checkPlugin(value, 'p', 'x'), { name: 'PluginLoadError', plugin: 'p', message }, String(message))
  await t.rejects(loadPlugins([{ name: 'plg_example', path: fixture('plg_example'), options: {} }, { name: 'plg_example2', path: fixture('plg_example'), options: {} }]), {
    message: /it is named "plg_example"/,
  })
})

t.test("a plugin's storage type, through a session and HTTP", async (t) => {
  const s = await startTestServer(t, { plugins: [EXAMPLE], connections: [{ label: 'mem', type: 'memory', bucket: 'http' }] })
  const created = (await (await fetch(`${s.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'mem' }) })).json()) as {
    result: { authorization: string; backendID: string }
  }
  const call = api(s.url, created.result.authorization)
  t.equal((await call('POST', '/api/files/cat', { path: '/docs/m.txt' }, { body: 'memory over http' })).status, 200, 'upload')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/docs/m.txt' })).text(), 'memory over http', 'download')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/docs/m.txt', upper: '' })).text(), 'MEMORY OVER HTTP', 'and the transform on it')
  const bad = await fetch(`${s.url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'memory', bucket: 'B A D' }) })
  t.equal(bad.status, 200, "the connection's fixed bucket overrides the client's")
  const none = await startTestServer(t, { connections: [{ label: 'mem', type: 'memory' }] })
  const refused = await fetch(`${none.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'mem' }) })
  t.equal(refused.status, 400, 'without the plugin: the type is unknown')
})

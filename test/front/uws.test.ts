/**
 * The HTTP engine: the pinned uWebSockets.js build is native on this Node (20 and 22
 * on glibc >= 2.27); where it is not, "auto" falls back to node:http with one warning
 * and "uws" refuses to start.
 */
import t from 'tap'
import { validateConfig } from '../../core/config.js'
import { startFilegate } from '../../front/app.js'
import { pickEngine } from '../../front/http/engine.js'
import { loadUws } from '../../front/http/uws.js'
import { type Level, createLogger } from '../../front/log.js'

const uwsExpected = Number(process.versions.node.split('.')[0]) <= 22

t.test('the pinned uWebSockets.js loads natively on Node 20 and 22', { skip: !uwsExpected && 'no uWS binary for this Node here' }, async (t) => {
  const { uws, version } = loadUws()
  t.ok(String(uws.App).includes('[native code]'), 'uWS.App is a native function')
  t.match(version, /^@based\/uws@/, 'with the package it came from')
  t.equal(process.env.UWS_HTTP_MAX_HEADERS_SIZE, '16384', 'its header limit is set before it loads')
  t.strictSame(pickEngine('auto'), { engine: 'uws', version }, 'auto picks it')
})

t.test('http_engine picks the engine and says which', async (t) => {
  for (const setting of ['auto', 'node'] as const) {
    const lines: { level: Level; line: Record<string, unknown> }[] = []
    const logger = createLogger('info', (line, level) => lines.push({ level, line: JSON.parse(line) as Record<string, unknown> }))
    const app = await startFilegate(validateConfig({ port: 0, workers: 1, data_dir: t.testdir(), http_engine: setting, sftp: { port: 'off' }, s3: { port: 'off' } }), { logger })
    const res = await fetch(`http://127.0.0.1:${app.port}/healthz`)
    t.equal(res.status, 200, `${setting}: serves`)
    const expected = setting === 'node' || !uwsExpected ? 'node' : 'uws'
    // uWS writes its own "uWebSockets: 20" header and has no documented switch (docs/http-engines.md).
    if (expected === 'node') t.equal(res.headers.get('uwebsockets'), null, `${setting}: no uWebSockets header`)
    t.equal(app.http.engine, expected, `${setting}: ${expected}`)
    const said = lines.filter((l) => l.line.engine !== undefined)
    t.equal(said.length, 1, `${setting}: one line about the engine`)
    if (app.http.fallback) t.match(said[0], { level: 'warn', line: { msg: /uWebSockets\.js.*node:http/ } }, 'the fallback is a warning naming what was tried')
    else t.match(said[0], { level: 'info', line: { msg: 'HTTP engine', engine: expected } })
    await app.close(0)
  }
})

t.test('a forced uws engine that cannot load stops start-up', { skip: uwsExpected && 'uWS loads on this Node' }, async (t) => {
  t.throws(() => pickEngine('uws'), /http_engine is "uws" but no native uWebSockets\.js build loads/)
})

t.test('http_engine is validated', async (t) => {
  t.throws(() => validateConfig({ http_engine: 'fast' }), /http_engine must be one of auto, uws, node/)
})

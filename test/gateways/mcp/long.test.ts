/**
 * Long tools stop when the client cancels them (notifications/cancelled → the tool's
 * signal): a find over a large tree stops walking, a recursive rm stops removing. And an
 * idle SSE stream stays open past the HTTP engine's idle timeout (keep-alive comments).
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { startTestServer } from '../../helpers/filegate.js'
import { KINDS, connect } from './client.js'

async function localServer(t: Test) {
  const disk = t.testdir({ root: {}, data: {} })
  const root = join(disk, 'root')
  const running = await startTestServer(t, { data_dir: join(disk, 'data'), connections: [{ label: 'disk', type: 'local', path: root }] })
  const res = await fetch(`${running.url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
  const token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  return { ...running, root, token }
}

async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Waits until `read` gives the same value twice `gapMs` apart; that value. */
async function settled(read: () => number, gapMs = 700): Promise<number> {
  let last = read()
  for (;;) {
    await new Promise((r) => setTimeout(r, gapMs))
    const now = read()
    if (now === last) return now
    last = now
  }
}

for (const kind of KINDS) {
  t.test(`${kind}: a cancelled find stops walking`, async (t) => {
    const { url, token, root, app } = await localServer(t)
    const DIRS = 100
    for (let i = 0; i < DIRS; i++) for (let j = 0; j < DIRS; j++) mkdirSync(join(root, `d${i}`, `e${j}`), { recursive: true })
    const mcp = await connect(t, url, token, kind)
    const base = app.pool.stats.completed
    const ac = new AbortController()
    const call = mcp.call('find', { path: '/', pattern: '*never*' }, { signal: ac.signal })
    await until('the walk to start', () => app.pool.stats.completed > base + 20)
    ac.abort()
    await t.rejects(call, /abort/i)
    const done = (await settled(() => app.pool.stats.completed)) - base
    t.ok(done < DIRS * DIRS, `the walk stopped: ${done} listings of the ${DIRS * DIRS + DIRS + 1} a whole walk makes`)
    t.equal(await mcp.text('ls', { path: '/d0/e0' }), '(empty folder)', 'the session goes on')
  })

  t.test(`${kind}: a cancelled recursive rm stops removing`, async (t) => {
    const { url, token, root } = await localServer(t)
    // Files left in the tree (a folder may vanish while it is counted).
    const files = (dir: string): string[] => {
      try {
        return readdirSync(dir)
      } catch {
        return []
      }
    }
    const count = () => files(join(root, 'tree')).reduce((n, d) => n + files(join(root, 'tree', d)).length, 0)
    for (let i = 0; i < 40; i++) {
      mkdirSync(join(root, 'tree', `d${i}`), { recursive: true })
      for (let j = 0; j < 100; j++) writeFileSync(join(root, 'tree', `d${i}`, `f${j}`), 'x')
    }
    const mcp = await connect(t, url, token, kind)
    const ac = new AbortController()
    const call = mcp.call('rm', { path: '/tree', recursive: true }, { signal: ac.signal })
    await until('removals to start', () => count() < 3950)
    ac.abort()
    await t.rejects(call, /abort/i)
    const left = await settled(count)
    t.ok(left > 0, `the rm stopped with ${left} of 4000 files left`)
  })
}

t.test('an idle SSE stream outlives the engine\'s idle timeout', async (t) => {
  const { url, token } = await localServer(t)
  const mcp = await connect(t, url, token, 'sse')
  let closed = false
  mcp.transport.onclose = () => void (closed = true)
  await new Promise((r) => setTimeout(r, 12_000))
  t.notOk(closed, 'the stream is still open')
  t.equal(await mcp.text('ls', { path: '/' }), '(empty folder)')
})

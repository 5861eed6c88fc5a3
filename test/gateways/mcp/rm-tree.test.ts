/**
 * MCP `rm` with `recursive`: a folder of many entries in nested folders goes in one
 * worker task (the view's `removeTree`, as the HTTP API's rm), every entry of it; a login
 * without can_delete is refused before anything is removed. Gateway users made through
 * the admin API, logged in with HTTP session tokens sent to the built-in MCP gateway.
 */
import { mkdirSync, readdirSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer } from '../../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { connect, textOf } from './client.js'

/** 10 folders of 3 subfolders of 10 files: 300 files, 330 entries. */
function plantTree(root: string): void {
  for (let i = 0; i < 10; i++) {
    for (let j = 0; j < 3; j++) {
      const dir = join(root, 'tree', `d${i}`, `e${j}`)
      mkdirSync(dir, { recursive: true })
      for (let k = 0; k < 10; k++) writeFileSync(join(dir, `f${k}.txt`), `${i}.${j}.${k}`)
    }
  }
}

const filesUnder = (dir: string): number => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length

t.test('rm recursive removes a tree of 300 files in one worker task; refused without can_delete, nothing removed', async (t) => {
  const dir = t.testdir({ data: {}, disk: {} })
  const disk = join(dir, 'disk')
  plantTree(disk)
  const { url, app } = await startTestServer(t, { data_dir: join(dir, 'data'), admin_password: ADMIN_PASSWORD, connections: [{ label: 'disk', type: 'local', path: disk, public: true }] })
  const admin = api(url, await adminToken(url))
  const everything = { can_read: true, can_create_file: true, can_create_directory: true, can_rename: true, can_move: true, can_upload: true, can_delete: true }
  const users = { keeper: { ...everything, can_delete: false }, cleaner: everything }
  const login = async (name: keyof typeof users) => {
    const body = { name, password: `${name}-password`, connection: 'disk', permissions: users[name] }
    t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify(body) })).status, 200, `user ${name} made`)
    const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'gateway', user: name, password: `${name}-password` }) })
    return connect(t, url, ((await res.json()) as { result: { authorization: string } }).result.authorization, 'streamable')
  }

  const keeper = await login('keeper')
  const refused = await keeper.call('rm', { path: '/tree', recursive: true })
  t.equal(refused.isError, true, 'refused')
  t.match(textOf(refused), /^FORBIDDEN: this login may not delete \(it has no can_delete\)/)
  t.equal(filesUnder(join(disk, 'tree')), 300, 'every file is still there')

  const cleaner = await login('cleaner')
  t.equal(await cleaner.text('ls', { path: '/tree' }), Array.from({ length: 10 }, (_, i) => `[DIR] d${i}`).join('\n'), 'the view is open')
  const before = app.pool.stats.completed
  const rm = await cleaner.call('rm', { path: '/tree', recursive: true })
  const tasks = app.pool.stats.completed - before
  t.notOk(rm.isError, textOf(rm))
  t.equal(textOf(rm), 'removed /tree and everything in it')
  t.notOk(existsSync(join(disk, 'tree')), 'the tree is gone, every entry of it')
  // A look at what /tree is, then the removal: not one task per entry (a walk through the view took 331).
  t.ok(tasks <= 2, `one worker task for the tree (${tasks} tasks for the call)`)
})

/**
 * @module test/gateway-fs/list-snapshots.test
 * Listing snapshots cannot thrash (gateways/connection/list-pages.ts): one login listing
 * huge folders over and over, each time through a new view as MCP requests do, keeps
 * within its share of the snapshots and never evicts another login's, whose next pages
 * are sliced from its snapshot without listing its folder again. And the MCP gateway's
 * whole listings (gateways/mcp/fs-ops.ts) cost one backend listing per folder and stop at
 * their deadline before the next page. Over a real worker pool and local folders.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ListSnapshots, openView } from '../../gateways/connection/view.js'
import { DeadlineReached, listAll, walk } from '../../gateways/mcp/fs-ops.js'
import { WorkerPool } from '../../workers/pool.js'
import { READ_ONLY } from '../../core/permissions.js'

const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

const ctx = () => ({ requestId: 'snap', signal: new AbortController().signal })

function folder(root: string, dir: string, n: number): void {
  mkdirSync(join(root, dir), { recursive: true })
  for (let i = 0; i < n; i++) writeFileSync(join(root, dir, `f${String(i).padStart(6, '0')}`), '')
}

t.test("one login listing huge folders over and over keeps to its share and never evicts another login's snapshot", async (t) => {
  const disk = t.testdir({ victim: {}, attacker: {}, staging: {} })
  folder(join(disk, 'victim'), 'docs', 2000)
  folder(join(disk, 'attacker'), 'big', 6000)
  folder(join(disk, 'attacker'), 'huge', 9000)
  const PER_LOGIN = 8000
  const snapshots = new ListSnapshots({ maxEntries: 16_000, perLoginEntries: PER_LOGIN })
  const view = (who: string) => openView({ pool, spec: { type: 'local', root: join(disk, who) }, permissions: READ_ONLY, stagingDir: join(disk, 'staging'), snapshots })

  const victim = await view('victim')
  t.teardown(() => victim.close())
  const first = await victim.list(ctx(), '/docs', { limit: 100 })
  t.equal(first.entries.length, 100)

  // The attack: each request its own view (as each MCP request is), each a first page of a 12,000-entry folder.
  let attackerLogin = ''
  for (let i = 0; i < 8; i++) {
    const a = await view('attacker')
    attackerLogin = a.identity
    await a.list(ctx(), '/big', { limit: 10 })
    await a.list(ctx(), '/huge', { limit: 10 })
    a.close()
    t.ok(snapshots.entriesOf(attackerLogin) <= PER_LOGIN, `round ${i + 1}: the attacker holds ${snapshots.entriesOf(attackerLogin)} entries, within its share`)
  }
  t.ok(snapshots.entries <= 2000 + PER_LOGIN, `all snapshots together: ${snapshots.entries} entries`)
  t.equal(snapshots.entriesOf(victim.identity), 2000, "the victim's snapshot is still held")

  const before = pool.stats.completed
  let cursor = first.cursor
  let seen = first.entries.length
  while (cursor !== null) {
    const page = await victim.list(ctx(), '/docs', { cursor, limit: 500 })
    seen += page.entries.length
    cursor = page.cursor
  }
  t.equal(seen, 2000, 'the victim pages through every entry')
  t.equal(pool.stats.completed, before, 'without listing its folder again (its pages were sliced from its snapshot)')
})

t.test('MCP whole listings: one backend listing per folder, the deadline checked before each page', async (t) => {
  const disk = t.testdir({ root: {}, staging: {} })
  folder(join(disk, 'root'), 'big', 5000)
  for (let i = 0; i < 20; i++) mkdirSync(join(disk, 'root', 'tree', `d${i}`), { recursive: true })
  const fs = await openView({ pool, spec: { type: 'local', root: join(disk, 'root') }, permissions: READ_ONLY, stagingDir: join(disk, 'staging'), snapshots: new ListSnapshots() })
  t.teardown(() => fs.close())

  let before = pool.stats.completed
  const all = await listAll(fs, ctx(), '/big', 100_000)
  t.same([all.entries.length, all.cut], [5000, false], 'every entry')
  t.equal(pool.stats.completed - before, 1, 'one listing of the folder, not one per 1,000 entries')
  const some = await listAll(fs, ctx(), '/big', 1200)
  t.same([some.entries.length, some.cut], [1200, true], 'cut at the bound, and says so')

  before = pool.stats.completed
  const late = await listAll(fs, ctx(), '/big', 100_000, Date.now() - 1).catch((err: unknown) => err)
  t.ok(late instanceof DeadlineReached, 'a passed deadline stops the listing…')
  t.equal(pool.stats.completed, before, '…before its page is asked for')
  const reason = await walk(fs, ctx(), '/tree', { maxDepth: 8, maxVisited: 100_000, deadline: Date.now() - 1 }, () => true)
  t.equal(reason, 'stopped: the time limit was reached', 'a walk past its deadline says so')
  t.equal(pool.stats.completed, before, 'and lists nothing more')
})

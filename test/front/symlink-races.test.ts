/**
 * Symlinks swapped while requests run (issue 10, item 1), over the real HTTP API
 * of a local folder (a tmp space; the same driver as a `local` connection).
 *
 * - The flipper: a child process swaps `/race` between a folder inside the root
 *   and one outside, as fast as it can, while clients download, list, zip,
 *   upload (a plain upload and a resumable one, whose staged file is committed by a
 *   hard link), touch, mkdir, rm and mv through it.
 * - The mv-only variant: no local process; one client moves a folder holding a
 *   relative link (`../../zz-outside`) between depth 2, where the link leads to a
 *   folder inside the root, and depth 1, where it leads outside, while others
 *   read through the link.
 *
 * Containment must hold at the moment of use: not one outside byte is served
 * (every outside file holds a marker), and the outside tree on disk is
 * unchanged (nothing created, changed or removed). The figures (operations
 * tried, answers, escapes) are printed for the record; the variants run at the
 * same time to keep the test short.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import * as fs from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const MARK = 'OUTSIDE-SECRET'
const FLIP_MS = 10_000
const NAMES = 20
/** Moves the mv-only variant makes while others read through the link. */
const MOVES = 40

type Call = ReturnType<typeof api>

interface Tally {
  tried: number
  ok: number
  refused: number
  other: number
  /** Answers carrying outside bytes. */
  leaks: number
  /** Count by HTTP status and code, to see what the refusals were. */
  statuses: Record<string, number>
}

const tally = (): Tally => ({ tried: 0, ok: 0, refused: 0, other: 0, leaks: 0, statuses: {} })

/** Every entry below `dir` (hidden ones included): type, or size and content hash. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (rel: string): void => {
    for (const name of fs.readdirSync(join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`
      const st = fs.lstatSync(join(dir, r))
      if (st.isSymbolicLink()) out.set(r, `link ${fs.readlinkSync(join(dir, r))}`)
      else if (st.isDirectory()) {
        out.set(r, 'dir')
        walk(r)
      } else out.set(r, `file ${st.size} ${createHash('sha256').update(fs.readFileSync(join(dir, r))).digest('hex')} ${st.mtimeMs}`)
    }
  }
  walk('')
  return out
}

/** Outside entries created, changed and removed since `before`, by name. */
function outsideChanges(before: Map<string, string>, after: Map<string, string>): { created: string[]; changed: string[]; removed: string[] } {
  const created = [...after.keys()].filter((k) => !before.has(k))
  const removed = [...before.keys()].filter((k) => !after.has(k))
  const changed = [...before.keys()].filter((k) => after.has(k) && after.get(k) !== before.get(k))
  return { created, changed, removed }
}

/** The outside folder: every file holds the marker, some names too. */
function plantOutside(dir: string): void {
  fs.mkdirSync(join(dir, 'sub'), { recursive: true })
  fs.writeFileSync(join(dir, 'a.txt'), `${MARK} a`)
  fs.writeFileSync(join(dir, `${MARK}-only.txt`), MARK)
  fs.writeFileSync(join(dir, 'sub', 'x.txt'), `${MARK} sub`)
  fs.mkdirSync(join(dir, 'z'))
  fs.writeFileSync(join(dir, 'z', 'z.txt'), `${MARK} z`)
  for (let i = 0; i < NAMES; i++) {
    fs.writeFileSync(join(dir, `victim-${i}.txt`), `${MARK} victim`)
    fs.writeFileSync(join(dir, `steal-${i}.txt`), `${MARK} steal`)
  }
}

/** The body as far as it arrived, and whether it ended cleanly (a zip is cut short when a file goes away). */
async function bodyOf(res: Response): Promise<{ bytes: Buffer; complete: boolean }> {
  const parts: Uint8Array[] = []
  let complete = true
  try {
    const reader = res.body?.getReader()
    for (let r = await reader?.read(); r && !r.done; r = await reader!.read()) parts.push(r.value)
  } catch {
    complete = false
  }
  return { bytes: Buffer.concat(parts), complete }
}

/** Runs `op` in a loop until `running()` turns false; counts what it got, outside bytes in every byte received. */
async function loop(tl: Tally, running: () => boolean, op: (i: number) => Promise<Response>): Promise<void> {
  for (let i = 0; running(); i++) {
    tl.tried++
    let res: Response
    try {
      res = await op(i)
    } catch {
      tl.other++
      tl.statuses['no answer'] = (tl.statuses['no answer'] ?? 0) + 1
      continue
    }
    const { bytes, complete } = await bodyOf(res)
    if (bytes.includes(MARK)) tl.leaks++
    const key = `${res.status}${res.status >= 400 ? ` ${/"code":"([A-Z_]+)"/.exec(bytes.toString())?.[1] ?? ''}` : ''}${complete ? '' : ' cut short'}`
    tl.statuses[key] = (tl.statuses[key] ?? 0) + 1
    if (!complete) tl.other++
    else if (res.status >= 200 && res.status < 300) tl.ok++
    else if (res.status >= 400 && res.status < 500) tl.refused++
    else tl.other++
  }
}

/**
 * A child process swapping `link` between `a` and `b` for `ms`: each new link is made at
 * `tmp` (outside the root) and renamed onto `link`, so `link` always exists.
 */
function flipper(link: string, tmp: string, a: string, b: string, ms: number): { child: ChildProcess; flips: Promise<number> } {
  const script = `
    const fs = require('node:fs')
    const [link, tmp, a, b, ms] = process.argv.slice(1)
    const end = Date.now() + Number(ms)
    let n = 0
    while (Date.now() < end) {
      fs.symlinkSync(n % 2 ? a : b, tmp)
      fs.renameSync(tmp, link)
      n++
    }
    process.stdout.write(String(n))`
  const child = spawn(process.execPath, ['-e', script, link, tmp, a, b, String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const flips = new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`flipper exited with ${code}`))))
  })
  return { child, flips }
}

/** A server of its own, with its data in `<dir>/data`. */
async function setup(t: Test, dir: string): Promise<{ call: Call; home: string; dataDir: string }> {
  const { url, dataDir } = await startTestServer(t, { data_dir: join(dir, 'data') })
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  fs.mkdirSync(home, { recursive: true })
  return { call: api(url, token), home, dataDir }
}

function report(t: Test, title: string, tallies: Record<string, Tally>, extra: string): void {
  const lines = Object.entries(tallies).map(
    ([op, x]) => `  ${op.padEnd(10)} tried ${String(x.tried).padStart(5)}, 2xx ${String(x.ok).padStart(5)}, 4xx ${String(x.refused).padStart(5)}, other ${String(x.other).padStart(4)}, outside bytes served ${x.leaks} ${JSON.stringify(x.statuses)}`,
  )
  const tried = Object.values(tallies).reduce((n, x) => n + x.tried, 0)
  t.comment(`${title}: ${tried} operations; ${extra}\n${lines.join('\n')}`)
}

/** The flipper variant; answers what the test checks. */
async function flipperVariant(t: Test, dir: string) {
  const { call, home, dataDir } = await setup(t, dir)
  const outside = join(dataDir, '..', 'flip-outside', 'folder')
  plantOutside(outside)
  const inside = join(home, 'in')
  fs.mkdirSync(join(inside, 'sub'), { recursive: true })
  fs.writeFileSync(join(inside, 'a.txt'), 'inside a')
  fs.mkdirSync(join(inside, 'z'))
  fs.writeFileSync(join(inside, 'z', 'z.txt'), 'inside z')
  const link = join(home, 'race')
  fs.symlinkSync(inside, link)
  const before = snapshot(outside)

  const { child, flips } = flipper(link, join(outside, '..', 'race.tmp'), inside, outside, FLIP_MS)
  t.teardown(() => void child.kill())
  let running = true
  const done = flips.finally(() => (running = false))
  const go = () => running
  const T: Record<string, Tally> = {
    download: tally(),
    ls: tally(),
    zip: tally(),
    upload: tally(),
    tus: tally(),
    touch: tally(),
    mkdir: tally(),
    rm: tally(),
    'rm -r': tally(),
    'mv out': tally(),
    'mv in': tally(),
  }
  await Promise.all([
    done,
    loop(T.download!, go, () => call('GET', '/api/files/cat', { path: '/race/a.txt' })),
    loop(T.download!, go, () => call('GET', '/api/files/cat', { path: '/race/a.txt' })),
    loop(T.ls!, go, () => call('GET', '/api/files/ls', { path: '/race/' })),
    loop(T.zip!, go, (i) => call('GET', '/api/files/zip', { path: i % 2 ? '/race/' : '/race/z/', compression: 'store' })),
    loop(T.upload!, go, (i) => call('POST', '/api/files/cat', { path: `/race/up-${i}.txt` }, { body: 'uploaded' })),
    // A resumable upload: checked at creation, committed at its last byte (the staged file
    // taken as it is: a hard link into the folder, on this disk) wherever the link leads then.
    loop(T.tus!, go, async (i) => {
      const tus = { 'tus-resumable': '1.0.0' }
      const made = await call('POST', '/api/files/tus', { path: `/race/tus-${i}.txt` }, { headers: { ...tus, 'upload-length': '8' } })
      const at = made.headers.get('location')
      if (made.status !== 201 || at === null) return made
      await made.arrayBuffer()
      return call('PATCH', new URL(at, 'http://x').pathname, {}, { headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'uploaded' })
    }),
    loop(T.touch!, go, (i) => call('POST', '/api/files/touch', { path: `/race/touch-${i}.txt` })),
    loop(T.mkdir!, go, (i) => call('POST', '/api/files/mkdir', { path: `/race/mkdir-${i}/` })),
    loop(T.rm!, go, (i) => {
      // The inside twin must exist, or rm stops at its stat.
      fs.writeFileSync(join(inside, `victim-${i % NAMES}.txt`), 'inside victim')
      return call('POST', '/api/files/rm', { path: `/race/victim-${i % NAMES}.txt` })
    }),
    loop(T['rm -r']!, go, () => {
      fs.mkdirSync(join(inside, 'sub'), { recursive: true })
      fs.writeFileSync(join(inside, 'sub', 'x.txt'), 'inside sub')
      return call('POST', '/api/files/rm', { path: '/race/sub/' })
    }),
    loop(T['mv out']!, go, (i) => {
      fs.writeFileSync(join(inside, `steal-${i % NAMES}.txt`), 'inside steal')
      return call('POST', '/api/files/mv', { from: `/race/steal-${i % NAMES}.txt`, to: `/stolen/steal-${i}.txt` })
    }),
    loop(T['mv in']!, go, (i) => {
      fs.writeFileSync(join(home, `src-${i}.txt`), 'moved in')
      return call('POST', '/api/files/mv', { from: `/src-${i}.txt`, to: `/race/moved-${i}.txt` })
    }),
  ])
  const changes = outsideChanges(before, snapshot(outside))
  // What was moved into the root from outside shows there too.
  const stolen = fs.existsSync(join(home, 'stolen')) ? fs.readdirSync(join(home, 'stolen')).filter((n) => fs.readFileSync(join(home, 'stolen', n), 'utf8').includes(MARK)) : []
  const flipCount = await flips
  report(
    t,
    `flipper (${flipCount} swaps in ${FLIP_MS / 1000} s)`,
    T,
    `outside entries created ${changes.created.length}, changed ${changes.changed.length}, removed ${changes.removed.length}; outside files moved into the root ${stolen.length}`,
  )
  return { T, changes, stolen, flipCount }
}

/** The mv-only variant. */
async function mvVariant(t: Test, dir: string) {
  const { call, home, dataDir } = await setup(t, dir)
  // From <home>/in/, `../../zz-outside` is a sibling of the root; from <home>/deep/in/, it is <home>/zz-outside.
  const outside = join(dataDir, 'tmp', 'zz-outside')
  plantOutside(outside)
  fs.mkdirSync(join(home, 'zz-outside'))
  fs.writeFileSync(join(home, 'zz-outside', 'a.txt'), 'inside decoy')
  fs.mkdirSync(join(home, 'deep', 'in'), { recursive: true })
  fs.symlinkSync('../../zz-outside', join(home, 'deep', 'in', 'lnk'))
  const before = snapshot(outside)

  // The mover makes MOVES moves, however long a busy machine takes (the deadline only
  // guards against a hang); the readers run for as long as it does.
  const deadline = Date.now() + 120_000
  let moving = true
  const go = () => moving
  const T: Record<string, Tally> = { mv: tally(), download: tally(), ls: tally(), zip: tally() }
  const mover = async (): Promise<void> => {
    await loop(T.mv!, () => T.mv!.ok < MOVES && Date.now() < deadline, (i) =>
      call('POST', '/api/files/mv', i % 2 ? { from: '/in/', to: '/deep/in/' } : { from: '/deep/in/', to: '/in/' }),
    )
    moving = false
  }
  await Promise.all([
    mover(),
    loop(T.download!, go, () => call('GET', '/api/files/cat', { path: '/in/lnk/a.txt' })),
    loop(T.download!, go, () => call('GET', '/api/files/cat', { path: '/in/lnk/a.txt' })),
    loop(T.download!, go, () => call('GET', '/api/files/cat', { path: '/deep/in/lnk/a.txt' })),
    loop(T.ls!, go, (i) => call('GET', '/api/files/ls', { path: i % 2 ? '/in/lnk/' : '/deep/in/lnk/' })),
    loop(T.zip!, go, (i) => call('GET', '/api/files/zip', { path: i % 2 ? '/in/lnk/' : '/deep/in/lnk/', compression: 'store' })),
  ])
  const changes = outsideChanges(before, snapshot(outside))
  report(t, 'mv-only', T, `outside entries created ${changes.created.length}, changed ${changes.changed.length}, removed ${changes.removed.length}`)
  return { T, changes }
}

t.test('symlinks swapped during requests never lead outside the root', async (t) => {
  const dir = t.testdir({ flip: {}, mv: {} })
  const [flip, mv] = await Promise.all([flipperVariant(t, join(dir, 'flip')), mvVariant(t, join(dir, 'mv'))])

  t.ok(flip.flipCount > 100, `the flipper swapped the link (${flip.flipCount} times)`)
  for (const [op, x] of Object.entries(flip.T)) {
    t.ok(x.tried > 0, `flipper, ${op}: tried (${x.tried})`)
    t.equal(x.leaks, 0, `flipper, ${op}: no outside bytes served`)
  }
  t.ok(flip.T.download!.ok > 0 && flip.T.upload!.ok > 0 && flip.T.tus!.ok > 0, 'requests went through while the link pointed inside')
  t.same(flip.changes, { created: [], changed: [], removed: [] }, 'flipper: nothing created, changed or removed outside')
  t.same(flip.stolen, [], 'flipper: no outside file moved into the root')

  t.equal(mv.T.mv!.ok, MOVES, `the folder moved back and forth (${mv.T.mv!.ok} times)`)
  for (const op of ['download', 'ls', 'zip']) t.ok(mv.T[op]!.tried > 0, `mv-only, ${op}: tried while it moved (${mv.T[op]!.tried})`)
  for (const [op, x] of Object.entries(mv.T)) t.equal(x.leaks, 0, `mv-only, ${op}: no outside bytes served`)
  t.same(mv.changes, { created: [], changed: [], removed: [] }, 'mv-only: nothing created, changed or removed outside')
})

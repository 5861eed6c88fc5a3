/**
 * Canonical paths cannot climb above `/`, but a symlink planted inside a local
 * driver's folder could point anywhere (docs/api.md: "a symlink that leads outside
 * the session root" is FORBIDDEN, i.e. EACCES from the driver). Each scenario below
 * plants hostile links in a fresh root, runs every operation through them, and
 * checks three things: the operation is refused with a classified FsError whose
 * message names no server folder, the outside tree is byte-identical afterwards,
 * and the folder holding the links does not list them.
 *
 * Dangling links are no exception: one that leads outside (by its target's nearest
 * existing folder) is refused like the others, by reads (so that no answer tells
 * whether something exists out there) and by mutations, which would otherwise
 * replace the link with a regular entry.
 */
import { createHash } from 'node:crypto'
import * as fs from 'node:fs'
import * as nodePath from 'node:path'
import t, { type Test } from 'tap'
import type { Driver, OpContext } from '../../core/driver.js'
import { type FsErrorCode, isFsError } from '../../core/errors.js'
import { createLocalDriver } from '../../workers/drivers/local.js'

/**
 * Both ways of holding containment: descriptors checked through /proc/self/fd (Linux),
 * and the portable one (real paths checked, then used), which must refuse every
 * planted link as well: only races are beyond it.
 */
const PINNINGS = ['auto', 'path'] as const

const ctx = (): OpContext => ({ signal: new AbortController().signal, requestId: 'containment' })

async function* body(text = 'PWNED'): AsyncIterable<Uint8Array> {
  yield Buffer.from(text)
}

async function drain<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

const listNames = async (d: Driver, dir: string): Promise<string[]> =>
  (await drain(d.list(ctx(), dir)))
    .flat()
    .map((e) => e.name)
    .sort()

/** Every entry below `dir`: type, link target, or size + content hash + mtime. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (rel: string): void => {
    for (const name of fs.readdirSync(nodePath.join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`
      const abs = nodePath.join(dir, r)
      const st = fs.lstatSync(abs)
      if (st.isSymbolicLink()) out[r] = `link → ${fs.readlinkSync(abs)}`
      else if (st.isDirectory()) {
        out[r] = `dir ${st.mode.toString(8)}`
        walk(r)
      } else {
        const hash = createHash('sha256').update(fs.readFileSync(abs)).digest('hex')
        out[r] = `file ${st.mode.toString(8)} ${st.size} ${hash} ${st.mtimeMs}`
      }
    }
  }
  walk('')
  return out
}

const isLink = (abs: string): boolean => {
  try {
    return fs.lstatSync(abs).isSymbolicLink()
  } catch {
    return false
  }
}

// The outside world ---------------------------------------------------------------

const OUTSIDE_TREE = {
  'secret.txt': 'TOP SECRET',
  dir: { 'secret.txt': 'ALSO SECRET', sub: { 'deep.txt': 'DEEP SECRET' } },
}

// The root's own content, rebuilt before every operation.
function resetRoot(root: string): void {
  for (const name of fs.readdirSync(root)) fs.rmSync(nodePath.join(root, name), { recursive: true, force: true })
  fs.writeFileSync(nodePath.join(root, 'victim.txt'), 'victim')
  fs.mkdirSync(nodePath.join(root, 'docs'))
  fs.writeFileSync(nodePath.join(root, 'docs', 'readme.txt'), 'hello')
  fs.mkdirSync(nodePath.join(root, 'sub'))
  fs.mkdirSync(nodePath.join(root, 'deep', 'er'), { recursive: true })
  fs.mkdirSync(nodePath.join(root, 'a', 'b'), { recursive: true })
}

interface Where {
  readonly root: string
  readonly outside: string
  /** A folder next to the root whose name starts with the root's name. */
  readonly sibling: string
}

interface Probe {
  readonly path: string
  /** A symlink is a middle component of the path (not only its last one). */
  readonly through: boolean
}

interface Scenario {
  readonly name: string
  readonly dangling?: boolean
  /** [link path inside the root, target] */
  links(w: Where): [string, string][]
  probes(w: Where): Probe[]
}

const link = (path: string, through = false): Probe => ({ path, through })

const SCENARIOS: Scenario[] = [
  {
    name: 'a link to an outside file',
    links: (w) => [['/evil', nodePath.join(w.outside, 'secret.txt')]],
    probes: () => [link('/evil')],
  },
  {
    name: 'a link to an outside folder',
    links: (w) => [['/evil', nodePath.join(w.outside, 'dir')]],
    probes: () => [link('/evil'), link('/evil/secret.txt', true), link('/evil/sub', true), link('/evil/sub/deep.txt', true), link('/evil/new.txt', true)],
  },
  {
    name: 'a linked folder in the middle of a path',
    links: (w) => [['/a/b/evil', w.outside]],
    probes: () => [link('/a/b/evil'), link('/a/b/evil/secret.txt', true), link('/a/b/evil/dir/secret.txt', true), link('/a/b/evil/dir/sub', true)],
  },
  {
    name: 'a relative ../../ link',
    links: (w) => [
      ['/deep/er/evil', nodePath.relative(nodePath.join(w.root, 'deep', 'er'), nodePath.join(w.outside, 'secret.txt'))],
      ['/deep/er/evildir', nodePath.relative(nodePath.join(w.root, 'deep', 'er'), nodePath.join(w.outside, 'dir'))],
      // Climbs far past the filesystem's root, which clamps at `/`.
      ['/deep/er/far', '../'.repeat(64) + nodePath.join(w.outside, 'secret.txt').slice(1)],
    ],
    probes: () => [link('/deep/er/evil'), link('/deep/er/evildir'), link('/deep/er/evildir/secret.txt', true), link('/deep/er/far')],
  },
  {
    name: 'a link to /',
    links: () => [['/evil', '/']],
    // Through `/` to our outside folder, so that a leak would show in its snapshot.
    probes: (w) => [link('/evil'), link(`/evil${w.outside}`, true), link(`/evil${w.outside}/secret.txt`, true), link(`/evil${w.outside}/dir`, true)],
  },
  {
    name: 'a link to a sibling folder whose name starts with the root name',
    links: (w) => [
      ['/evil', nodePath.join(w.sibling, 'secret.txt')],
      ['/evildir', w.sibling],
      ['/evilrel', `../${nodePath.basename(w.sibling)}/secret.txt`],
    ],
    probes: () => [link('/evil'), link('/evildir'), link('/evildir/secret.txt', true), link('/evilrel')],
  },
  {
    name: 'a chain of links ending outside',
    links: (w) => [
      ['/evil', 'hop1'],
      ['/hop1', 'sub/hop2'],
      ['/sub/hop2', '../docs/hop3'],
      ['/docs/hop3', nodePath.join(w.outside, 'dir')],
    ],
    probes: () => [link('/evil'), link('/hop1'), link('/sub/hop2'), link('/docs/hop3'), link('/evil/secret.txt', true), link('/hop1/sub/deep.txt', true)],
  },
  {
    name: 'a link loop',
    links: () => [
      ['/evil', 'loop'],
      ['/loop', 'evil'],
      ['/self', 'self'],
    ],
    probes: () => [link('/evil'), link('/loop'), link('/self'), link('/evil/x', true)],
  },
  {
    name: 'a dangling link to a missing outside file',
    dangling: true,
    // The dangerous kind: its folder exists, so an O_CREAT through the link would create it.
    links: (w) => [['/evil', nodePath.join(w.outside, 'planted.txt')]],
    probes: () => [link('/evil'), link('/evil/x', true)],
  },
  {
    name: 'a dangling link to a missing outside folder',
    dangling: true,
    links: (w) => [
      ['/evil', nodePath.join(w.outside, 'planted-dir')],
      ['/evilrel', nodePath.relative(w.root, nodePath.join(w.outside, 'planted-rel'))],
    ],
    probes: () => [link('/evil'), link('/evil/new.txt', true), link('/evil/newdir', true), link('/evilrel')],
  },
]

/** A file outside the root the driver may adopt (a staged upload's, on the same disk): set per run. */
let adoptSource = ''

type Op = readonly [name: string, kind: 'read' | 'write', run: (d: Driver, p: string) => Promise<unknown>]

const OPS: Op[] = [
  ['stat', 'read', (d, p) => d.stat(ctx(), p)],
  ['read', 'read', (d, p) => drain(d.read(ctx(), p))],
  ['read a range', 'read', (d, p) => drain(d.read(ctx(), p, { start: 1, end: 3 }))],
  ['list', 'read', (d, p) => drain(d.list(ctx(), p))],
  ['write', 'write', (d, p) => d.write(ctx(), p, body())],
  ['write (no overwrite)', 'write', (d, p) => d.write(ctx(), p, body(), { overwrite: false })],
  ['write a child', 'write', (d, p) => d.write(ctx(), `${p}/new.txt`, body())],
  ['adopt', 'write', (d, p) => d.adopt!(ctx(), p, adoptSource)],
  ['adopt (no overwrite)', 'write', (d, p) => d.adopt!(ctx(), p, adoptSource, { overwrite: false })],
  ['adopt as a child', 'write', (d, p) => d.adopt!(ctx(), `${p}/new.txt`, adoptSource)],
  ['mkdir', 'write', (d, p) => d.mkdir(ctx(), p)],
  ['mkdir a child', 'write', (d, p) => d.mkdir(ctx(), `${p}/newdir`)],
  ['rename into (overwrite)', 'write', (d, p) => d.rename!(ctx(), '/victim.txt', p, { overwrite: true })],
  ['rename into (no overwrite)', 'write', (d, p) => d.rename!(ctx(), '/victim.txt', p, { overwrite: false })],
  ['rename into as a child', 'write', (d, p) => d.rename!(ctx(), '/victim.txt', `${p}/moved.txt`, { overwrite: false })],
  ['setMtime', 'write', (d, p) => d.setMtime!(ctx(), p, 0)],
]

/** Only for paths that go through a link: the entry itself lies outside. */
const THROUGH_OPS: Op[] = [
  ['remove', 'write', (d, p) => d.remove(ctx(), p)],
  ['rename out of', 'write', (d, p) => d.rename!(ctx(), p, '/stolen.txt', { overwrite: false })],
  ['rename out of (overwrite)', 'write', (d, p) => d.rename!(ctx(), p, '/victim.txt', { overwrite: true })],
]

/**
 * Fails unless `err` is a classified refusal with one of `codes` that names no server
 * folder (other than as part of `storagePath`, the path the client itself sent).
 */
function checkRefusal(t: Test, label: string, err: unknown, codes: readonly FsErrorCode[], w: Where, storagePath: string): void {
  if (!isFsError(err)) {
    t.fail(`${label}: threw something that is not an FsError`, { found: err })
    return
  }
  t.ok(codes.includes(err.code), `${label}: ${err.code}`, { found: err.code, wanted: codes, message: err.message })
  const said = `${err.message}\n${err.path ?? ''}`.replaceAll(storagePath, '<path>')
  for (const folder of [w.root, w.outside, w.sibling]) {
    if (said.includes(folder)) t.fail(`${label}: the error names a server folder`, { message: err.message })
  }
}

for (const pinning of PINNINGS) t.test(`hostile symlinks inside the root (${pinning} pinning)`, async (t) => {
  const outside = t.testdir(OUTSIDE_TREE)
  const before = snapshot(outside)
  adoptSource = `${outside}-staged`
  fs.writeFileSync(adoptSource, 'STAGED')
  t.teardown(() => fs.rmSync(adoptSource, { force: true }))

  for (const sc of SCENARIOS) {
    t.test(sc.name, async (t) => {
      const root = t.testdir({})
      const sibling = `${root}-sibling`
      fs.mkdirSync(sibling)
      fs.writeFileSync(nodePath.join(sibling, 'secret.txt'), 'SIBLING SECRET')
      t.teardown(() => fs.rmSync(sibling, { recursive: true, force: true }))
      const w: Where = { root, outside, sibling }
      const siblingBefore = snapshot(sibling)
      const d = await createLocalDriver({ root, pinning })
      const plant = (): void => {
        resetRoot(root)
        for (const [p, target] of sc.links(w)) fs.symlinkSync(target, nodePath.join(root, p))
      }
      const untouched = (label: string): void => {
        t.strictSame(snapshot(outside), before, `${label}: the outside tree is unchanged`)
        t.strictSame(snapshot(sibling), siblingBefore, `${label}: the sibling folder is unchanged`)
      }

      for (const probe of sc.probes(w)) {
        const ops = probe.through ? [...OPS, ...THROUGH_OPS] : OPS
        for (const [opName, , run] of ops) {
          plant()
          const label = `${opName} ${probe.path}`
          let err: unknown = null
          let result: unknown
          try {
            result = await run(d, probe.path)
          } catch (e) {
            err = e
          }
          if (err === null) t.fail(`${label}: succeeded`, { result })
          else checkRefusal(t, label, err, ['EACCES'], w, probe.path)
          t.equal(fs.readFileSync(nodePath.join(root, 'victim.txt'), 'utf8'), 'victim', `${label}: the victim file is intact`)
          if (sc.dangling) t.ok(sc.links(w).every(([p]) => isLink(nodePath.join(root, p))), `${label}: the dangling links are still there`)
          untouched(label)
        }
      }

      t.test('listings leave the links out', async (t) => {
        plant()
        const folders = new Set(sc.links(w).map(([p]) => nodePath.posix.dirname(p)))
        for (const dir of folders) {
          const abs = nodePath.join(root, dir)
          const regular = fs
            .readdirSync(abs)
            .filter((n) => !isLink(nodePath.join(abs, n)))
            .sort()
          t.strictSame(await listNames(d, dir), regular, `list ${dir} shows only the regular entries`)
        }
        untouched('list')
      })

      t.test('remove takes the link away, never its target', async (t) => {
        for (const [p, target] of sc.links(w)) {
          plant()
          await d.remove(ctx(), p)
          t.notOk(isLink(nodePath.join(root, p)), `remove ${p}: the link is gone`)
          t.notOk(fs.existsSync(nodePath.join(root, p)), `remove ${p}: nothing is left at its name`)
          untouched(`remove ${p} (→ ${target})`)
        }
      })

      t.test('rename moves the link itself, which stays refused', async (t) => {
        for (const [p] of sc.links(w)) {
          plant()
          await d.rename!(ctx(), p, '/moved-link', { overwrite: false })
          t.ok(isLink(nodePath.join(root, 'moved-link')), `rename ${p}: the link was moved`)
          let err: unknown = null
          try {
            await drain(d.read(ctx(), '/moved-link'))
          } catch (e) {
            err = e
          }
          // A relative link means something else once moved, perhaps nothing at all.
          if (err === null) t.fail(`read of the moved ${p} succeeded`)
          else checkRefusal(t, `read of the moved ${p}`, err, ['EACCES', 'ENOENT'], w, '/moved-link')
          untouched(`rename ${p}`)
        }
      })
    })
  }
})

for (const pinning of PINNINGS) t.test(`links that stay inside the root keep working (${pinning} pinning)`, async (t) => {
  const outside = t.testdir(OUTSIDE_TREE)
  t.test('inside', async (t) => {
    const root = t.testdir({})
    resetRoot(root)
    const links: [string, string][] = [
      ['/in-file', 'victim.txt'],
      ['/in-abs', nodePath.join(root, 'victim.txt')],
      ['/in-dir', 'docs'],
      ['/in-chain', 'in-file'],
      ['/sub/up', '../victim.txt'],
      ['/sub/self', '..'],
      ['/dot', '.'],
      // Climbs out and comes back in by name: still inside.
      ['/round-trip', `../${nodePath.basename(root)}/victim.txt`],
    ]
    for (const [p, target] of links) fs.symlinkSync(target, nodePath.join(root, p))
    const before = snapshot(outside)
    const d = await createLocalDriver({ root, pinning })

    for (const p of ['/in-file', '/in-abs', '/in-chain', '/sub/up', '/round-trip', '/sub/self/victim.txt', '/dot/victim.txt']) {
      t.match(await d.stat(ctx(), p), { kind: 'file', size: 6, name: nodePath.posix.basename(p), path: p }, `stat ${p}`)
      t.equal(Buffer.concat(await drain(d.read(ctx(), p))).toString(), 'victim', `read ${p}`)
      t.equal(Buffer.concat(await drain(d.read(ctx(), p, { start: 1, end: 3 }))).toString(), 'ict', `read a range of ${p}`)
    }
    for (const p of ['/in-dir', '/sub/self', '/dot']) t.match(await d.stat(ctx(), p), { kind: 'dir', path: p }, `stat ${p}`)
    t.same(await listNames(d, '/in-dir'), ['readme.txt'], 'list through a folder link')
    t.same(await listNames(d, '/dot/docs'), ['readme.txt'], 'list through a link to the root')
    t.same(
      await listNames(d, '/'),
      ['a', 'deep', 'docs', 'dot', 'in-abs', 'in-chain', 'in-dir', 'in-file', 'round-trip', 'sub', 'victim.txt'],
      'inside links are listed',
    )
    t.same(await listNames(d, '/sub'), ['self', 'up'])
    t.match(
      (await drain(d.list(ctx(), '/'))).flat().find((e) => e.name === 'in-dir'),
      { kind: 'dir', path: '/in-dir' },
      'a link to a folder is listed as a folder',
    )

    await d.write(ctx(), '/in-dir/new.txt', body('new'))
    t.equal(fs.readFileSync(nodePath.join(root, 'docs', 'new.txt'), 'utf8'), 'new', 'write through a folder link lands in its target')
    const staged = `${root}-staged`
    fs.writeFileSync(staged, 'adopted', { mode: 0o600 })
    t.teardown(() => fs.rmSync(staged, { force: true }))
    t.match(await d.adopt!(ctx(), '/in-dir/adopted.txt', staged, { overwrite: false }), { kind: 'file', size: 7, path: '/in-dir/adopted.txt' })
    t.equal(fs.readFileSync(nodePath.join(root, 'docs', 'adopted.txt'), 'utf8'), 'adopted', 'adopt through a folder link lands in its target')
    t.equal(fs.statSync(nodePath.join(root, 'docs', 'adopted.txt')).mode & 0o777, 0o644 & ~process.umask(), "with write's mode")
    t.ok(fs.existsSync(staged), 'the adopted file keeps its own name')
    await t.rejects(d.adopt!(ctx(), '/in-dir/adopted.txt', staged, { overwrite: false }), { code: 'EEXIST' }, 'no overwrite: EEXIST')
    await d.remove(ctx(), '/in-dir/adopted.txt')
    await d.mkdir(ctx(), '/in-dir/made')
    t.ok(fs.statSync(nodePath.join(root, 'docs', 'made')).isDirectory(), 'mkdir through a folder link')
    await d.rename!(ctx(), '/in-dir/new.txt', '/sub/self/docs/made/new.txt', { overwrite: false })
    t.ok(fs.existsSync(nodePath.join(root, 'docs', 'made', 'new.txt')), 'rename through links')
    await d.setMtime!(ctx(), '/in-file', 1_000_000_000_000)
    t.equal(fs.statSync(nodePath.join(root, 'victim.txt')).mtimeMs, 1_000_000_000_000, 'setMtime through a link')
    await d.remove(ctx(), '/in-dir/made/new.txt')
    t.notOk(fs.existsSync(nodePath.join(root, 'docs', 'made', 'new.txt')), 'remove through a folder link')
    await d.remove(ctx(), '/in-file')
    t.ok(fs.existsSync(nodePath.join(root, 'victim.txt')), 'removing a link keeps its target')
    t.strictSame(snapshot(outside), before, 'the outside tree is unchanged')
  })
})

for (const pinning of PINNINGS) t.test(`the root itself may be a symlink (${pinning} pinning)`, async (t) => {
  const dir = t.testdir({
    real: { 'a.txt': 'A', d: { 'b.txt': 'B' } },
    'real-sibling': { 'secret.txt': 'SECRET' },
    'root-link': t.fixture('symlink', 'real'),
  })
  const real = nodePath.join(dir, 'real')
  const rootLink = nodePath.join(dir, 'root-link')
  fs.symlinkSync(nodePath.join(rootLink, 'a.txt'), nodePath.join(real, 'via-root-link'))
  fs.symlinkSync(rootLink, nodePath.join(real, 'to-root-link'))
  fs.symlinkSync(nodePath.join(dir, 'real-sibling'), nodePath.join(real, 'evil'))
  fs.symlinkSync(dir, nodePath.join(real, 'evil-parent'))

  for (const root of [rootLink, `${rootLink}/`]) {
    t.test(JSON.stringify(nodePath.relative(dir, root) + (root.endsWith('/') ? '/' : '')), async (t) => {
      const d = await createLocalDriver({ root, pinning })
      t.match(await d.stat(ctx(), '/'), { kind: 'dir', path: '/' }, 'stat /')
      t.same(await listNames(d, '/'), ['a.txt', 'd', 'to-root-link', 'via-root-link'], 'list / (outside links left out)')
      t.equal(Buffer.concat(await drain(d.read(ctx(), '/a.txt'))).toString(), 'A', 'read')
      t.equal(Buffer.concat(await drain(d.read(ctx(), '/via-root-link'))).toString(), 'A', 'a link through the root link is inside')
      t.same(await listNames(d, '/to-root-link/d'), ['b.txt'], 'a link to the root link is the root')
      await d.write(ctx(), '/d/new.txt', body('new'))
      t.equal(fs.readFileSync(nodePath.join(real, 'd', 'new.txt'), 'utf8'), 'new', 'write lands in the real folder')
      await d.mkdir(ctx(), '/m')
      t.ok(fs.statSync(nodePath.join(real, 'm')).isDirectory(), 'mkdir')
      await d.rename!(ctx(), '/d/new.txt', '/m/new.txt', { overwrite: false })
      await d.remove(ctx(), '/m/new.txt')
      await d.remove(ctx(), '/m')
      t.notOk(fs.existsSync(nodePath.join(real, 'm')), 'rename and remove')
      for (const p of ['/evil', '/evil/secret.txt', '/evil-parent', '/evil-parent/real-sibling/secret.txt']) {
        let err: unknown = null
        try {
          await d.stat(ctx(), p)
        } catch (e) {
          err = e
        }
        t.match(err, { code: 'EACCES' }, `stat ${p} is refused`)
      }
      t.equal(fs.readFileSync(nodePath.join(dir, 'real-sibling', 'secret.txt'), 'utf8'), 'SECRET')
    })
  }
})

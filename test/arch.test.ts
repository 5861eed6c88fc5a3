/**
 * The dependency rule (docs/architecture.md), enforced:
 *
 *   core/      imports nothing of ours outside core/ (Node built-ins and npm packages, not uWS)
 *   workers/   core/ and workers/
 *   gateways/  core/ and its own gateway folder; never front/, workers/ or uWebSockets.js,
 *              but the connection layer (gateways/connection/: the per-user view every door
 *              uses, over the pool) also imports workers/pool.ts and workers/client.ts
 *   front/     core/, gateways/, front/, and of workers/ only pool.ts and client.ts
 *   bench/, test/ may import anything (not scanned)
 *
 * and uWebSockets.js is imported by one file only, front/http/uws.ts (or by none
 * while that file does not exist). Three more rules, each below with its self-check:
 * the thread rule (the main thread's modules and the pool threads' never reach each
 * other), a gateway is imported by its index only, and no import cycles in core/.
 *
 * Specifiers are read with the TypeScript parser (already a dev dependency for the
 * build), so comments and strings never count and every form is seen: `import`,
 * `import type`, `export … from`, side-effect imports, `import x = require()`,
 * `import('…')` calls and `import('…').T` types, `require()`. A dynamic import whose
 * argument is not a literal cannot be checked and is itself a violation.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import * as nodePath from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const REPO = nodePath.resolve(nodePath.dirname(fileURLToPath(import.meta.url)), '..')
const SOURCE_DIRS = ['core', 'workers', 'gateways', 'front'] as const
type Layer = (typeof SOURCE_DIRS)[number]
const UWS_ADAPTER = 'front/http/uws.ts'
/**
 * The one computed import allowed: core/plugin.ts imports a third-party plugin's module
 * from the absolute path the configuration gives (docs/plugins.md). That module lies
 * outside the repository by definition: there is no edge of ours to check.
 */
const PLUGIN_LOADER = 'core/plugin.ts'
const SOURCE_EXT = /\.(?:[cm]?ts|tsx|[cm]?js)$/

/** Names under which uWebSockets.js can be imported: its alias and the aliased package. */
const UWS_NAMES: ReadonlySet<string> = (() => {
  const pkg = JSON.parse(readFileSync(nodePath.join(REPO, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>
  }
  const names = new Set(['uWebSockets.js'])
  const spec = pkg.dependencies?.['uWebSockets.js'] ?? ''
  const alias = /^npm:((?:@[^/@]+\/)?[^@]+)@/.exec(spec)
  if (alias?.[1]) names.add(alias[1])
  return names
})()

const OWN_PACKAGE = (JSON.parse(readFileSync(nodePath.join(REPO, 'package.json'), 'utf8')) as { name: string }).name

// Scanner ----------------------------------------------------------------------

interface Found {
  /** The specifier as written, or null when it is not a literal. */
  readonly spec: string | null
  readonly line: number
}

/** Every module specifier in a TypeScript/JavaScript source text. */
function scanSpecifiers(text: string, fileName = 'x.ts'): Found[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const out: Found[] = []
  const at = (n: ts.Node): number => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1
  const literal = (n: ts.Node | undefined): string | null =>
    n !== undefined && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : null
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier) {
      out.push({ spec: literal(n.moduleSpecifier), line: at(n) })
    } else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference)) {
      out.push({ spec: literal(n.moduleReference.expression), line: at(n) })
    } else if (ts.isImportTypeNode(n)) {
      const arg = n.argument
      out.push({ spec: ts.isLiteralTypeNode(arg) ? literal(arg.literal) : null, line: at(n) })
    } else if (ts.isCallExpression(n)) {
      const callee = n.expression
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require'
      if (isImport || isRequire) out.push({ spec: literal(n.arguments[0]), line: at(n) })
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  for (const ref of sf.referencedFiles) out.push({ spec: ref.fileName, line: sf.getLineAndCharacterOfPosition(ref.pos).line + 1 })
  return out
}

// Classification -----------------------------------------------------------------

type Target =
  | { readonly kind: 'ours'; readonly file: string } // repo-relative, extension mapped to the .ts source
  | { readonly kind: 'builtin' }
  | { readonly kind: 'package'; readonly name: string }
  | { readonly kind: 'unknown'; readonly why: string }

const BUILTINS: ReadonlySet<string> = new Set(builtinModules)

/** What a specifier written in `fromFile` (repo-relative) refers to. */
function classify(fromFile: string, spec: string): Target {
  if (spec.startsWith('.') || spec.startsWith('/')) {
    const abs = nodePath.resolve(REPO, nodePath.dirname(fromFile), spec)
    const rel = nodePath.relative(REPO, abs).split(nodePath.sep).join('/')
    if (rel.startsWith('../') || rel === '..' || nodePath.isAbsolute(rel)) return { kind: 'unknown', why: 'outside the repository' }
    return { kind: 'ours', file: rel.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts').replace(/\.cjs$/, '.cts') }
  }
  if (spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0]!)) return { kind: 'builtin' }
  if (spec.startsWith('#')) return { kind: 'unknown', why: 'subpath imports (#…) are not used here; write a relative path' }
  const parts = spec.split('/')
  const name = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
  if (name === OWN_PACKAGE) return { kind: 'unknown', why: 'self-reference by package name' }
  return { kind: 'package', name }
}

const layerOf = (file: string): string => file.split('/')[0]!

/** The rule: null when `fromFile` may import `target`, else why not. */
function violation(fromFile: string, target: Target): string | null {
  if (target.kind === 'unknown') return target.why
  if (target.kind === 'builtin') return null
  if (target.kind === 'package') {
    if (UWS_NAMES.has(target.name)) return fromFile === UWS_ADAPTER ? null : `only ${UWS_ADAPTER} may import uWebSockets.js`
    return null
  }
  const from = layerOf(fromFile) as Layer
  const to = target.file
  const toLayer = layerOf(to)
  switch (from) {
    case 'core':
      return toLayer === 'core' ? null : 'core/ imports nothing of ours outside core/'
    case 'workers':
      return toLayer === 'core' || toLayer === 'workers' ? null : 'workers/ imports only core/ and workers/'
    case 'gateways': {
      if (toLayer === 'core') return null
      const segs = fromFile.split('/')
      // gateways/<name>/...: its own folder. A file directly in gateways/ has no folder of its own.
      const own = segs.length > 2 ? `gateways/${segs[1]}/` : null
      if (own !== null && to.startsWith(own)) return null
      if (own === 'gateways/connection/' && (to === 'workers/pool.ts' || to === 'workers/client.ts')) return null
      return `gateways/ imports only core/ and its own folder (${own ?? 'none'})`
    }
    case 'front':
      if (toLayer === 'core' || toLayer === 'gateways' || toLayer === 'front') return null
      if (to === 'workers/pool.ts' || to === 'workers/client.ts') return null
      return 'front/ imports core/, gateways/, front/ and only workers/pool.ts and workers/client.ts'
    default:
      return `no rule for ${fromFile}`
  }
}

// The tree -----------------------------------------------------------------------

function walk(dir: string): string[] {
  const abs = nodePath.join(REPO, dir)
  const out: string[] = []
  for (const d of readdirSync(abs, { withFileTypes: true })) {
    const rel = `${dir}/${d.name}`
    if (d.isDirectory()) {
      if (d.name !== 'node_modules') out.push(...walk(rel))
    } else if (d.isFile() && SOURCE_EXT.test(d.name)) {
      out.push(rel)
    }
  }
  return out.sort()
}

interface Edge {
  readonly from: string
  readonly spec: string | null
  readonly line: number
  readonly target: Target | null
}

function scanTree(): { files: string[]; edges: Edge[] } {
  const files = SOURCE_DIRS.flatMap(walk)
  const edges: Edge[] = []
  for (const from of files) {
    for (const f of scanSpecifiers(readFileSync(nodePath.join(REPO, from), 'utf8'), from)) {
      edges.push({ from, spec: f.spec, line: f.line, target: f.spec === null ? null : classify(from, f.spec) })
    }
  }
  return { files, edges }
}

// Tests --------------------------------------------------------------------------

t.test('the top-level folders exist', async (t) => {
  for (const dir of ['core', 'workers', 'front', 'gateways', 'bench', 'test']) {
    let isDir = false
    try {
      isDir = statSync(nodePath.join(REPO, dir)).isDirectory()
    } catch {}
    t.ok(isDir, `${dir}/ is a folder`)
  }
})

t.test('self-check: the scanner sees every import form, and nothing else', async (t) => {
  const src = `
    // import fake1 from 'comment-line'
    /* export * from 'comment-block' */
    /** @see import('comment-doc') */
    import a from 'static-default'
    import {
      b,
      c as d,
    } from "static-multiline"
    import * as ns from 'static-namespace'
    import type { T } from 'type-only'
    import { type U, v } from 'inline-type'
    import 'side-effect'
    export { e } from 'export-named'
    export * from 'export-star'
    export * as ns2 from 'export-star-as'
    export type { W } from 'export-type'
    import eq = require('import-equals')
    const s = "import nope from 'in-a-string'"
    const tpl = \`export * from 'in-a-template'\`
    const lazy = () => import('dynamic')
    const lazy2 = await import(\`dynamic-template\`)
    let x: typeof import('import-type-typeof')
    let y: import('import-type-member').Z
    const r = require('required')
    const kind = 'x'
    const bad = import('./drivers/' + kind + '.js')
    const bad2 = import(\`./drivers/\${kind}.js\`)
  `
  const found = scanSpecifiers(src)
  t.strictSame(
    found.map((f) => f.spec),
    [
      'static-default',
      'static-multiline',
      'static-namespace',
      'type-only',
      'inline-type',
      'side-effect',
      'export-named',
      'export-star',
      'export-star-as',
      'export-type',
      'import-equals',
      'dynamic',
      'dynamic-template',
      'import-type-typeof',
      'import-type-member',
      'required',
      null,
      null,
    ],
  )
  t.equal(found[1]!.line, 6, 'line numbers point at the statement')
})

t.test('self-check: the rule catches forbidden edges', async (t) => {
  const cases: [from: string, spec: string, allowed: boolean][] = [
    ['core/a.ts', './errors.js', true],
    ['core/a.ts', 'node:fs', true],
    ['core/a.ts', 'fs/promises', true],
    ['core/a.ts', 'msgpackr', true],
    ['core/a.ts', '@scope/pkg/sub', true],
    ['core/a.ts', '../workers/pool.js', false],
    ['core/a.ts', '../front/main.js', false],
    ['core/a.ts', '../test/helpers.js', false],
    ['core/a.ts', '../../etc/passwd', false],
    ['core/a.ts', 'uWebSockets.js', false],
    ['core/a.ts', '#core/x', false],
    ['core/a.ts', 'filegate/core/x', false],
    ['workers/a.ts', '../core/errors.js', true],
    ['workers/drivers/b.ts', '../../core/driver.js', true],
    ['workers/drivers/b.ts', '../ops.js', true],
    ['workers/a.ts', '../front/server.js', false],
    ['workers/a.ts', '../gateways/s3/handler.js', false],
    ['workers/a.ts', 'uWebSockets.js', false],
    ['gateways/s3/handler.ts', '../../core/http.js', true],
    ['gateways/s3/handler.ts', './xml.js', true],
    ['gateways/s3/handler.ts', '../s3/sigv4.js', true],
    ['gateways/s3/handler.ts', '../sftp/status.js', false],
    ['gateways/s3/handler.ts', '../../front/server.js', false],
    ['gateways/s3/handler.ts', '../../workers/pool.js', false],
    ['gateways/s3/handler.ts', '../../workers/client.js', false],
    ['gateways/s3/handler.ts', 'uWebSockets.js', false],
    ['gateways/index.ts', './s3/handler.js', false],
    ['front/main.ts', './server.js', true],
    ['front/main.ts', '../core/config.js', true],
    ['front/main.ts', '../gateways/s3/handler.js', true],
    ['front/main.ts', '../workers/pool.js', true],
    ['front/routes/files.ts', '../../workers/client.js', true],
    ['front/main.ts', '../workers/entry.js', false],
    ['front/main.ts', '../workers/drivers/local.js', false],
    ['front/main.ts', '../workers/pool-helpers.js', false],
    ['front/main.ts', '../bench/server.js', false],
    ['front/main.ts', 'uWebSockets.js', false],
    ['front/http/uws.ts', 'uWebSockets.js', true],
    ['front/server.ts', '@based/uws', false],
  ]
  for (const [from, spec, allowed] of cases) {
    const why = violation(from, classify(from, spec))
    t.equal(why === null, allowed, `${from} → ${spec}: ${allowed ? 'allowed' : 'forbidden'}${why ? ` (${why})` : ''}`)
  }
})

t.test('the dependency rule holds', async (t) => {
  const { files, edges } = scanTree()
  t.ok(files.some((f) => f.startsWith('core/')) && files.some((f) => f.startsWith('workers/')), 'source files were found')

  // Not vacuous: a known edge is seen and resolved.
  t.ok(
    edges.some((e) => e.from === 'core/port-stream.ts' && e.spec === './errors.js' && e.target?.kind === 'ours' && e.target.file === 'core/errors.ts'),
    'finds core/port-stream.ts → ./errors.js (core/errors.ts)',
  )
  t.ok(edges.filter((e) => e.target?.kind === 'ours').length >= files.length / 2, `found ${edges.length} imports in ${files.length} files`)

  const computed = edges.filter((e) => e.target === null && e.from === PLUGIN_LOADER)
  t.ok(computed.length <= 1, `${PLUGIN_LOADER} has at most one computed import (the third-party plugin loader)`)
  const broken: string[] = []
  for (const e of edges) {
    if (computed.includes(e)) continue
    const why = e.target === null ? 'a dynamic import whose argument is not a literal cannot be checked' : violation(e.from, e.target)
    if (why !== null) broken.push(`${e.from}:${e.line} imports ${e.spec === null ? 'a computed specifier' : JSON.stringify(e.spec)}: ${why}`)
  }
  t.strictSame(broken, [], 'no forbidden import')
})

t.test('uWebSockets.js is imported by front/http/uws.ts only', async (t) => {
  const { files, edges } = scanTree()
  const importers = [
    ...new Set(edges.filter((e) => e.target?.kind === 'package' && UWS_NAMES.has(e.target.name)).map((e) => e.from)),
  ]
  if (files.includes(UWS_ADAPTER)) {
    t.strictSame(importers, [UWS_ADAPTER], `exactly one importer: ${UWS_ADAPTER}`)
  } else {
    t.strictSame(importers, [], `${UWS_ADAPTER} does not exist yet, so nothing imports uWebSockets.js`)
  }
})

// The thread rule ------------------------------------------------------------------
//
// The service runs on three kinds of thread. The main thread starts at front/main.ts and
// holds the HTTP front, the gateways and the pool's client side (workers/pool.ts,
// workers/client.ts, workers/staged-client.ts); a pool thread starts at workers/entry.ts and holds the drivers,
// the ops, the transfers, zip and the plugins' worker halves; an SSH thread starts at
// gateways/sftp/ssh-thread/entry.ts and holds SSH connections (ssh2, the SFTP door's
// connection code) whose sockets the main thread relays. core/ is shared; the SFTP door's
// connection code (gateways/sftp/, but for its listener and what starts the SSH threads)
// is shared by the main thread (connections served there) and the SSH threads. A module
// of one side reached from another's entry would load its code in the wrong thread:
// every import counts, type imports too, so a type that both sides need lives in core/
// (or, for the SSH threads' messages, in the door's shared part).

const MAIN_ENTRY = 'front/main.ts'
const WORKER_ENTRY = 'workers/entry.ts'
const SSH_ENTRY = 'gateways/sftp/ssh-thread/entry.ts'
const MAIN_SIDE_WORKERS: ReadonlySet<string> = new Set(['workers/pool.ts', 'workers/client.ts', 'workers/staged-client.ts'])
/** The SFTP door's files that only the main thread runs: its face, its listener, what starts and serves the SSH threads. */
const MAIN_SIDE_SFTP: ReadonlySet<string> = new Set(['gateways/sftp/index.ts', 'gateways/sftp/server.ts', 'gateways/sftp/ssh-threads.ts', 'gateways/sftp/hostkey.ts', 'gateways/sftp/proxy-header.ts', 'gateways/sftp/startups.ts'])

type Side = 'main' | 'worker' | 'ssh' | 'sftp' | 'shared'

/** Which thread a file belongs to, by where it lies ('sftp': the main thread and the SSH threads alike). */
function sideOf(file: string): Side {
  const layer = layerOf(file)
  if (layer === 'core') return 'shared'
  if (layer === 'workers') return MAIN_SIDE_WORKERS.has(file) ? 'main' : 'worker'
  if (file.startsWith('gateways/sftp/ssh-thread/')) return 'ssh'
  if (file.startsWith('gateways/sftp/')) return MAIN_SIDE_SFTP.has(file) ? 'main' : 'sftp'
  return 'main' // front/ and the other gateways/
}

/** The sides each entry may reach. */
const REACHES: Readonly<Record<'main' | 'worker' | 'ssh', readonly Side[]>> = {
  main: ['main', 'sftp', 'shared'],
  worker: ['worker', 'shared'],
  ssh: ['ssh', 'sftp', 'shared'],
}

/** Our files each file imports (any form, types included). */
function ownGraph(edges: readonly Edge[]): Map<string, string[]> {
  const g = new Map<string, string[]>()
  for (const e of edges) {
    if (e.target?.kind !== 'ours') continue
    const list = g.get(e.from) ?? []
    list.push(e.target.file)
    g.set(e.from, list)
  }
  return g
}

/** Every file reachable from `entry`, each with the chain of imports that reaches it. */
function reach(graph: ReadonlyMap<string, readonly string[]>, entry: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[entry, [entry]]])
  const queue = [entry]
  while (queue.length > 0) {
    const at = queue.shift()!
    for (const to of graph.get(at) ?? []) {
      if (chains.has(to)) continue
      chains.set(to, [...chains.get(at)!, to])
      queue.push(to)
    }
  }
  return chains
}

/** Files of one side that another side's entry reaches, each with its chain. */
function threadCrossings(graph: ReadonlyMap<string, readonly string[]>, mainEntry: string, workerEntry: string, sshEntry?: string): string[] {
  const out: string[] = []
  const entries: [string, 'main' | 'worker' | 'ssh'][] = [[mainEntry, 'main'], [workerEntry, 'worker'], ...(sshEntry ? [[sshEntry, 'ssh'] as [string, 'ssh']] : [])]
  for (const [entry, own] of entries) {
    for (const [file, chain] of reach(graph, entry)) {
      const side = sideOf(file)
      if (!REACHES[own].includes(side)) out.push(`the ${own} thread (${entry}) reaches ${side}-side ${file}: ${chain.join(' → ')}`)
    }
  }
  return out
}

t.test('self-check: the thread rule catches crossings both ways', async (t) => {
  const g = (pairs: [string, string][]): Map<string, string[]> => {
    const m = new Map<string, string[]>()
    for (const [a, b] of pairs) m.set(a, [...(m.get(a) ?? []), b])
    return m
  }
  const clean = g([
    ['front/main.ts', 'front/app.ts'],
    ['front/app.ts', 'workers/pool.ts'],
    ['front/app.ts', 'gateways/sftp/index.ts'],
    ['workers/pool.ts', 'core/messages.ts'],
    ['workers/entry.ts', 'workers/ops.ts'],
    ['workers/ops.ts', 'core/messages.ts'],
  ])
  t.strictSame(threadCrossings(clean, 'front/main.ts', 'workers/entry.ts'), [], 'both sides meeting in core/ is fine')
  const mainToWorker = g([...[...clean].flatMap(([a, bs]) => bs.map((b) => [a, b] as [string, string])), ['workers/pool.ts', 'workers/drivers/upload-names.ts']])
  t.match(threadCrossings(mainToWorker, 'front/main.ts', 'workers/entry.ts'), [/main thread .* reaches worker-side workers\/drivers\/upload-names\.ts: front\/main\.ts → front\/app\.ts → workers\/pool\.ts → workers\/drivers\/upload-names\.ts/])
  const workerToMain = g([['workers/entry.ts', 'workers/ops.ts'], ['workers/ops.ts', 'workers/client.ts']])
  t.match(threadCrossings(workerToMain, 'front/main.ts', 'workers/entry.ts'), [/worker thread .* reaches main-side workers\/client\.ts/])
  const workerToGateway = g([['workers/entry.ts', 'gateways/s3/xml.ts']])
  t.equal(threadCrossings(workerToGateway, 'front/main.ts', 'workers/entry.ts').length, 1, 'a worker reaching gateways/ crosses')
  const viaCore = g([['workers/entry.ts', 'core/a.ts'], ['core/a.ts', 'front/x.ts']])
  t.equal(threadCrossings(viaCore, 'front/main.ts', 'workers/entry.ts').length, 1, 'a path through core/ still counts')
  const ssh = 'gateways/sftp/ssh-thread/entry.ts'
  const sshClean = g([
    ['front/main.ts', 'gateways/sftp/index.ts'],
    ['gateways/sftp/index.ts', 'gateways/sftp/server.ts'],
    ['gateways/sftp/server.ts', 'gateways/sftp/connection.ts'],
    [ssh, 'gateways/sftp/connection.ts'],
    [ssh, 'gateways/sftp/ssh-thread/remote.ts'],
    ['gateways/sftp/connection.ts', 'core/view.ts'],
  ])
  t.strictSame(threadCrossings(sshClean, 'front/main.ts', 'workers/entry.ts', ssh), [], "the SFTP door's connection code is run by both the main thread and the SSH threads")
  t.equal(threadCrossings(g([[ssh, 'gateways/sftp/server.ts']]), 'front/main.ts', 'workers/entry.ts', ssh).length, 1, "an SSH thread reaching the door's listener crosses")
  t.equal(threadCrossings(g([[ssh, 'gateways/connection/view.ts']]), 'front/main.ts', 'workers/entry.ts', ssh).length, 1, 'an SSH thread reaching the connection layer crosses')
  t.equal(threadCrossings(g([['front/main.ts', 'gateways/sftp/ssh-thread/remote.ts']]), 'front/main.ts', 'workers/entry.ts', ssh).length, 1, "the main thread reaching an SSH thread's module crosses")
})

t.test('the thread rule holds: main-thread modules, worker-only modules and SSH-thread modules never import each other', async (t) => {
  const { files, edges } = scanTree()
  const graph = ownGraph(edges)
  t.ok(files.includes(MAIN_ENTRY) && files.includes(WORKER_ENTRY) && files.includes(SSH_ENTRY), 'the three entry points exist')
  const main = reach(graph, MAIN_ENTRY)
  const worker = reach(graph, WORKER_ENTRY)
  // Not vacuous: each side reaches what it must.
  for (const f of ['workers/pool.ts', 'workers/client.ts', 'gateways/sftp/index.ts', 'gateways/s3/index.ts', 'gateways/mcp/index.ts']) {
    t.ok(main.has(f), `${MAIN_ENTRY} reaches ${f}`)
  }
  for (const f of ['workers/ops.ts', 'workers/transfers.ts', 'workers/zip.ts', 'workers/plugins.ts', 'workers/drivers/local.ts']) {
    t.ok(worker.has(f), `${WORKER_ENTRY} reaches ${f}`)
  }
  const ssh = reach(graph, SSH_ENTRY)
  for (const f of ['gateways/sftp/connection.ts', 'gateways/sftp/session.ts', 'gateways/sftp/wire/server.ts']) t.ok(ssh.has(f), `${SSH_ENTRY} reaches ${f}`)
  t.strictSame(threadCrossings(graph, MAIN_ENTRY, WORKER_ENTRY, SSH_ENTRY), [], 'no crossing')
})

// A gateway is imported by its index only -------------------------------------------
//
// Each folder under gateways/ (a door: sftp, s3, mcp; and the connection layer below
// them, gateways/connection/) shows the rest of the service one file, its index.ts:
// what it offers is listed there, and its other files can change without reaching past
// the folder.

/** Null when `fromFile` may import `to` (repo-relative, ours) under the index rule, else why not. */
function indexViolation(fromFile: string, to: string): string | null {
  const segs = to.split('/')
  if (segs[0] !== 'gateways' || segs.length < 3) return null
  const folder = `gateways/${segs[1]}/`
  if (fromFile.startsWith(folder)) return null
  return to === `${folder}index.ts` ? null : `outside ${folder} only ${folder}index.ts may be imported`
}

t.test('self-check: the index rule catches reaching into a gateway', async (t) => {
  const cases: [from: string, to: string, allowed: boolean][] = [
    ['front/app.ts', 'gateways/sftp/index.ts', true],
    ['front/app.ts', 'gateways/sftp/session.ts', false],
    ['front/routes/files.ts', 'gateways/connection/view.ts', false],
    ['front/routes/files.ts', 'gateways/connection/index.ts', true],
    ['front/app.ts', 'gateways/s3/multipart/index.ts', false],
    ['gateways/s3/handler.ts', 'gateways/s3/multipart/route.ts', true],
    ['gateways/s3/multipart/route.ts', 'gateways/s3/xml.ts', true],
    ['gateways/sftp/session.ts', 'gateways/mcp/tools.ts', false],
    ['front/app.ts', 'core/view.ts', true],
  ]
  for (const [from, to, allowed] of cases) {
    const why = indexViolation(from, to)
    t.equal(why === null, allowed, `${from} → ${to}: ${allowed ? 'allowed' : 'forbidden'}${why ? ` (${why})` : ''}`)
  }
})

t.test('a gateway is imported by its index only', async (t) => {
  const { edges } = scanTree()
  const intoGateways = edges.filter((e) => e.target?.kind === 'ours' && e.target.file.startsWith('gateways/') && !e.from.startsWith('gateways/'))
  t.ok(intoGateways.length >= 3, `front/ imports the gateways (${intoGateways.length} imports)`)
  const broken: string[] = []
  for (const e of edges) {
    if (e.target?.kind !== 'ours') continue
    const why = indexViolation(e.from, e.target.file)
    if (why !== null) broken.push(`${e.from}:${e.line} imports ${JSON.stringify(e.spec)}: ${why}`)
  }
  t.strictSame(broken, [], 'every import into a gateway goes through its index')
})

// No cycles in core ----------------------------------------------------------------
//
// core/ is what everything stands on; its files import each other in one direction, so
// each can be read knowing only what it imports. Type imports count: a cycle of types
// is still two files that cannot be understood apart.

/** The import cycles (strongly connected components of more than one file, or a file importing itself). */
function cycles(graph: ReadonlyMap<string, readonly string[]>, within: (f: string) => boolean): string[][] {
  let index = 0
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const on = new Set<string>()
  const out: string[][] = []
  const connect = (v: string): void => {
    idx.set(v, index)
    low.set(v, index)
    index++
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!within(w)) continue
      if (!idx.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v)!, idx.get(w)!))
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        scc.push(w)
      } while (w !== v)
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort())
    }
  }
  for (const v of [...graph.keys()].filter(within).sort()) if (!idx.has(v)) connect(v)
  return out
}

t.test('self-check: the cycle finder', async (t) => {
  const inCore = (f: string): boolean => f.startsWith('core/')
  const g = new Map<string, string[]>([
    ['core/a.ts', ['core/b.ts']],
    ['core/b.ts', ['core/c.ts']],
    ['core/c.ts', ['core/a.ts', 'core/d.ts']],
    ['core/d.ts', []],
    ['core/e.ts', ['core/e.ts']],
    ['core/f.ts', ['workers/x.ts']],
    ['workers/x.ts', ['core/f.ts']],
  ])
  t.strictSame(cycles(g, inCore), [['core/a.ts', 'core/b.ts', 'core/c.ts'], ['core/e.ts']], 'finds a three-file cycle and a self-import, not one through another layer')
  t.strictSame(cycles(new Map([['core/a.ts', ['core/b.ts']], ['core/b.ts', []]]), inCore), [], 'a chain is no cycle')
})

t.test('no import cycles in core/, type imports included', async (t) => {
  const { edges } = scanTree()
  const graph = ownGraph(edges)
  t.ok([...graph.keys()].filter((f) => f.startsWith('core/')).length >= 10, 'core/ files import each other')
  t.strictSame(cycles(graph, (f) => f.startsWith('core/')), [], 'no cycle')
})

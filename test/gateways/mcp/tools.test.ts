/**
 * The MCP tools and resources, through the SDK's client over both transports, on a tmp
 * space and on a local folder: what each does, their errors (the HTTP API's messages),
 * and confinement: `..`, absolute and percent-encoded paths, and (local folders)
 * symbolic links planted in the root that lead outside, also swapped in between calls.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { startTestServer, tmpSession } from '../../helpers/filegate.js'
import { type Connected, KINDS, connect, textOf } from './client.js'

type Backend = 'tmp' | 'local'

async function setup(t: Test, backend: Backend) {
  const disk = t.testdir({ root: {}, data: {}, outside: { 'secret.txt': 'the secret' } })
  const root = join(disk, 'root')
  const dataDir = join(disk, 'data')
  const { url } = await startTestServer(t, { data_dir: dataDir, ...(backend === 'local' ? { connections: [{ label: 'disk', type: 'local', path: root }] } : {}) })
  let token: string
  if (backend === 'local') {
    const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
    token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  } else token = await tmpSession(url)
  return { url, token, root: backend === 'local' ? root : join(dataDir, 'tmp', 'alice'), outside: join(disk, 'outside') }
}

/** `CODE: message` of an error result (and that it is one). */
async function failure(t: Test, mcp: Connected, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await mcp.call(name, args)
  t.equal(r.isError, true, `${name} ${JSON.stringify(args)} is an error`)
  return textOf(r)
}

for (const backend of ['tmp', 'local'] as const) {
  for (const kind of KINDS) {
    t.test(`${backend} over ${kind}: every tool`, async (t) => {
      const { url, token } = await setup(t, backend)
      const mcp = await connect(t, url, token, kind)

      t.equal(await mcp.text('mkdir', { path: '/a/b' }), 'made /a/b', 'parents made')
      t.equal(await failure(t, mcp, 'mkdir', { path: '/a/b' }), 'CONFLICT: /a/b already exists')
      t.equal(await mcp.text('write', { path: '/a/b/f.txt', content: 'hello\n' }), 'wrote 6 bytes to /a/b/f.txt')
      t.equal(await mcp.text('write', { path: 'rel/g.md', content: '# g' }), 'wrote 3 bytes to /rel/g.md', 'a relative path is taken from the root')
      // A file where a parent folder should be: refused, the file left as it is.
      t.match(await failure(t, mcp, 'write', { path: '/rel/g.md/h.txt', content: 'x' }), /^[A-Z_]+: .*g\.md/)
      t.match(await failure(t, mcp, 'mkdir', { path: '/rel/g.md/sub' }), /^[A-Z_]+: .*g\.md/)
      t.match(await failure(t, mcp, 'mkdir', { path: '/rel/g.md' }), /^INVALID_INPUT: \/rel\/g\.md is a file, not a folder$/)
      t.equal(await mcp.text('cat', { path: '/rel/g.md' }), '# g')
      t.equal(await mcp.text('cat', { path: '/a/b/f.txt' }), 'hello\n')
      const stat = await mcp.call('stat', { path: '/a/b/f.txt' })
      t.match(stat.structuredContent, { path: '/a/b/f.txt', name: 'f.txt', type: 'file', size: 6, mtime: /^\d{4}-\d\d-\d\dT/ })
      t.match((await mcp.call('stat', { path: '/a' })).structuredContent, { type: 'directory' })
      const ls = await mcp.call('ls', { path: '/a/b' })
      t.equal(textOf(ls), '[FILE] f.txt')
      t.match(ls.structuredContent, { path: '/a/b', entries: [{ name: 'f.txt', type: 'file', size: 6 }], truncated: false })

      // Replacing is whole and atomic; base64 in and out.
      await mcp.call('write', { path: '/a/b/f.txt', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' })
      t.match(await failure(t, mcp, 'cat', { path: '/a/b/f.txt' }), /^UNSUPPORTED_MEDIA: \/a\/b\/f\.txt is not UTF-8 text \(binary content\): read it with encoding "base64"$/)
      t.equal(await mcp.text('cat', { path: '/a/b/f.txt', encoding: 'base64' }), 'AAEC/w==')
      await mcp.call('write', { path: '/bad.txt', content: Buffer.from('ok \xff no', 'latin1').toString('base64'), encoding: 'base64' })
      t.match(await failure(t, mcp, 'cat', { path: '/bad.txt' }), /not UTF-8 text/, 'invalid UTF-8 is binary')
      t.match(await failure(t, mcp, 'write', { path: '/x', content: 'not base64!', encoding: 'base64' }), /^INVALID_INPUT: "content" is not base64/)

      // Parts: offset and length, a note saying where to go on, characters never cut.
      await mcp.call('write', { path: '/abc.txt', content: 'abcdéf' })
      const part = await mcp.call('cat', { path: '/abc.txt', offset: 2, length: 3 })
      t.equal(textOf(part), 'cd', 'the é cut in two is left for the next read')
      t.equal((part.content[1] as { text: string }).text, '[bytes 2 to 4 of 7: read on with offset 4]')
      t.match(part.structuredContent, { size: 7, offset: 2, bytes: 2, truncated: true })
      t.equal(await mcp.text('cat', { path: '/abc.txt', offset: 4 }), 'éf')
      t.equal(await mcp.text('cat', { path: '/abc.txt', offset: 99 }), '', 'past the end: nothing')
      const big = 'x'.repeat(1024 * 1024 + 10)
      await mcp.call('write', { path: '/big.txt', content: big })
      const capped = await mcp.call('cat', { path: '/big.txt' })
      t.equal(textOf(capped).length, 1024 * 1024, 'capped at 1 MiB')
      t.match((capped.content[1] as { text: string }).text, /read on with offset 1048576/)
      t.match(await failure(t, mcp, 'cat', { path: '/a' }), /^INVALID_INPUT: \/a is a directory: use ls/)

      t.equal(await mcp.text('touch', { path: '/t/new.txt' }), 'created /t/new.txt')
      t.equal(await mcp.text('touch', { path: '/abc.txt' }), '/abc.txt exists: left as it is')
      t.equal(await mcp.text('cat', { path: '/abc.txt' }), 'abcdéf', 'touch changed nothing')
      t.equal(await mcp.text('cat', { path: '/t/new.txt' }), '')
      t.match(await failure(t, mcp, 'touch', { path: '/a' }), /^INVALID_INPUT: /)

      t.equal(await mcp.text('mv', { from: '/abc.txt', to: '/c/d/abc.txt' }), 'moved /abc.txt to /c/d/abc.txt', 'parents of the target made')
      t.equal(await mcp.text('ls', { path: '/c/d' }), '[FILE] abc.txt')
      t.match(await failure(t, mcp, 'mv', { from: '/t/new.txt', to: '/c/d/abc.txt' }), /^CONFLICT: /)
      t.notOk((await mcp.call('mv', { from: '/t/new.txt', to: '/c/d/abc.txt', overwrite: true })).isError)
      t.equal(await mcp.text('cat', { path: '/c/d/abc.txt' }), '', 'replaced')
      t.match(await failure(t, mcp, 'mv', { from: '/nope', to: '/x' }), /^NOT_FOUND: /)
      t.match(await failure(t, mcp, 'mv', { from: '/', to: '/x' }), /^FORBIDDEN: the root cannot be moved/)
      t.match(await failure(t, mcp, 'mv', { from: '/c', to: '/c/d/e/f' }), /^INVALID_INPUT: \/c cannot be moved into itself/)
      t.equal(await mcp.text('ls', { path: '/c/d' }), '[FILE] abc.txt', 'a refused move made no folder')

      // find: names, bounded depth, invalid patterns.
      await mcp.call('write', { path: '/docs/one.md', content: '1' })
      await mcp.call('write', { path: '/docs/deep/er/two.md', content: '2' })
      await mcp.call('write', { path: '/docs/three.txt', content: '3' })
      const found = await mcp.call('find', { path: '/docs', pattern: '*.md' })
      t.equal(textOf(found), '/docs/one.md\n/docs/deep/er/two.md')
      t.match(found.structuredContent, { matches: [{ path: '/docs/one.md', name: 'one.md', type: 'file', size: 1 }, { path: '/docs/deep/er/two.md' }], truncated: false })
      t.equal(await mcp.text('find', { path: '/docs', pattern: 'd??p' }), '/docs/deep/')
      t.equal(await mcp.text('find', { path: '/', pattern: '[ot]*.[!t]*' }), '/docs/one.md\n/docs/deep/er/two.md')
      const shallow = await mcp.call('find', { path: '/docs', pattern: '*.md', max_depth: 2 })
      t.equal(textOf(shallow), '/docs/one.md\n(stopped at depth 2: there may be more)')
      t.match(shallow.structuredContent, { truncated: true, reason: 'stopped at depth 2' })
      t.equal(await mcp.text('find', { path: '/docs', pattern: 'zzz' }), '(nothing matches)')
      t.match(await failure(t, mcp, 'find', { path: '/docs', pattern: '[z-a]' }), /^INVALID_INPUT: "pattern" is not a valid name pattern/)

      // rm: files, empty folders, trees with recursive only, never the root.
      t.equal(await mcp.text('rm', { path: '/docs/three.txt' }), 'removed /docs/three.txt')
      t.match(await failure(t, mcp, 'rm', { path: '/docs' }), /^CONFLICT: \/docs is not empty: pass recursive: true/)
      const rm = await mcp.call('rm', { path: '/docs', recursive: true })
      t.equal(textOf(rm), 'removed /docs and everything in it')
      t.match(rm.structuredContent, { path: '/docs', type: 'directory' })
      t.equal(await mcp.text('rm', { path: '/t' }), 'removed /t', 'an empty folder')
      t.match(await failure(t, mcp, 'rm', { path: '/' }), /^FORBIDDEN: the root cannot be removed/)
      t.match(await failure(t, mcp, 'rm', { path: '/docs' }), /^NOT_FOUND: /)

      // The same messages as the HTTP API for the same error.
      for (const [tool, args, endpoint] of [
        ['cat', { path: '/missing.txt' }, '/api/files/cat?path=/missing.txt'],
        ['ls', { path: '/missing' }, '/api/files/ls?path=/missing'],
        ['ls', { path: '/../x' }, '/api/files/ls?path=/../x'],
      ] as const) {
        const res = await fetch(`${url}${endpoint}`, { headers: { authorization: `Bearer ${token}` } })
        const body = (await res.json()) as { code: string; message: string }
        t.equal(await failure(t, mcp, tool, args), `${body.code}: ${body.message}`, `${tool} fails as ${endpoint} does`)
      }

      // share: a link that works without the credential.
      const shared = await mcp.call('share', { path: '/a' })
      t.notOk(shared.isError)
      const link = (shared.structuredContent as { url: string; type: string }).url
      t.match(shared.structuredContent, { type: 'directory', url: new RegExp(`^${url}/api/files/ls\\?path=%2F&share=`) })
      const viaLink = await fetch(link)
      t.match(await viaLink.json(), { status: 'ok', results: [{ name: 'b', type: 'directory' }] })
      await mcp.call('write', { path: '/a/b/g.txt', content: 'shared file' })
      const fileShare = await mcp.call('share', { path: '/a/b/g.txt', password: 'pw-123456', expire: '2999-01-01T00:00:00Z' })
      const fileLink = (fileShare.structuredContent as { url: string }).url
      t.equal(await (await fetch(fileLink, { headers: { 'x-share-password': 'pw-123456' } })).text(), 'shared file')
      t.equal((await fetch(fileLink)).status, 401, 'the password is asked')
      t.match(await failure(t, mcp, 'share', { path: '/a', expire: 'someday' }), /^INVALID_INPUT: "expire" is not a date/)
      t.match(await failure(t, mcp, 'share', { path: '/nothing' }), /^NOT_FOUND: /)

      // Resources: a file, a folder, the root's list.
      const file = await mcp.client.readResource({ uri: 'filegate:///a/b/g.txt' })
      t.match(file.contents, [{ uri: 'filegate:///a/b/g.txt', mimeType: 'text/plain', text: 'shared file' }])
      const bin = await mcp.client.readResource({ uri: 'filegate:///a/b/f.txt' })
      t.match(bin.contents, [{ blob: 'AAEC/w==' }], 'binary as a blob')
      const dir = await mcp.client.readResource({ uri: 'filegate:///a/b/' })
      t.match(dir.contents, [{ text: '[FILE] f.txt\n[FILE] g.txt' }])
      const spaced = await mcp.call('write', { path: '/with space/é.txt', content: 'accent' })
      t.notOk(spaced.isError)
      t.match((await mcp.client.readResource({ uri: 'filegate:///with%20space/%C3%A9.txt' })).contents, [{ text: 'accent' }])
      const list = await mcp.client.listResources()
      t.ok(list.resources.some((r) => r.uri === 'filegate:///a/'), 'the root is listed')
      t.ok(list.resources.some((r) => r.uri === 'filegate:///with%20space/'))
      const templates = await mcp.client.listResourceTemplates()
      t.match(templates.resourceTemplates, [{ uriTemplate: 'filegate:///{+path}' }])
      await t.rejects(mcp.client.readResource({ uri: 'filegate:///missing.txt' }), /NOT_FOUND/)
    })
  }

  t.test(`${backend}: no tool and no resource reaches outside the root`, async (t) => {
    const { url, token, root, outside } = await setup(t, backend)
    const mcp = await connect(t, url, token, 'streamable')
    await mcp.call('write', { path: '/inside.txt', content: 'in' })
    const climbing = ['/../x', '../../x', '/a/../../x', '/..', '..']
    const calls: [string, (p: string) => Record<string, unknown>][] = [
      ['ls', (p) => ({ path: p })],
      ['cat', (p) => ({ path: p })],
      ['write', (p) => ({ path: p, content: 'x' })],
      ['mkdir', (p) => ({ path: p })],
      ['touch', (p) => ({ path: p })],
      ['mv', (p) => ({ from: '/inside.txt', to: p })],
      ['mv', (p) => ({ from: p, to: '/y' })],
      ['rm', (p) => ({ path: p, recursive: true })],
      ['stat', (p) => ({ path: p })],
      ['find', (p) => ({ path: p, pattern: '*' })],
      ['share', (p) => ({ path: p })],
    ]
    for (const [tool, args] of calls) {
      for (const p of climbing) t.match(await failure(t, mcp, tool, args(p)), /^INVALID_INPUT: "(path|from|to)" climbs above the root$/, `${tool} ${p}`)
    }
    // Absolute and percent-encoded paths name places inside the root.
    t.match(await failure(t, mcp, 'cat', { path: '/etc/passwd' }), /^NOT_FOUND: /)
    t.match(await failure(t, mcp, 'cat', { path: '/%2e%2e/%2e%2e/etc/passwd' }), /^NOT_FOUND: /)
    t.match(await failure(t, mcp, 'cat', { path: `/${outside}/secret.txt` }), /^NOT_FOUND: /)
    t.match(await failure(t, mcp, 'cat', { path: '/a\\..\\..\\x' }), /^NOT_FOUND: /, 'a backslash is a character of a name, never a separator')
    t.match(await failure(t, mcp, 'cat', { path: '/a\u0000b' }), /^INVALID_INPUT: "path" contains a control character/)
    for (const uri of ['filegate:///../../etc/passwd', 'filegate:///%2e%2e/%2e%2e/etc/passwd', 'filegate:///a/%2E%2E/%2E%2E/etc/passwd', 'filegate:///..%2f..%2fetc%2fpasswd']) {
      await t.rejects(mcp.client.readResource({ uri }), /NOT_FOUND|INVALID_INPUT/, uri)
    }
    t.equal(await mcp.text('ls', { path: '/' }), '[FILE] inside.txt', 'nothing was made anywhere by the attempts')
    t.same(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'the secret')
    t.notOk(existsSync(join(outside, 'x')))

    if (backend !== 'local') return
    // Links planted in the root that lead outside: refused by every tool, never listed.
    symlinkSync(outside, join(root, 'out'))
    symlinkSync(join(outside, 'secret.txt'), join(root, 'pw'))
    t.equal(await mcp.text('ls', { path: '/' }), '[FILE] inside.txt', 'links that lead outside are not listed')
    const refused: [string, Record<string, unknown>][] = [
      ['ls', { path: '/out' }],
      ['cat', { path: '/pw' }],
      ['cat', { path: '/out/secret.txt' }],
      ['stat', { path: '/pw' }],
      ['write', { path: '/out/new.txt', content: 'x' }],
      ['write', { path: '/pw', content: 'overwritten' }],
      ['mkdir', { path: '/out/made' }],
      ['touch', { path: '/out/touched' }],
      ['mv', { from: '/inside.txt', to: '/out/moved.txt' }],
      ['mv', { from: '/out/secret.txt', to: '/stolen.txt' }],
      ['rm', { path: '/out/secret.txt' }],
      ['find', { path: '/out', pattern: '*' }],
      ['share', { path: '/out' }],
    ]
    for (const [tool, args] of refused) t.match(await failure(t, mcp, tool, args), /^FORBIDDEN: /, `${tool} ${JSON.stringify(args)}`)
    t.equal(await mcp.text('find', { path: '/', pattern: '*' }), '/inside.txt', 'find neither lists nor follows them')
    await t.rejects(mcp.client.readResource({ uri: 'filegate:///out/secret.txt' }), /FORBIDDEN/)
    t.same(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'the secret')
    t.same(['secret.txt'], (await import('node:fs')).readdirSync(outside), 'nothing was made outside')

    // A folder swapped for a link between two calls.
    mkdirSync(join(root, 'swap'))
    writeFileSync(join(root, 'swap', 'secret.txt'), 'inside copy')
    t.equal(await mcp.text('cat', { path: '/swap/secret.txt' }), 'inside copy')
    rmSync(join(root, 'swap'), { recursive: true })
    symlinkSync(outside, join(root, 'swap'))
    t.match(await failure(t, mcp, 'cat', { path: '/swap/secret.txt' }), /^FORBIDDEN: /)
    t.match(await failure(t, mcp, 'write', { path: '/swap/secret.txt', content: 'pwned' }), /^FORBIDDEN: /)
    t.match(await failure(t, mcp, 'rm', { path: '/swap/secret.txt' }), /^FORBIDDEN: /)
    t.same(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'the secret')
    // A link that stays inside is followed, and rm removes the link, not what it leads to.
    mkdirSync(join(root, 'real'))
    writeFileSync(join(root, 'real', 'kept.txt'), 'kept')
    symlinkSync(join(root, 'real'), join(root, 'alias'))
    t.equal(await mcp.text('cat', { path: '/alias/kept.txt' }), 'kept')
    t.notOk((await mcp.call('rm', { path: '/alias', recursive: true })).isError)
    t.equal(readFileSync(join(root, 'real', 'kept.txt'), 'utf8'), 'kept', 'the linked folder is left whole')
  })
}

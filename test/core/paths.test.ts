/**
 * core/paths.ts is the one place that turns client input into canonical storage
 * paths (docs/api.md, "Conventions and errors"). Everything after it trusts its output, so the
 * hostile cases are listed one by one, with the spelling that an attacker would
 * try. Percent-decoding happens earlier, in the HTTP layer: here `%2e%2e` is a
 * literal name and must stay one.
 */
import { posix } from 'node:path'
import t from 'tap'
import { isFsError } from '../../core/errors.js'
import {
  baseName,
  checkStorable,
  DOOR_PATH_RULES,
  isCanonical,
  isTempUploadName,
  isWithin,
  joinPath,
  KeyRefusal,
  MAX_PATH_BYTES,
  mcpToolPath,
  parentOf,
  parseClientPath,
  relativeTo,
  resolveProtocolPath,
  s3BucketPath,
  s3KeyPath,
} from '../../core/paths.js'

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8')

/** Runs `parseClientPath` and returns the FsError (EINVAL) it threw, or null. */
function rejection(raw: string | undefined, what?: string): unknown {
  try {
    parseClientPath(raw, what)
  } catch (err) {
    return err
  }
  return null
}

t.test('normalisation', async (t) => {
  // [input, canonical path, dirHint]
  const cases: [string, string, boolean][] = [
    ['/', '/', true],
    ['/a', '/a', false],
    ['/a/', '/a', true],
    ['/a/b', '/a/b', false],
    ['/a/b/', '/a/b', true],
    // `//` collapses
    ['//', '/', true],
    ['///', '/', true],
    ['//a', '/a', false],
    ['/a//b', '/a/b', false],
    ['/a///b//', '/a/b', true],
    // `.` is dropped
    ['/.', '/', true],
    ['/./', '/', true],
    ['/./a', '/a', false],
    ['/a/./b', '/a/b', false],
    ['/a/.', '/a', true],
    ['/./././a/./././', '/a', true],
    // `..` pops a segment, as long as there is one
    ['/a/..', '/', true],
    ['/a/../', '/', true],
    ['/a/../b', '/b', false],
    ['/a/b/..', '/a', true],
    ['/a/b/../c', '/a/c', false],
    ['/a/b/../../c/', '/c', true],
    ['/a/./b/.././../c', '/c', false],
    ['//a//..//b//', '/b', true],
    ['/a/b/c/../../../d', '/d', false],
    // names that only look special are ordinary names
    ['/...', '/...', false],
    ['/..../x', '/..../x', false],
    ['/..a', '/..a', false],
    ['/a..', '/a..', false],
    ['/.hidden', '/.hidden', false],
    ['/a/.../b', '/a/.../b', false],
    ['/ ', '/ ', false],
    ['/ a /b ', '/ a /b ', false],
    ['/a b/c d.txt', '/a b/c d.txt', false],
    ['/données/日本語/😀.txt', '/données/日本語/😀.txt', false],
    ['/a:b/c*d?/e|f', '/a:b/c*d?/e|f', false],
    // a backslash is an ordinary character of a name (Linux, SFTP servers and S3 hold
    // it; a storage that cannot is its driver's to refuse): never a separator, never a climb
    ['/a\\b', '/a\\b', false],
    ['/back\\slash.txt', '/back\\slash.txt', false],
    ['/..\\..\\etc\\passwd', '/..\\..\\etc\\passwd', false],
    ['/a\\..\\..\\b', '/a\\..\\..\\b', false],
    ['/a/\\', '/a/\\', false],
    ['/a/b\\', '/a/b\\', false],
    ['/a/..\\', '/a/..\\', false],
    ['/x/..\\../y', '/x/..\\../y', false],
    // names that only look like an upload's hidden name
    ['/.filegate-.part', '/.filegate-.part', false],
    ['/.filegate-a.part.txt', '/.filegate-a.part.txt', false],
    ['/filegate-a.part', '/filegate-a.part', false],
    ['/.filegate-a b.part', '/.filegate-a b.part', false],
    // percent-decoding is not our job: these are literal names
    ['/%2e%2e', '/%2e%2e', false],
    ['/%2e%2e/%2e%2e/etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', false],
    ['/%2E%2E/', '/%2E%2E', true],
    ['/a/%2e/b', '/a/%2e/b', false],
    ['/%2f..%2f', '/%2f..%2f', false],
    ['/..%2f..%2fetc', '/..%2f..%2fetc', false],
    ['/%5c..%5c', '/%5c..%5c', false],
    ['/%00', '/%00', false],
    ['/a%2F..%2F..', '/a%2F..%2F..', false],
  ]
  for (const [raw, path, dirHint] of cases) {
    t.strictSame(parseClientPath(raw), { path, dirHint }, JSON.stringify(raw))
  }
  t.equal(parseClientPath('/%2e%2e/x').path.split('/')[1], '%2e%2e', 'an encoded dot-dot is kept as one literal segment')
})

t.test('the canonical form is a fixed point', async (t) => {
  const inputs = ['/', '/a', '/a/', '//a//b/./c/../d/', '/%2e%2e', '/données/日本語', '/...', '/a b/']
  for (const raw of inputs) {
    const { path } = parseClientPath(raw)
    t.ok(isCanonical(path), `${JSON.stringify(raw)} → ${JSON.stringify(path)} is canonical`)
    t.strictSame(parseClientPath(path), { path, dirHint: path === '/' }, `${JSON.stringify(path)} parses to itself`)
  }
})

t.test('hostile inputs are EINVAL (the HTTP API answers INVALID_INPUT)', async (t) => {
  const climbs = [
    '/..',
    '/../',
    '/../.',
    '/../..',
    '//..',
    '//../',
    '/./..',
    '/./../x',
    '/.././',
    '/../etc/passwd',
    '/../../../../../../../../etc/passwd',
    '/a/../..',
    '/a/../../',
    '/a/../../b',
    '/a/b/../../..',
    '/a/./../../',
    '/a//..//..',
    '/x/../../../../../../etc/shadow',
    // climbs first and comes back: still a climb
    '/../a/..',
    '/../a',
    '/a/../../a',
    '/a/b/../../../a/b',
  ]
  const controls = [
    '\u0000',
    '/\u0000',
    '/a\u0000b',
    '/a\u0000',
    '/a\u0000/../b',
    '/a.txt\u0000.png',
    '/a\u0001',
    '/a\tb',
    '/a\nb',
    '/a\rb',
    '/a\r\nSet-Cookie: x=y',
    '/a\u000b',
    '/a\u000c',
    '/a\u001b[31m',
    '/a\u001f',
    '/a\u007f',
    '/a\u0080',
    '/a\u0085',
    '/a\u009b',
    '/a\u009f',
    '\n/a',
  ]
  // Windows spellings of absolute paths: relative here (a backslash is not a separator).
  const backslashes = ['\\', '\\a', '\\\\server\\share', '\\..\\..\\etc\\passwd', '..\\x']
  // The hidden names of uploads in progress: drivers leave them out of listings, so a
  // file a client named so would vanish from its owner's view.
  const uploadNames = ['/.filegate-abc.part', '/a/.filegate-x_y-Z9.part', '/.filegate-abc.part/', '/.filegate-abc.part/x', '/x/../.filegate-abc.part', '/.filegate-abc.part/.']
  const relative = ['a', 'a/b', 'a/', './a', '../a', '.', '..', './', '../', ' /a', 'C:/Windows', 'c:\\x', '~/x', 'file:///etc/passwd', 'http://x/']
  const groups: Record<string, (string | undefined)[]> = {
    'climbs above the root': climbs,
    'control characters': controls,
    'backslash-led (relative) paths': backslashes,
    'hidden upload names': uploadNames,
    'relative paths': relative,
    // A lone surrogate has no UTF-8 form: written to disk it becomes U+FFFD, so two
    // different requested names would reach the same file.
    'lone UTF-16 surrogates': ['/a\uD800', '/\uDC00b', '/x/\uD83D/y'],
    'empty or missing': ['', undefined],
  }
  for (const [group, inputs] of Object.entries(groups)) {
    t.test(group, async (t) => {
      for (const raw of inputs) {
        const err = rejection(raw)
        t.ok(isFsError(err), `${JSON.stringify(raw)} throws an FsError`)
        t.match(err, { name: 'FsError', code: 'EINVAL' }, JSON.stringify(raw))
        if (raw !== undefined && (raw.length > 3 || /[\u0000-\u001f\u007f-\u009f]/.test(raw))) {
          // The message must not echo the input: it may hold control characters meant for a log.
          t.notOk((err as Error).message.includes(raw), `${JSON.stringify(raw)}: message does not echo the input`)
        }
      }
    })
  }

  t.test('the message names the parameter', async (t) => {
    t.match(rejection('/..', 'from'), { code: 'EINVAL', message: /"from"/ })
    t.match(rejection(undefined, 'to'), { code: 'EINVAL', message: /"to"/ })
    t.match(rejection('a'), { code: 'EINVAL', message: /"path"/ })
  })
})

t.test('length limit counts UTF-8 bytes, not characters', async (t) => {
  t.equal(MAX_PATH_BYTES, 4096)
  // [description, input, accepted]
  const cases: [string, string, boolean][] = [
    ['4096 ASCII bytes', '/' + 'a'.repeat(4095), true],
    ['4097 ASCII bytes', '/' + 'a'.repeat(4096), false],
    ['4096 bytes of 2-byte chars', '/' + 'é'.repeat(2047) + 'a', true],
    ['4097 bytes of 2-byte chars (2049 chars)', '/' + 'é'.repeat(2048), false],
    ['4096 bytes of 3-byte chars', '/' + '€'.repeat(1365), true],
    ['4099 bytes of 3-byte chars (1367 chars)', '/' + '€'.repeat(1366), false],
    ['4096 bytes of 4-byte chars', '/' + '😀'.repeat(1023) + 'abc', true],
    ['4097 bytes of 4-byte chars (1025 code points)', '/' + '😀'.repeat(1024), false],
    ['4097 bytes made of segments', '/' + 'abcdefg/'.repeat(512), false],
    // The limit applies to what the client sent, before `.` and `//` are removed.
    ['4097 bytes that normalise to 2', '/' + './'.repeat(2047) + 'ab', false],
    ['huge', '/' + 'x'.repeat(1 << 20), false],
  ]
  for (const [what, raw, accepted] of cases) {
    if (accepted) {
      t.equal(bytes(raw), 4096, `${what}: the fixture is 4096 bytes`)
      t.equal(parseClientPath(raw).path, raw, `${what}: accepted`)
    } else {
      t.ok(bytes(raw) > 4096, `${what}: the fixture is over 4096 bytes`)
      t.match(rejection(raw), { name: 'FsError', code: 'EINVAL' }, `${what}: rejected`)
    }
  }
  t.equal(('/' + 'é'.repeat(2048)).length, 2049, 'the 2-byte case is only 2049 UTF-16 units: counting chars would accept it')
})

t.test('fuzz against an independent model', async (t) => {
  // Deterministic PRNG (mulberry32) so a failure names a reproducible input.
  let seed = 0x5eed
  const rand = (): number => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  const pieces = ['/', '/', '/', '.', '..', 'a', 'b', 'é', '%2e', '\\', '\u0000', '\n', '\u0085', ' ']
  let accepted = 0
  let rejected = 0
  for (let i = 0; i < 5000; i++) {
    let raw = rand() < 0.95 ? '/' : ''
    const n = 1 + Math.floor(rand() * 10)
    for (let j = 0; j < n; j++) raw += pieces[Math.floor(rand() * pieces.length)]
    // The model: segment by segment, a depth counter; anything odd is rejected.
    let bad = !raw.startsWith('/') || /[\u0000-\u001f\u007f-\u009f]/.test(raw)
    if (!bad) {
      let depth = 0
      for (const seg of raw.split('/')) {
        if (seg === '..') depth--
        else if (seg !== '' && seg !== '.') depth++
        if (depth < 0) bad = true
      }
    }
    const err = rejection(raw)
    if (bad) {
      rejected++
      if (!isFsError(err) || err.code !== 'EINVAL') t.fail(`accepted ${JSON.stringify(raw)}`)
      continue
    }
    accepted++
    if (err !== null) {
      t.fail(`rejected ${JSON.stringify(raw)}: ${String(err)}`)
      continue
    }
    const { path, dirHint } = parseClientPath(raw)
    const expected = posix.resolve('/', raw)
    if (path !== expected) t.fail(`${JSON.stringify(raw)} → ${JSON.stringify(path)}, expected ${JSON.stringify(expected)}`)
    if (!isCanonical(path)) t.fail(`${JSON.stringify(path)} is not canonical`)
    if (dirHint !== /\/(\.{0,2})$/.test(raw)) t.fail(`${JSON.stringify(raw)}: dirHint ${dirHint}`)
  }
  t.ok(accepted > 500 && rejected > 500, `both branches exercised (${accepted} accepted, ${rejected} rejected)`)
})

t.test('isCanonical', async (t) => {
  const yes = ['/', '/a', '/a/b', '/a b', '/%2e%2e', '/...', '/.hidden', '/a/..b', '/données/😀', '/a\\b', '/..\\..']
  const no = [
    '',
    'a',
    'a/b',
    '/a/',
    '//',
    '//a',
    '/a//b',
    '/.',
    '/./a',
    '/a/.',
    '/..',
    '/a/..',
    '/a/../b',
    '\\',
    '\\a',
    '/a\u0000',
    '/a\n',
    '/a\u007f',
    '/a\u0085',
  ]
  for (const p of yes) t.equal(isCanonical(p), true, JSON.stringify(p))
  for (const p of no) t.equal(isCanonical(p), false, JSON.stringify(p))
})

t.test('joinPath', async (t) => {
  const cases: [string, string, string][] = [
    ['/', 'a', '/a'],
    ['/a', 'b', '/a/b'],
    ['/a/b', 'c d.txt', '/a/b/c d.txt'],
    ['/', '%2e%2e', '/%2e%2e'],
  ]
  for (const [dir, name, out] of cases) {
    t.equal(joinPath(dir, name), out, `${dir} + ${name}`)
    t.ok(isCanonical(joinPath(dir, name)))
  }
})

t.test('parentOf and baseName', async (t) => {
  // [path, parent, base]
  const cases: [string, string, string][] = [
    ['/', '/', ''],
    ['/a', '/', 'a'],
    ['/a/b', '/a', 'b'],
    ['/a/b/c.txt', '/a/b', 'c.txt'],
    ['/...', '/', '...'],
  ]
  for (const [p, parent, base] of cases) {
    t.equal(parentOf(p), parent, `parentOf(${p})`)
    t.equal(baseName(p), base, `baseName(${p})`)
    if (p !== '/') t.equal(joinPath(parentOf(p), baseName(p)), p, `${p} = join(parent, base)`)
  }
})

t.test('isWithin', async (t) => {
  // [ancestor, path, within]
  const cases: [string, string, boolean][] = [
    ['/', '/', true],
    ['/', '/a', true],
    ['/', '/a/b', true],
    ['/a', '/a', true],
    ['/a', '/a/b', true],
    ['/a', '/a/b/c', true],
    ['/a/b', '/a/b/c', true],
    ['/a', '/', false],
    ['/a', '/ab', false],
    ['/a', '/ab/c', false],
    ['/ab', '/a', false],
    ['/a', '/a b', false],
    ['/a', '/a.txt', false],
    ['/a/b', '/a', false],
    ['/a/b', '/a/bc', false],
    ['/a/b', '/a/c/b', false],
    ['/a', '/b/a', false],
  ]
  for (const [ancestor, p, within] of cases) t.equal(isWithin(ancestor, p), within, `isWithin(${ancestor}, ${p})`)
})

t.test('relativeTo', async (t) => {
  const cases: [string, string, string][] = [
    ['/', '/', ''],
    ['/', '/a', 'a'],
    ['/', '/a/b', 'a/b'],
    ['/a', '/a', ''],
    ['/a', '/a/b', 'b'],
    ['/a', '/a/b/c', 'b/c'],
    ['/a/b', '/a/b/c.txt', 'c.txt'],
  ]
  for (const [ancestor, p, rel] of cases) t.equal(relativeTo(ancestor, p), rel, `relativeTo(${ancestor}, ${p})`)
  for (const [ancestor, p] of [
    ['/a', '/ab'],
    ['/a', '/'],
    ['/a/b', '/a'],
    ['/a', '/b/a'],
  ] as const) {
    t.throws(() => relativeTo(ancestor, p), RangeError, `relativeTo(${ancestor}, ${p}) throws`)
  }
})

t.test('hidden upload names', async (t) => {
  for (const n of ['.filegate-a.part', '.filegate-AZaz09_-.part']) t.ok(isTempUploadName(n), n)
  for (const n of ['.filegate-.part', 'x.filegate-a.part', '.filegate-a.part ', '.filegate-a/b.part', '.filegate-a.b.part']) t.notOk(isTempUploadName(n), JSON.stringify(n))
})

/** Every door's rule refuses the same things, each in its own shape. */
t.test('the other doors: SFTP, MCP, S3', async (t) => {
  const sftpError = (raw: string): unknown => {
    try {
      return resolveProtocolPath('/', raw)
    } catch (err) {
      return err
    }
  }
  t.test('SFTP: relative to the working folder, `..` stays at the root, a backslash is a name', async (t) => {
    t.equal(resolveProtocolPath('/', 'a\\b'), '/a\\b')
    t.equal(resolveProtocolPath('/d', '..\\..\\x'), '/d/..\\..\\x', 'a backslash never climbs')
    t.equal(resolveProtocolPath('/d', '../../../x'), '/x', '`..` above the root stays at the root')
    t.equal(resolveProtocolPath('/', '/a/./b//c/..'), '/a/b')
    for (const raw of ['a\u0000b', 'a\nb', 'a\u0085', `/${'a'.repeat(4096)}`, 'bad\uDCFF', '/.filegate-abc.part', 'd/.filegate-abc.part/x', 'x/../.filegate-abc.part']) {
      const err = sftpError(raw)
      t.ok(isFsError(err) && err.code === 'EINVAL', `${JSON.stringify(raw.slice(0, 40))}: EINVAL (${String((err as Error).message)})`)
    }
    t.match(sftpError('/.filegate-abc.part'), { message: /hidden upload/ })
    t.match(sftpError('bad\uDCFF.txt'), { message: /not valid Unicode \(UTF-8\)/ })
  })
  t.test('MCP: relative to the root, the HTTP API\'s refusals', async (t) => {
    t.equal(mcpToolPath('a\\b'), '/a\\b')
    t.equal(mcpToolPath('docs/x.md'), '/docs/x.md')
    t.throws(() => mcpToolPath('../x'), { name: 'FsError', code: 'EINVAL', message: /climbs above the root/ })
    t.throws(() => mcpToolPath('.filegate-abc.part', 'to'), { name: 'FsError', code: 'EINVAL', message: /^"to" names a hidden upload/ })
  })
  t.test('S3: a key is taken verbatim or refused, never resolved', async (t) => {
    t.same(s3KeyPath('/b', 'back\\slash.txt'), { path: '/b/back\\slash.txt', folder: false })
    t.same(s3KeyPath('/b', 'a\\..\\..\\x/'), { path: '/b/a\\..\\..\\x', folder: true })
    const refusal = (key: string) => {
      try {
        s3KeyPath('/b', key)
      } catch (err) {
        return err instanceof KeyRefusal ? err.reason : 'not a KeyRefusal'
      }
      return null
    }
    t.equal(refusal(''), 'empty')
    t.equal(refusal('a'.repeat(1025)), 'too-long')
    for (const key of ['a/../b', '/a', 'a//b', './a', '..', 'a\u0000', 'a\u009b', 'x\uD800', '.filegate-abc.part', 'a/.filegate-abc.part/b']) t.equal(refusal(key), 'invalid', JSON.stringify(key))
    t.equal(s3BucketPath('back\\slash'), '/back\\slash', 'a folder holding a backslash can be a bucket')
    for (const name of ['', '.', '..', 'a/b', 'a\u0001', '.filegate-abc.part', 'x'.repeat(256)]) t.equal(s3BucketPath(name), null, JSON.stringify(name))
  })
})

t.test('what a storage can hold is its driver\'s to say', async (t) => {
  const smbLike = { refusedNameChars: '\\:*?"<>|' }
  t.doesNotThrow(() => checkStorable({ refusedNameChars: '' }, '/back\\slash.txt'), 'a storage that holds every character')
  t.doesNotThrow(() => checkStorable(smbLike, '/plain/name.txt'))
  for (const [path, shown] of [['/back\\slash.txt', /a backslash/], ['/a/b:c', /":"/], ['/what?', /"\?"/]] as const) {
    t.throws(() => checkStorable(smbLike, path), { name: 'FsError', code: 'EINVAL', message: shown }, path)
  }
})

t.test('each door takes its rule from one declared map', async (t) => {
  t.same(Object.keys(DOOR_PATH_RULES).sort(), ['http', 'mcp', 's3', 'sftp'], 'one rule per door')
  t.equal(DOOR_PATH_RULES.http, parseClientPath)
  t.equal(DOOR_PATH_RULES.mcp, mcpToolPath)
  t.equal(DOOR_PATH_RULES.sftp, resolveProtocolPath)
  t.equal(DOOR_PATH_RULES.s3, s3KeyPath)
  // The same input, four doors, four answers: the rules differ on purpose.
  t.throws(() => DOOR_PATH_RULES.http('/../x'), { code: 'EINVAL' }, 'HTTP: .. above the root is refused')
  t.throws(() => DOOR_PATH_RULES.mcp('../x'), { code: 'EINVAL' }, 'MCP: refused too')
  t.equal(DOOR_PATH_RULES.sftp('/', '/../x'), '/x', 'SFTP: .. stays at the root')
  t.throws(() => DOOR_PATH_RULES.s3('/b', '../x'), { name: 'KeyRefusal' }, 'S3: a key is not a walk')
})

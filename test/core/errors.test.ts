/**
 * The error vocabulary (core/errors.ts) and its mapping to contract codes
 * (core/api-error.ts), table-driven: every code survives
 * the hop between threads as data, anything unclassified becomes a generic EIO
 * that leaks nothing, and every code has a row in the contract table.
 */
import { MessageChannel } from 'node:worker_threads'
import t, { type Test } from 'tap'
import { API_CODE_OF_FS, API_CODES, ApiError, isApiError, toApiError, type ApiCode } from '../../core/api-error.js'
import {
  FS_ERROR_CODES,
  FsError,
  type FsErrorCode,
  fromWire,
  isFsError,
  isFsErrorCode,
  toWire,
  type WireError,
} from '../../core/errors.js'

/** Sends values through a real MessageChannel: the serialisation a worker thread hop uses. */
async function overPort<T>(values: readonly T[]): Promise<T[]> {
  const { port1, port2 } = new MessageChannel()
  try {
    const got: T[] = []
    const all = new Promise<T[]>((resolve) => {
      port2.on('message', (v: T) => {
        got.push(v)
        if (got.length === values.length) resolve(got)
      })
    })
    for (const v of values) port1.postMessage(v)
    return await all
  } finally {
    port1.close()
    port2.close()
  }
}

const RETRYABLE_BY_DEFAULT: ReadonlySet<FsErrorCode> = new Set(['ETIMEDOUT', 'EUNAVAILABLE', 'EBUSY', 'EOVERLOAD'])

/** Every code, with and without a path, with the default and with both retryable overrides. */
function samples(): FsError[] {
  const out: FsError[] = []
  for (const code of FS_ERROR_CODES) {
    out.push(new FsError(code, `${code} happened`))
    out.push(new FsError(code, `${code} at a path`, { path: '/a dir/é.txt' }))
    out.push(new FsError(code, `${code} forced retryable`, { path: '/x', retryable: true }))
    out.push(new FsError(code, `${code} forced final`, { retryable: false, cause: new Error('a secret cause') }))
  }
  return out
}

function expectSame(t: Test, got: unknown, want: FsError, how: string): void {
  const label = `${want.code} "${want.message}" via ${how}`
  t.ok(isFsError(got), `${label}: is an FsError`)
  t.ok(got instanceof FsError, `${label}: fromWire builds this realm's class`)
  const e = got as FsError
  t.equal(e.code, want.code, `${label}: code`)
  t.equal(e.message, want.message, `${label}: message`)
  t.equal(e.retryable, want.retryable, `${label}: retryable`)
  t.equal(e.path, want.path, `${label}: path`)
  t.equal(e.name, 'FsError', `${label}: name`)
}

t.test('the vocabulary', async (t) => {
  // The base vocabulary; more codes may be added (each then needs
  // a row in every protocol table, which the Record types and the tests below enforce).
  for (const code of ['ENOENT', 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EACCES', 'EINVAL', 'ENOTSUP', 'ECANCELED', 'ETIMEDOUT', 'EUNAVAILABLE', 'EIO']) {
    t.ok((FS_ERROR_CODES as readonly string[]).includes(code), `${code} is in the vocabulary`)
  }
  t.equal(new Set(FS_ERROR_CODES).size, FS_ERROR_CODES.length, 'no duplicates')
  for (const code of FS_ERROR_CODES) {
    t.equal(isFsErrorCode(code), true, code)
    t.equal(new FsError(code, 'm').retryable, RETRYABLE_BY_DEFAULT.has(code), `${code}: default retryable`)
  }
  for (const x of ['enoent', 'ENOENT ', '', 'EPERM', 'toString', '__proto__', 'constructor', 42, null, undefined, {}, ['ENOENT']]) {
    t.equal(isFsErrorCode(x), false, `not a code: ${JSON.stringify(x)}`)
  }
})

t.test('toWire gives plain data with exactly the documented fields', async (t) => {
  for (const e of samples()) {
    const w = toWire(e)
    t.equal(Object.getPrototypeOf(w), Object.prototype, `${e.code}: a plain object`)
    const want: Record<string, unknown> = { code: e.code, message: e.message, retryable: e.retryable }
    if (e.path !== undefined) want['path'] = e.path
    t.strictSame(w, want, `${e.code} "${e.message}"`)
    t.notOk('path' in w && w.path === undefined, 'no path key when there is no path')
    t.notOk(JSON.stringify(w).includes('secret'), 'the cause stays behind')
  }
})

t.test('round trip through structuredClone', async (t) => {
  for (const e of samples()) expectSame(t, fromWire(structuredClone(toWire(e))), e, 'structuredClone')
})

t.test('round trip through a real MessageChannel', async (t) => {
  const errs = samples()
  const received = await overPort(errs.map(toWire))
  t.equal(received.length, errs.length)
  errs.forEach((e, i) => expectSame(t, fromWire(received[i]!), e, 'MessagePort'))
})

t.test('twice across (worker → main → another worker) changes nothing', async (t) => {
  for (const e of samples()) {
    const once = fromWire(structuredClone(toWire(e)))
    const [twice] = await overPort([toWire(once)])
    expectSame(t, fromWire(twice!), e, 'two hops')
  }
})

t.test('why toWire exists: an FsError posted as is loses its identity', async (t) => {
  const e = new FsError('ENOENT', 'gone', { path: '/p' })
  const [posted] = await overPort([e])
  const cloned = structuredClone(e)
  for (const [how, x] of [
    ['postMessage', posted],
    ['structuredClone', cloned],
  ] as const) {
    t.notOk(isFsError(x), `${how}: no longer an FsError`)
    // Treated as unclassified from then on, never trusted: no code, no message leaks.
    t.strictSame(toWire(x), { code: 'EIO', message: 'internal error', retryable: false }, `${how}: becomes a generic EIO`)
  }
})

t.test('unclassified errors become a generic EIO that leaks nothing', async (t) => {
  const secret = '/srv/filegate/data/alice/tax-2024.pdf'
  const nodeError = Object.assign(new Error(`ENOENT: no such file or directory, open '${secret}'`), {
    code: 'ENOENT',
    errno: -2,
    syscall: 'open',
    path: secret,
  })
  class Custom extends Error {
    code = 'EACCES'
  }
  const impostor = Object.assign(new Error(`fake ${secret}`), { name: 'FsError', code: 'EVIL', path: secret })
  const plainLookalike = { name: 'FsError', code: 'ENOENT', message: secret, retryable: true, path: secret }
  const thrown: [string, unknown][] = [
    ['an Error', new Error(`boom at ${secret}`)],
    ['a TypeError', new TypeError(`cannot read ${secret}`)],
    ['a raw Node fs error (its code is in the vocabulary, but nobody classified it)', nodeError],
    ['an Error subclass with a code', new Custom(secret)],
    ['an Error named FsError with an unknown code', impostor],
    ['a plain object that looks like an FsError', plainLookalike],
    ['a WireError (data, not an error)', { code: 'ENOENT', message: secret, retryable: false, path: secret }],
    ['a string', secret],
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
    ['an AggregateError', new AggregateError([new Error(secret)], secret)],
    ['an error with a cause', new Error('wrapper', { cause: new Error(secret) })],
  ]
  for (const [what, err] of thrown) {
    const w = toWire(err)
    t.strictSame(w, { code: 'EIO', message: 'internal error', retryable: false }, what)
    t.notOk(JSON.stringify(w).includes('tax-2024'), `${what}: nothing of the original leaks`)
    const back = fromWire(structuredClone(w))
    t.match(back, { code: 'EIO', message: 'internal error', retryable: false, path: undefined }, `${what}: arrives as EIO`)
  }
})

t.test('fromWire does not trust what it receives', async (t) => {
  const hostile = [
    { code: 'EVIL', message: 'm', retryable: false },
    { code: '__proto__', message: 'm', retryable: false },
    { code: 'toString', message: 'm', retryable: false },
    { code: 42, message: 'm', retryable: false },
  ] as unknown as WireError[]
  for (const w of hostile) t.equal(fromWire(w).code, 'EIO', `code ${JSON.stringify(w.code)} → EIO`)
  const odd = fromWire({ code: 'ENOENT', message: 7, retryable: 1, path: { toString: () => '/evil' } } as unknown as WireError)
  t.equal(odd.code, 'ENOENT')
  t.equal(odd.message, '7', 'message coerced to a string')
  t.equal(odd.retryable, true, 'retryable coerced to a boolean')
  t.equal(odd.path, undefined, 'a non-string path is dropped')
  t.equal(fromWire({ code: 'ETIMEDOUT', message: 'm', retryable: false }).retryable, false, 'the sender decides retryable')
})

t.test('every FsErrorCode has a contract code', async (t) => {
  t.strictSame(Object.keys(API_CODE_OF_FS).sort(), [...FS_ERROR_CODES].sort(), 'one row per code, no extra rows')
  for (const code of FS_ERROR_CODES) {
    t.ok((API_CODES as readonly string[]).includes(API_CODE_OF_FS[code]), `${code} → ${API_CODE_OF_FS[code]} is a contract code`)
  }
  // Rows the contract (docs/api.md, "Conventions and errors") decides. EAUTH and ECANCELED are
  // only required to map to some contract code (ECANCELED is never sent).
  const fixed: Partial<Record<FsErrorCode, ApiCode>> = {
    ENOENT: 'NOT_FOUND',
    EEXIST: 'CONFLICT',
    ENOTEMPTY: 'CONFLICT',
    ENOTDIR: 'INVALID_INPUT', // "a file where a directory is needed or the reverse"
    EISDIR: 'INVALID_INPUT',
    EINVAL: 'INVALID_INPUT',
    EACCES: 'FORBIDDEN', // "a symlink that leads outside the session root"
    ENOTSUP: 'NOT_SUPPORTED',
    ETIMEDOUT: 'BACKEND_TIMEOUT',
    EUNAVAILABLE: 'BACKEND_UNREACHABLE',
    EIO: 'INTERNAL',
  }
  for (const [code, api] of Object.entries(fixed)) t.equal(API_CODE_OF_FS[code as FsErrorCode], api, `${code} → ${api}`)
})

t.test('toApiError', async (t) => {
  t.test('maps each code and keeps safe messages', async (t) => {
    for (const code of FS_ERROR_CODES) {
      const fe = new FsError(code, `${code}: detail /x`, { path: '/x' })
      const ae = toApiError(fe)
      t.ok(isApiError(ae), `${code}: an ApiError`)
      t.equal(ae.code, API_CODE_OF_FS[code], `${code} → ${ae.code}`)
      if (ae.code === 'INTERNAL') t.equal(ae.message, 'internal error', `${code}: INTERNAL says nothing more`)
      else t.equal(ae.message, fe.message, `${code}: the classified message is shown`)
      t.equal(ae.cause, fe, `${code}: the original is kept as cause, for the server log`)
    }
  })

  t.test('INTERNAL never details', async (t) => {
    const secret = 'password=hunter2 at /srv/secret'
    const cases: [string, unknown][] = [
      ['FsError EIO', new FsError('EIO', secret, { path: '/p' })],
      ['FsError ECANCELED', new FsError('ECANCELED', secret)],
      ['FsError EIO after a thread hop', fromWire(structuredClone(toWire(new FsError('EIO', secret))))],
      ['Error', new Error(secret)],
      ['raw Node error', Object.assign(new Error(secret), { code: 'ENOENT' })],
      ['string', secret],
      ['object', { message: secret, code: 'NOT_FOUND' }],
      ['null', null],
      ['undefined', undefined],
    ]
    for (const [what, err] of cases) {
      const ae = toApiError(err)
      t.equal(ae.code, 'INTERNAL', what)
      t.equal(ae.message, 'internal error', `${what}: generic message`)
      t.notOk(JSON.stringify({ code: ae.code, message: ae.message }).includes('hunter2'), `${what}: body leaks nothing`)
      t.notOk(String(ae).includes('hunter2'), `${what}: toString leaks nothing`)
    }
  })

  t.test('an ApiError passes through unchanged', async (t) => {
    const ae = new ApiError('RATE_LIMITED', 'slow down')
    t.equal(toApiError(ae), ae)
    const forged = Object.assign(new Error('forged'), { name: 'ApiError', code: 'NOT_A_CODE' })
    t.equal(toApiError(forged).code, 'INTERNAL', 'an ApiError look-alike with an unknown code is INTERNAL')
    t.equal(toApiError(forged).message, 'internal error')
  })
})

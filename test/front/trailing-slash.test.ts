/**
 * @module test/front/trailing-slash.test
 * One rule on every endpoint (issue 10, item 6): a trailing `/` names a directory.
 * A file written with one is the same 400, with the same message, for cat, upload,
 * touch, ls, rm, mv (source or target, overwrite or not), zip, mkdir and shares,
 * and nothing changes on disk; folders written with one work everywhere.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { expectError } from '../helpers/share.js'

t.test('a file named with a trailing "/" is the same 400 everywhere, and nothing changes', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const a = api(url, await tmpSession(url, 'alice'))
  const disk = (p: string) => join(dataDir, 'tmp', 'alice', p)
  t.equal((await a('POST', '/api/files/cat', { path: '/a.txt' }, { body: 'keep me' })).status, 200)
  t.equal((await a('POST', '/api/files/cat', { path: '/c.txt' }, { body: 'other' })).status, 200)
  t.equal((await a('POST', '/api/files/cat', { path: '/d/x.txt' }, { body: 'in d' })).status, 200)

  const refused = async (what: string, res: Response, param = 'path', file = '/a.txt') => {
    const body = (await res.clone().json()) as { message: string }
    await expectError(t, res, 400, 'INVALID_INPUT', what)
    t.equal(body.message, `"${param}" ends with "/", which names a directory, but ${file} is a file`, `${what}: the one message`)
  }
  await refused('cat', await a('GET', '/api/files/cat', { path: '/a.txt/' }))
  t.equal((await a('HEAD', '/api/files/cat', { path: '/a.txt/' })).status, 400, 'HEAD cat')
  await refused('upload', await a('POST', '/api/files/cat', { path: '/a.txt/' }, { body: 'replaced' }))
  await refused('touch', await a('POST', '/api/files/touch', { path: '/a.txt/' }))
  await refused('ls', await a('GET', '/api/files/ls', { path: '/a.txt/' }))
  await refused('rm', await a('POST', '/api/files/rm', { path: '/a.txt/' }))
  await refused('mv from', await a('POST', '/api/files/mv', { from: '/a.txt/', to: '/b.txt' }), 'from')
  await refused('mv onto, overwrite', await a('POST', '/api/files/mv', { from: '/c.txt', to: '/a.txt/', overwrite: 'true' }), 'to')
  await refused('mv a file to a new name written as a folder', await a('POST', '/api/files/mv', { from: '/c.txt', to: '/new/' }), 'to', '/c.txt')
  await refused('zip', await a('GET', '/api/files/zip', { path: ['/d/', '/a.txt/'] }))
  await refused('mkdir', await a('POST', '/api/files/mkdir', { path: '/a.txt/' }))
  await refused('share', await a('POST', '/api/share', {}, { body: JSON.stringify({ path: '/a.txt/' }) }))

  t.equal(readFileSync(disk('a.txt'), 'utf8'), 'keep me', 'a.txt untouched')
  t.equal(readFileSync(disk('c.txt'), 'utf8'), 'other', 'c.txt untouched')
  t.notOk(existsSync(disk('b.txt')) || existsSync(disk('new')), 'nothing created')
})

t.test('folders written with a trailing "/" work on every endpoint', async (t) => {
  const { url, dataDir } = await startTestServer(t)
  const a = api(url, await tmpSession(url, 'alice'))
  t.equal((await a('POST', '/api/files/mkdir', { path: '/d/' })).status, 200, 'mkdir')
  await expectError(t, await a('POST', '/api/files/mkdir', { path: '/d/' }), 409, 'CONFLICT', 'mkdir of an existing folder')
  t.equal((await a('POST', '/api/files/cat', { path: '/d/x.txt' }, { body: 'x' })).status, 200)
  t.equal((await a('GET', '/api/files/ls', { path: '/d/' })).status, 200, 'ls')
  t.equal((await a('GET', '/api/files/zip', { path: '/d/' })).status, 200, 'zip')
  t.equal((await a('POST', '/api/share', {}, { body: JSON.stringify({ path: '/d/' }) })).status, 200, 'share')
  t.equal((await a('POST', '/api/files/mv', { from: '/d/', to: '/e/' })).status, 200, 'mv')
  t.ok(existsSync(join(dataDir, 'tmp', 'alice', 'e', 'x.txt')), 'moved')
  await expectError(t, await a('GET', '/api/files/cat', { path: '/e/' }), 400, 'INVALID_INPUT', 'cat of a folder')
  t.equal((await a('POST', '/api/files/rm', { path: '/e/' })).status, 200, 'rm')
  t.notOk(existsSync(join(dataDir, 'tmp', 'alice', 'e')), 'removed')
  await expectError(t, await a('POST', '/api/files/rm', { path: '/e/' }), 404, 'NOT_FOUND', 'rm of nothing')
})

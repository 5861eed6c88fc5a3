/**
 * An upload-only gateway user (can_upload and can_create_file, no can_read, no
 * can_delete) at the SFTP gateway with OpenSSH's `sftp` and `scp`: new files go up,
 * byte for byte; reading, listing, replacing an existing file, deleting, making
 * folders and renaming are PERMISSION_DENIED and change nothing (docs/gateways.md,
 * "Permissions").
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { remote, scp, sftpBatch } from './clients.js'
import { startGateway } from './fixture.js'

const UPLOAD_ONLY = { can_upload: true, can_create_file: true }

t.test('an upload-only user puts new files with sftp and scp, and is refused everything else', async (t) => {
  const { login, root, put, mkdir } = await startGateway(t, { permissions: UPLOAD_ONLY })
  put('secret.txt', 'not for the uploader')
  mkdir('inbox')
  const local = t.testdir()
  const payload = randomBytes(3 * 1024 * 1024 + 17)
  writeFileSync(join(local, 'up.bin'), payload)
  writeFileSync(join(local, 'small.txt'), 'small')

  const up = await sftpBatch(t, login, `put ${join(local, 'up.bin')} inbox/up.bin\n`)
  t.equal(up.code, 0, `sftp put works: ${up.stderr}`)
  t.same(readFileSync(join(root, 'inbox', 'up.bin')), payload, 'the upload, byte for byte')

  const viaScp = await scp(t, login, [join(local, 'small.txt'), remote(login, 'inbox/scp.txt')])
  t.equal(viaScp.code, 0, `scp upload works: ${viaScp.stderr}`)
  t.equal(readFileSync(join(root, 'inbox', 'scp.txt'), 'utf8'), 'small', 'the scp upload')

  const refusals = [
    `get secret.txt ${join(local, 'got.txt')}`,
    'ls inbox',
    `put ${join(local, 'small.txt')} secret.txt`, // replacing a file it may not delete
    'rm secret.txt',
    'mkdir newdir',
    'rename secret.txt moved.txt',
  ]
  for (const cmd of refusals) {
    const r = await sftpBatch(t, login, `${cmd}\n`)
    t.not(r.code, 0, `${cmd}: refused`)
    t.match(r.stderr, /Permission denied/i, `${cmd}: ${r.stderr.trim()}`)
  }
  const down = await scp(t, login, [remote(login, 'secret.txt'), join(local, 'scp-got.txt')])
  t.not(down.code, 0, 'scp download: refused')
  t.same(readdirSync(local).sort(), ['small.txt', 'up.bin'], 'nothing was downloaded')
  t.same(readdirSync(root).sort(), ['inbox', 'secret.txt'], 'nothing else changed')
  t.equal(readFileSync(join(root, 'secret.txt'), 'utf8'), 'not for the uploader', 'the existing file is intact')
  t.same(readdirSync(join(root, 'inbox')).sort(), ['scp.txt', 'up.bin'])
})

/**
 * An S3 key's bits, and its user's, changed through the admin API while an AWS SDK
 * client keeps using the key (docs/gateways.md, "Permissions"): the next request has
 * the new bits. A key patched to read-only is refused PutObject with AccessDenied and
 * writes nothing, and still reads; given its user's bits again, it writes. Taking a bit
 * from the user takes it from its keys too: a key never has more than its user.
 */
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { api } from '../../helpers/filegate.js'
import { adminToken } from '../../helpers/share.js'
import { startS3Gateway } from './fixture.js'

const refusal = (p: Promise<unknown>): Promise<string | null> =>
  p.then(
    () => null,
    (err: Error & { $metadata?: { httpStatusCode?: number } }) => `${err.name} ${err.$metadata?.httpStatusCode}`,
  )

t.test('a key patched to read-only is refused PutObject from the next request on; null gives it its user\'s bits again', async (t) => {
  const gw = await startS3Gateway(t)
  gw.mkdir('data')
  gw.put('data/kept.txt', 'kept')
  const key = await gw.addUser('carol')
  const s3 = gw.client({ key })
  const admin = api(gw.url, await adminToken(gw.url))
  const patch = async (path: string, body: unknown) => {
    const res = await admin('PATCH', `/admin/api/users/carol${path}`, {}, { body: JSON.stringify(body) })
    t.equal(res.status, 200, `PATCH ${JSON.stringify(body)}`)
  }

  await s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'first.txt', Body: 'first' }))
  t.equal(readFileSync(join(gw.root, 'data', 'first.txt'), 'utf8'), 'first', 'the key writes while it may')

  await patch(`/s3-keys/${key.accessKeyId}`, { read_only: true })
  t.equal(await refusal(s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'second.txt', Body: 'second' }))), 'AccessDenied 403', 'the same client, the next PutObject: AccessDenied')
  t.notOk(existsSync(join(gw.root, 'data', 'second.txt')), 'nothing was written')
  t.equal(await refusal(s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'kept.txt', Body: 'overwritten' }))), 'AccessDenied 403', 'nor over an existing object')
  t.equal(readFileSync(join(gw.root, 'data', 'kept.txt'), 'utf8'), 'kept', 'which is unchanged')
  const got = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'kept.txt' }))
  t.equal(await got.Body!.transformToString(), 'kept', 'it still reads')

  await patch(`/s3-keys/${key.accessKeyId}`, { permissions: null })
  await s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'second.txt', Body: 'second' }))
  t.equal(readFileSync(join(gw.root, 'data', 'second.txt'), 'utf8'), 'second', "given its user's bits again, it writes")

  // The user's bits bound every key of the user's.
  await patch('', { permissions: { can_upload: false } })
  t.equal(await refusal(s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'third.txt', Body: 'third' }))), 'AccessDenied 403', 'can_upload taken from the user: its key is refused too')
  t.notOk(existsSync(join(gw.root, 'data', 'third.txt')), 'nothing was written')
  await patch(`/s3-keys/${key.accessKeyId}`, { permissions: { can_upload: true } })
  t.equal(await refusal(s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'third.txt', Body: 'third' }))), 'AccessDenied 403', 'a key granted a bit its user lacks still cannot use it')
})

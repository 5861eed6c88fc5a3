/**
 * @module test/drivers/s3.test
 * The conformance suite against the s3 driver and a real S3 server (s3rver, on
 * 127.0.0.1 and a free port): every test gets a fresh, empty bucket. A second run
 * roots the driver in a prefix of a bucket ('bucket/some prefix'), where
 * directories are prefixes inside a prefix.
 */
import t from 'tap'
import type { Driver, OpContext } from '../../core/driver.js'
import { createS3Driver } from '../../workers/drivers/s3/index.js'
import { startS3rver } from '../servers/s3rver.js'
import { ctx, runDriverSuite } from './suite.js'

t.setTimeout(600_000) // a guard against a hang on a busy machine
const s3 = await startS3rver(t)
const spec = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true }

/** s3rver stores a key as a file named `<last segment>._S3rver_object`: 255-byte segments exceed the file system's name limit. */
const LONG_NAMES = {
  reason: 's3rver keeps each key as a file named after it plus a suffix, so a 255-byte name exceeds its file system limit (S3 itself allows keys of 1024 bytes)',
  tests: ['name ‹aaa…› (255 bytes)', 'name ‹世世世…› (255 bytes)'],
}

/**
 * s3rver lists a folder in time linear in its size and every upload lists its parent:
 * 1500 files in pages of 1000 took a minute. The driver asks pages of 100 keys
 * (`list_chunk`), so 250 files page through the same continuation tokens.
 */
const paging = { files: 250, pageSize: 100 }

await runDriverSuite(t, {
  name: 's3 (bucket root)',
  makeDriver: async () => createS3Driver({ ...spec, listChunk: paging.pageSize, root: await s3.bucket() }),
  skip: [LONG_NAMES],
  paging,
})

await runDriverSuite(t, {
  name: 's3 (prefix root)',
  makeDriver: async () => createS3Driver({ ...spec, listChunk: paging.pageSize, root: `${await s3.bucket()}/some prefix/in it` }),
  skip: [LONG_NAMES],
  paging,
})

t.test('removeTree: a prefix deleted with batched DeleteObjects (the bulk delete ops can use)', async (t) => {
  const d = (await createS3Driver({ ...spec, root: await s3.bucket() })) as Driver & { removeTree(c: OpContext, path: string): Promise<void> }
  t.teardown(() => d.close())
  const put = (path: string) => d.write(ctx(), path, (async function* () { yield new TextEncoder().encode(path) })())
  await d.mkdir(ctx(), '/keep')
  await d.mkdir(ctx(), '/keep/tree')
  await d.mkdir(ctx(), '/keep/tree/sub')
  for (let i = 0; i < 25; i++) await put(`/keep/tree/${i % 2 ? 'sub/' : ''}f${i}`)
  await put('/keep/other')
  await d.removeTree(ctx(), '/keep/tree')
  await t.rejects(d.stat(ctx(), '/keep/tree'), { code: 'ENOENT' }, 'the tree is gone')
  const left: string[] = []
  for await (const page of d.list(ctx(), '/keep')) left.push(...page.map((e) => e.name))
  t.same(left, ['other'], 'its siblings stay')
  await d.removeTree(ctx(), '/keep/other')
  t.match(await d.stat(ctx(), '/keep'), { kind: 'dir' }, 'the emptied parent stays a folder')
  await t.rejects(d.removeTree(ctx(), '/missing'), { code: 'ENOENT' })
})

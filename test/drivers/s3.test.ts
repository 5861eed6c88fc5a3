/**
 * @module test/drivers/s3.test
 * The conformance suite against the s3 driver and a real S3 server (s3rver, on
 * 127.0.0.1 and a free port): every test gets a fresh, empty bucket. A second run
 * roots the driver in a prefix of a bucket ('bucket/some prefix'), where
 * directories are prefixes inside a prefix.
 */
import t from 'tap'
import { createS3Driver } from '../../workers/drivers/s3.js'
import { startS3rver } from '../servers/s3rver.js'
import { runDriverSuite } from './suite.js'

const s3 = await startS3rver(t)
const spec = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true }

/** s3rver stores a key as a file named `<last segment>._S3rver_object`: 255-byte segments exceed the file system's name limit. */
const LONG_NAMES = {
  reason: 's3rver keeps each key as a file named after it plus a suffix, so a 255-byte name exceeds its file system limit (S3 itself allows keys of 1024 bytes)',
  tests: ['name ‹aaa…› (255 bytes)', 'name ‹世世世…› (255 bytes)'],
}

await runDriverSuite(t, {
  name: 's3 (bucket root)',
  makeDriver: async () => createS3Driver({ ...spec, root: await s3.bucket() }),
  skip: [LONG_NAMES],
})

await runDriverSuite(t, {
  name: 's3 (prefix root)',
  makeDriver: async () => createS3Driver({ ...spec, root: `${await s3.bucket()}/some prefix/in it` }),
  skip: [LONG_NAMES],
})

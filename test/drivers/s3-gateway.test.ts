/**
 * @module test/drivers/s3-gateway.test
 * The s3 driver's conformance suite against filegate's own S3 gateway (over a local
 * folder): the driver, written against S3 servers, and the gateway, written to be one,
 * test each other. Every test gets a fresh bucket; a second run roots the driver in a
 * prefix ('bucket/some prefix/in it').
 */
import { randomBytes } from 'node:crypto'
import { CreateBucketCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { createS3Driver } from '../../workers/drivers/s3/index.js'
import { startS3Gateway } from '../gateways/s3/fixture.js'
import { runDriverSuite } from './suite.js'

t.setTimeout(600_000)
const gw = await startS3Gateway(t)
const admin = gw.client()
const spec = { accessKeyId: gw.key.accessKeyId, secretAccessKey: gw.key.secretAccessKey, region: 'us-east-1', endpoint: gw.endpoint, forcePathStyle: true }
const bucket = async (): Promise<string> => {
  const name = `suite-${randomBytes(6).toString('hex')}`
  await admin.send(new CreateBucketCommand({ Bucket: name }))
  return name
}

/**
 * The driver asks listing pages of 100 keys (`list_chunk`), so 250 files page through the
 * gateway's continuation tokens (1500 files in pages of 1000 took a minute: every
 * upload's parent check lists the folder).
 */
const paging = { files: 250, pageSize: 100 }
// Bodies over 8 MiB go as multipart uploads (the driver's), served by gateways/s3/multipart/.
await runDriverSuite(t, { name: 's3 driver → S3 gateway (bucket root)', makeDriver: async () => createS3Driver({ ...spec, listChunk: paging.pageSize, root: await bucket() }), paging })
await runDriverSuite(t, {
  name: 's3 driver → S3 gateway (prefix root)',
  makeDriver: async () => createS3Driver({ ...spec, listChunk: paging.pageSize, root: `${await bucket()}/some prefix/in it` }),
  paging,
})

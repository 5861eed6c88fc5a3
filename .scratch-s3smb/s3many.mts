import { startS3rver } from '../test/servers/s3rver.ts'
import { S3Client, PutObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
const tds: (() => unknown)[] = []
const t = { teardown: (f: () => unknown) => tds.push(f) } as any
const s = await startS3rver(t)
const b = await s.bucket()
const c = new S3Client({ endpoint: s.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' })
let t0 = Date.now()
const N = 1500
let next = 0
await Promise.all(Array.from({ length: 16 }, async () => { while (next < N) { const i = next++; await c.send(new PutObjectCommand({ Bucket: b, Key: `many/file-${i}`, Body: 'x' })) } }))
console.log('puts', Date.now() - t0)
t0 = Date.now(); next = 0
await Promise.all(Array.from({ length: 16 }, async () => { while (next < N) { const i = next++; await c.send(new ListObjectsV2Command({ Bucket: b, Prefix: `many/file-${i}/`, MaxKeys: 1 })) } }))
console.log('lists prefix', Date.now() - t0)
t0 = Date.now(); next = 0
await Promise.all(Array.from({ length: 16 }, async () => { while (next < N) { const i = next++; await c.send(new ListObjectsV2Command({ Bucket: b, Prefix: `many/`, MaxKeys: 1 })) } }))
console.log('lists parent', Date.now() - t0)
c.destroy()
for (const f of tds.reverse()) await f()

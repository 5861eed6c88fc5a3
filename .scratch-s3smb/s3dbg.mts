import { startS3rver } from '/work/main/test/servers/s3rver.ts'
import { S3Client, PutObjectCommand, ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3'
const tds: (() => unknown)[] = []
const t = { teardown: (f: () => unknown) => tds.push(f) } as any
const s = await startS3rver(t)
const b = await s.bucket()
const c = new S3Client({ endpoint: s.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' })
await c.send(new PutObjectCommand({ Bucket: b, Key: 'd/', Body: Buffer.alloc(0) }))
await c.send(new PutObjectCommand({ Bucket: b, Key: 'd/inside', Body: 'x' }))
await c.send(new PutObjectCommand({ Bucket: b, Key: 'f', Body: '0123456789' }))
for (const mk of [1, 2, undefined]) {
  try { const o = await c.send(new ListObjectsV2Command({ Bucket: b, Prefix: 'd/', MaxKeys: mk })); console.log(mk, o.KeyCount, o.Contents?.map(x => x.Key)) } catch (e: any) { console.log('ERR', mk, e.name, e.message) }
}
try { const o = await c.send(new ListObjectsV2Command({ Bucket: b, Prefix: 'd/', Delimiter: '/' })); console.log('delim', o.KeyCount, o.Contents?.map(x => x.Key), o.CommonPrefixes) } catch (e: any) { console.log('ERR', e.name, e.message) }
const g = await c.send(new GetObjectCommand({ Bucket: b, Key: 'f', Range: 'bytes=0-0' }))
console.log('range0-0', g.ContentRange, await g.Body!.transformToString())
const g2 = await c.send(new GetObjectCommand({ Bucket: b, Key: 'f', Range: 'bytes=9-9' }))
console.log('range9-9', g2.ContentRange, await g2.Body!.transformToString())
console.log((await import('node:child_process')).execSync('find '+s.dir).toString())
c.destroy()
for (const f of tds.reverse()) await f()

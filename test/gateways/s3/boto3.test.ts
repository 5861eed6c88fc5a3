/**
 * The S3 gateway with boto3 (Debian's python3-boto3): buckets, put and get (with a range
 * and metadata), a paginated listing with a delimiter, copy, delete_objects; over a
 * local folder and the sftp backend.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runBoto3 } from '../../helpers/boto3.js'
import { BACKENDS, startS3Gateway } from './fixture.js'


const SCRIPT = String.raw`
out = {}
s3.create_bucket(Bucket='boto')
for i in range(25):
    s3.put_object(Bucket='boto', Key='logs/2024/%02d.log' % i, Body=b'line %d\n' % i)
s3.put_object(Bucket='boto', Key='top.txt', Body=b'0123456789', ContentType='text/plain')
out['range'] = s3.get_object(Bucket='boto', Key='top.txt', Range='bytes=3-5')['Body'].read().decode()
keys, prefixes = [], []
for page in s3.get_paginator('list_objects_v2').paginate(Bucket='boto', PaginationConfig={'PageSize': 4}):
    keys += [c['Key'] for c in page.get('Contents', [])]
for page in s3.get_paginator('list_objects_v2').paginate(Bucket='boto', Prefix='logs/', Delimiter='/'):
    prefixes += [p['Prefix'] for p in page.get('CommonPrefixes', [])]
out['keys'] = keys
out['prefixes'] = prefixes
s3.copy_object(Bucket='boto', Key='copy/top.txt', CopySource={'Bucket': 'boto', 'Key': 'top.txt'})
res = s3.delete_objects(Bucket='boto', Delete={'Objects': [{'Key': 'logs/2024/%02d.log' % i} for i in range(25)]})
out['deleted'] = len(res.get('Deleted', []))
try:
    s3.head_object(Bucket='boto', Key='logs/2024/00.log')
    out['head'] = 'found'
except s3.exceptions.ClientError as e:
    out['head'] = e.response['Error']['Code']
print(json.dumps(out))
`

for (const backend of BACKENDS) {
  t.test(`${backend}: boto3`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const r = await runBoto3({ endpoint: gw.endpoint, ...gw.key }, SCRIPT)
    t.equal(r.code, 0, r.stderr.slice(-2000))
    const out = JSON.parse(r.stdout) as { range: string; keys: string[]; prefixes: string[]; deleted: number; head: string }
    t.equal(out.range, '345', 'a range')
    t.same(out.keys, [...Array.from({ length: 25 }, (_, i) => `logs/2024/${String(i).padStart(2, '0')}.log`), 'top.txt'], 'every key over pages of 4')
    t.same(out.prefixes, ['logs/2024/'], 'a delimiter')
    t.equal(out.deleted, 25, 'delete_objects')
    t.equal(out.head, '404', 'gone')
    t.notOk(existsSync(join(gw.root, 'boto', 'logs')), 'and their prefix')
    t.equal(readFileSync(join(gw.root, 'boto', 'copy', 'top.txt'), 'utf8'), '0123456789', 'copy_object')
  })
}

/**
 * DeleteObjects' body is bounded before it is read and read in one pass: boto3 deletes
 * 1,000 keys full of characters XML escapes; 1,001 are MalformedXML; a 7 MB body of
 * `&amp;` is EntityTooLarge before a byte is parsed; a body inside the bound made of
 * entity references is answered, with the gateway answering others meanwhile; a DTD is
 * MalformedXML. Nothing is deleted by a refused request.
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { CreateBucketCommand, ListBucketsCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { MAX_DELETE_BODY } from '../../../gateways/s3/delete-request.js'
import { runBoto3 } from '../../helpers/boto3.js'
import { startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'


const SCRIPT = String.raw`
keys = json.loads(os.environ['KEYS'])
out = {}
r = s3.delete_objects(Bucket='del', Delete={'Objects': [{'Key': k} for k in keys]})
out['deleted'] = len(r.get('Deleted', []))
out['errors'] = r.get('Errors', [])
try:
    s3.delete_objects(Bucket='del', Delete={'Objects': [{'Key': 'k%d' % i} for i in range(1001)]})
    out['over'] = 'accepted'
except s3.exceptions.ClientError as e:
    out['over'] = e.response['Error']['Code']
print(json.dumps(out))
`

const md5 = (b: Buffer) => createHash('md5').update(b).digest('base64')

t.test('boto3: 1,000 keys with characters XML escapes are deleted; 1,001 are MalformedXML', async (t) => {
  const gw = await startS3Gateway(t)
  await gw.client().send(new CreateBucketCommand({ Bucket: 'del' }))
  const keys = Array.from({ length: 1000 }, (_, i) => `d/${i} & <${i}> 'q' "dq" é.txt`)
  for (const k of keys) gw.put(join('del', k), 'x')
  const r = await runBoto3({ endpoint: gw.endpoint, ...gw.key }, SCRIPT, { env: { KEYS: JSON.stringify(keys) }, timeoutMs: 180_000 })
  t.equal(r.code, 0, r.stderr.slice(-2000))
  const out = JSON.parse(r.stdout) as { deleted: number; errors: unknown[]; over: string }
  t.equal(out.deleted, 1000, 'all deleted')
  t.same(out.errors, [])
  t.notOk(existsSync(join(gw.root, 'del', 'd')), 'and their prefix')
  t.equal(out.over, 'MalformedXML', '1,001 keys: MalformedXML, as S3')
})

t.test('bounded bodies: 7 MB of &amp; is EntityTooLarge before parsing; entity-heavy bodies within the bound are answered; no DTD', async (t) => {
  const gw = await startS3Gateway(t)
  const s3 = gw.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'del' }))
  gw.put('del/keep.txt', 'kept')
  const post = (body: Buffer) => rawS3(gw.endpoint, gw.key, 'POST', '/del', { query: { delete: '' }, headers: { 'content-md5': md5(body), 'content-type': 'application/xml' }, body })

  const huge = Buffer.from(`<Delete><Object><Key>keep.txt${'&amp;'.repeat(1_400_000)}</Key></Object><Object><Key>keep.txt</Key></Object></Delete>`)
  t.ok(huge.length > 7_000_000)
  const refused = await post(huge)
  t.equal(refused.status, 400)
  t.match(refused.text, /<Code>EntityTooLarge<\/Code>/, 'over the bound: EntityTooLarge')
  t.ok(existsSync(join(gw.root, 'del', 'keep.txt')), 'nothing deleted')

  // Inside the bound, as many entity references as fit, in one key and in many: each answered,
  // and other requests are answered while they are.
  const oneKey = Buffer.from(`<Delete><Object><Key>${'&amp;'.repeat(Math.floor((MAX_DELETE_BODY - 100) / 5))}</Key></Object></Delete>`)
  const manyKeys = Buffer.from(`<Delete>${Array.from({ length: 1000 }, (_, i) => `<Object><Key>${'&#x26;&lt;'.repeat(100)}${i}</Key></Object>`).join('')}</Delete>`)
  t.ok(oneKey.length <= MAX_DELETE_BODY && manyKeys.length <= MAX_DELETE_BODY)
  const [a, b, list] = await Promise.all([post(oneKey), post(manyKeys), s3.send(new ListBucketsCommand({}))])
  t.equal(a.status, 200)
  t.match(a.text, /<Code>KeyTooLongError<\/Code>/, 'a key over 1 KiB once decoded: its own error in the result')
  t.equal(b.status, 200)
  t.equal((b.text.match(/<Deleted>/g) ?? []).length, 1000, '1,000 keys of references: each answered (none existed: deleted, as S3)')
  t.equal(list.Buckets?.length, 1, 'another request answered meanwhile')

  const dtd = Buffer.from('<!DOCTYPE d [<!ENTITY x "keep.txt">]><Delete><Object><Key>&x;</Key></Object></Delete>')
  const noDtd = await post(dtd)
  t.equal(noDtd.status, 400)
  t.match(noDtd.text, /<Code>MalformedXML<\/Code>/, 'a DTD: MalformedXML')
  const unknownEntity = await post(Buffer.from('<Delete><Object><Key>&nbsp;keep.txt</Key></Object></Delete>'))
  t.match(unknownEntity.text, /<Code>MalformedXML<\/Code>/, 'an entity XML does not define: MalformedXML')
  t.ok(existsSync(join(gw.root, 'del', 'keep.txt')), 'still nothing deleted')
  const cdata = await post(Buffer.from('<?xml version="1.0"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet><Object><Key><![CDATA[keep.txt]]></Key></Object></Delete>'))
  t.equal(cdata.status, 200)
  t.notOk(existsSync(join(gw.root, 'del', 'keep.txt')), 'a well-formed body (CDATA, a namespace, Quiet) deletes')
})

/**
 * S3 semantics clients rely on, with boto3 (Debian's python3-boto3) and the AWS SDK
 * (the aws CLI: semantics-aws-cli.test.ts): `encoding-type=url` leaves `/` alone (boto3's list_objects answers the
 * Prefix it was asked), an empty continuation token is no token, `aws-global` as a
 * LocationConstraint is the configured region, ListBuckets pages with `max-buckets`,
 * the standard object headers (Cache-Control, Expires, Content-Encoding,
 * Content-Disposition, Content-Language) are kept through PutObject, CopyObject and
 * multipart uploads, objects are served with `nosniff` and a sandbox CSP, and the
 * request log names routes, never a key.
 */
import { CreateBucketCommand, ListBucketsCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { createLogger } from '../../../front/log.js'
import { runBoto3 } from '../../helpers/boto3.js'
import { startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'


const SCRIPT = String.raw`
out = {}
s3.create_bucket(Bucket='sem', CreateBucketConfiguration={'LocationConstraint': 'aws-global'})
for k in ['foo/a b.txt', 'foo/plus+sign.txt', 'foo/sub/deep.txt', 'foo/caf\u00e9.txt', 'other.txt']:
    s3.put_object(Bucket='sem', Key=k, Body=b'x')
# list_objects sends encoding-type=url and decodes what comes back.
r = s3.list_objects(Bucket='sem', Prefix='foo/', Delimiter='/')
out['v1'] = {'Prefix': r['Prefix'], 'Keys': [c['Key'] for c in r.get('Contents', [])], 'CommonPrefixes': [p['Prefix'] for p in r.get('CommonPrefixes', [])]}
r = s3.list_objects_v2(Bucket='sem', Prefix='foo/', Delimiter='/', EncodingType='url')
out['v2'] = {'Prefix': r['Prefix'], 'Keys': [c['Key'] for c in r.get('Contents', [])], 'CommonPrefixes': [p['Prefix'] for p in r.get('CommonPrefixes', [])]}
r = s3.list_objects_v2(Bucket='sem', ContinuationToken='')
out['emptyToken'] = [c['Key'] for c in r.get('Contents', [])]

std = dict(CacheControl='max-age=60', Expires='Wed, 21 Oct 2037 07:28:00 GMT', ContentEncoding='gzip',
           ContentDisposition='attachment; filename="report.html"', ContentLanguage='de-CH')
def seen(h):
    return {k: h.get(k) for k in ['CacheControl', 'Expires', 'ContentEncoding', 'ContentDisposition', 'ContentLanguage', 'ContentType']}
def expires(h):
    # boto3 parses Expires into a datetime (ExpiresString in later versions).
    e = h.get('Expires')
    return e.strftime('%a, %d %b %Y %H:%M:%S GMT') if hasattr(e, 'strftime') else e
s3.put_object(Bucket='sem', Key='page.html', Body=b'<script>alert(1)</script>', ContentType='text/html', **std)
h = s3.head_object(Bucket='sem', Key='page.html')
g = s3.get_object(Bucket='sem', Key='page.html')
g['Body'].read()
out['put'] = {**seen(h), 'Expires': expires(h)}
out['get'] = {**seen(g), 'Expires': expires(g)}
raw = g['ResponseMetadata']['HTTPHeaders']
out['safety'] = [raw.get('x-content-type-options'), raw.get('content-security-policy')]
s3.copy_object(Bucket='sem', Key='copied.html', CopySource={'Bucket': 'sem', 'Key': 'page.html'})
h = s3.head_object(Bucket='sem', Key='copied.html')
out['copy'] = {**seen(h), 'Expires': expires(h)}
s3.copy_object(Bucket='sem', Key='replaced.html', CopySource={'Bucket': 'sem', 'Key': 'page.html'}, MetadataDirective='REPLACE', CacheControl='no-store', ContentType='text/plain')
h = s3.head_object(Bucket='sem', Key='replaced.html')
out['replace'] = {**seen(h), 'Expires': expires(h)}
up = s3.create_multipart_upload(Bucket='sem', Key='multi.bin', ContentType='application/gzip', **std)
part = s3.upload_part(Bucket='sem', Key='multi.bin', UploadId=up['UploadId'], PartNumber=1, Body=b'm' * 1024)
s3.complete_multipart_upload(Bucket='sem', Key='multi.bin', UploadId=up['UploadId'], MultipartUpload={'Parts': [{'ETag': part['ETag'], 'PartNumber': 1}]})
h = s3.head_object(Bucket='sem', Key='multi.bin')
out['multipart'] = {**seen(h), 'Expires': expires(h)}
print(json.dumps(out))
`

t.test('boto3: listing prefixes, an empty token, aws-global, standard headers through put, copy and multipart, nosniff', async (t) => {
  const lines: string[] = []
  const gw = await startS3Gateway(t, { logger: createLogger('info', (line) => lines.push(line)) })
  const r = await runBoto3({ endpoint: gw.endpoint, ...gw.key }, SCRIPT)
  t.equal(r.code, 0, r.stderr.slice(-3000))
  const out = JSON.parse(r.stdout) as Record<string, Record<string, unknown> & unknown[]>
  const listed = { Prefix: 'foo/', Keys: ['foo/a b.txt', 'foo/café.txt', 'foo/plus+sign.txt'], CommonPrefixes: ['foo/sub/'] }
  t.same(out.v1, listed, "list_objects(Prefix='foo/') answers Prefix 'foo/', keys and prefixes as stored")
  // Asked for explicitly, boto3 leaves the encoding to the caller: each byte encoded but `/`.
  t.same(out.v2, { Prefix: 'foo/', Keys: ['foo/a%20b.txt', 'foo/caf%C3%A9.txt', 'foo/plus%2Bsign.txt'], CommonPrefixes: ['foo/sub/'] }, 'list_objects_v2 with EncodingType=url: encoded, `/` left alone')
  t.equal((out.emptyToken as unknown as string[]).length, 5, 'an empty ContinuationToken lists from the start')
  const std = {
    CacheControl: 'max-age=60',
    Expires: 'Wed, 21 Oct 2037 07:28:00 GMT',
    ContentEncoding: 'gzip',
    ContentDisposition: 'attachment; filename="report.html"',
    ContentLanguage: 'de-CH',
  }
  t.same(out.put, { ...std, ContentType: 'text/html' }, 'head_object: the standard headers as put')
  t.same(out.get, { ...std, ContentType: 'text/html' }, 'get_object: likewise')
  t.same(out.copy, { ...std, ContentType: 'text/html' }, 'copy_object (COPY) keeps them')
  t.same(out.replace, { CacheControl: 'no-store', Expires: null, ContentEncoding: null, ContentDisposition: null, ContentLanguage: null, ContentType: 'text/plain' }, 'REPLACE takes the request\'s')
  t.same(out.multipart, { ...std, ContentType: 'application/gzip' }, 'a multipart upload keeps those of its creation')
  t.same(out.safety, ['nosniff', "sandbox; default-src 'none'"], 'stored HTML is served inert')

  const requests = lines.filter((l) => l.includes('"msg":"request"') && l.includes(`"port":${gw.port}`))
  t.ok(requests.length > 10, 'the S3 requests are logged')
  t.notOk(requests.some((l) => /page\.html|plus\+sign|deep\.txt|"\/sem/.test(l)), 'without a bucket or key')
  t.ok(requests.some((l) => l.includes('"path":"/{bucket}/{key}"')), 'with their route')
})

t.test('AWS SDK: ListBuckets pages with max-buckets and its continuation token', async (t) => {
  const gw = await startS3Gateway(t)
  const s3 = gw.client()
  const names = ['b-one', 'b-two', 'b-three', 'b-four', 'b-five']
  for (const n of names) await s3.send(new CreateBucketCommand({ Bucket: n }))
  const seen: string[] = []
  let token: string | undefined
  let pages = 0
  do {
    const page = await s3.send(new ListBucketsCommand({ MaxBuckets: 2, ...(token ? { ContinuationToken: token } : {}) }))
    pages++
    t.ok((page.Buckets ?? []).length <= 2, 'at most max-buckets per page')
    seen.push(...(page.Buckets ?? []).map((b) => b.Name!))
    token = page.ContinuationToken
  } while (token !== undefined && pages < 10)
  t.equal(pages, 3, 'five buckets in pages of two')
  t.same(seen, [...names].sort(), 'each bucket once, by name')
  const all = await s3.send(new ListBucketsCommand({}))
  t.equal(all.Buckets?.length, 5, 'without max-buckets: all')
  t.equal(all.ContinuationToken, undefined)
  const bad = await rawS3(gw.endpoint, gw.key, 'GET', '/', { query: { 'max-buckets': '0' } })
  t.match(bad, { status: 400 })
  t.match(bad.text, /<Code>InvalidArgument<\/Code>/)
  const empty = await rawS3(gw.endpoint, gw.key, 'GET', '/', { query: { 'continuation-token': '' } })
  t.equal(empty.status, 200, 'an empty continuation-token is no token')
  t.equal((empty.text.match(/<Bucket>/g) ?? []).length, 5)
})

/**
 * Listings of the S3 gateway (ListObjectsV2 and v1) against a model computed here from
 * the tree on disk: keys in UTF-8 byte order (names that sort between a folder and its
 * `/`, code points beyond U+FFFF), prefixes, delimiters (`/` and others), pages of any
 * size with continuation tokens, start-after and markers, url encoding, empty folders as
 * markers.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { CreateBucketCommand, ListObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import t from 'tap'
import { startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'

/** Every key of a bucket folder: files, and empty folders as `name/`. */
function keysOnDisk(dir: string, base = ''): string[] {
  const out: string[] = []
  const entries = readdirSync(dir, { withFileTypes: true })
  if (entries.length === 0 && base !== '') out.push(base)
  for (const e of entries) {
    if (e.isDirectory()) out.push(...keysOnDisk(join(dir, e.name), `${base}${e.name}/`))
    else out.push(base + e.name)
  }
  return out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
}

/** What S3 answers: the keys after `after` under `prefix`, rolled up at the delimiter, in order. */
function model(keys: readonly string[], prefix: string, delimiter: string | undefined, after: string): string[] {
  const out: string[] = []
  for (const k of keys) {
    if (!k.startsWith(prefix) || Buffer.compare(Buffer.from(k), Buffer.from(after)) <= 0) continue
    const i = delimiter ? k.indexOf(delimiter, prefix.length) : -1
    const item = i < 0 ? k : k.slice(0, i + delimiter!.length)
    if (out.at(-1) !== item) out.push(item)
  }
  return out
}

async function listAllV2(s3: S3Client, Bucket: string, Prefix: string, Delimiter: string | undefined, MaxKeys: number, StartAfter?: string) {
  const items: string[] = []
  let ContinuationToken: string | undefined
  let pages = 0
  do {
    const r = await s3.send(new ListObjectsV2Command({ Bucket, Prefix, Delimiter, MaxKeys, ContinuationToken, StartAfter }))
    const page = [...(r.Contents ?? []).map((c) => c.Key!), ...(r.CommonPrefixes ?? []).map((p) => p.Prefix!)]
    page.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    if (page.length > MaxKeys || r.KeyCount !== page.length) throw new Error(`a page of ${page.length} (KeyCount ${r.KeyCount}) for max ${MaxKeys}`)
    items.push(...page)
    ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined
    if (++pages > 1000) throw new Error('no end')
  } while (ContinuationToken)
  return items
}

async function listAllV1(s3: S3Client, Bucket: string, Prefix: string, Delimiter: string | undefined, MaxKeys: number) {
  const items: string[] = []
  let Marker: string | undefined
  for (;;) {
    const r = await s3.send(new ListObjectsCommand({ Bucket, Prefix, Delimiter, MaxKeys, Marker }))
    const page = [...(r.Contents ?? []).map((c) => c.Key!), ...(r.CommonPrefixes ?? []).map((p) => p.Prefix!)]
    page.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    items.push(...page)
    if (!r.IsTruncated) return items
    Marker = r.NextMarker ?? page.at(-1)
  }
}

t.test('listings match S3 order and paging, whatever the tree', async (t) => {
  const gw = await startS3Gateway(t)
  const s3 = gw.client()
  await s3.send(new CreateBucketCommand({ Bucket: 'tree' }))
  const files = [
    'a-b', 'a.txt', 'a!', 'a/x', 'a/y/z', 'a/y-z', 'a0', 'a/ b', 'b/c/d/e/f', 'b/c-d', 'b-c/d',
    'ü/ñ', 'ü-x', '日本/語', 'z🎉', 'z\uffff', 'z\ue000/q', 'sp ace/with+plus', 'pct%20/x', 'deep/1/2/3/4/5/6',
    ...Array.from({ length: 30 }, (_, i) => `many/f${String(i).padStart(2, '0')}`),
  ]
  for (const f of files) gw.put(`tree/${f}`, f)
  for (const d of ['empty', 'a/empty', 'many/zz-empty', 'b/c/d/empty2']) gw.mkdir(`tree/${d}`)
  const keys = keysOnDisk(join(gw.root, 'tree'))
  t.ok(keys.includes('empty/') && keys.includes('a/empty/'), 'the model has the markers')

  const whole = await listAllV2(s3, 'tree', '', undefined, 1000)
  t.same(whole, keys, 'every key, in UTF-8 byte order, empty folders as markers')

  const cases: [string, string | undefined][] = [['', undefined], ['', '/'], ['a', '/'], ['a/', '/'], ['a/y', undefined], ['b/c/', '/'], ['', '-'], ['a', '-'], ['many/', '/'], ['nothing/', '/'], ['many/f1', undefined], ['b/c/d/', undefined], ['', 'y']]
  for (const [prefix, delimiter] of cases) {
    const want = model(keys, prefix, delimiter, '')
    for (const max of [1, 3, 7, 1000]) {
      t.same(await listAllV2(s3, 'tree', prefix, delimiter, max), want, `v2 prefix ${JSON.stringify(prefix)} delimiter ${JSON.stringify(delimiter)} max ${max}`)
    }
    t.same(await listAllV1(s3, 'tree', prefix, delimiter, 4), want, `v1 prefix ${JSON.stringify(prefix)} delimiter ${JSON.stringify(delimiter)}`)
  }
  for (const after of ['a', 'a/y', 'a/y/z', 'b', 'm', 'many/f15', '日', 'zzz']) {
    t.same(await listAllV2(s3, 'tree', '', undefined, 5, after), model(keys, '', undefined, after), `start-after ${after}`)
  }
  t.same(await listAllV2(s3, 'tree', '', '/', 2, 'a/x'), model(keys, '', '/', 'a/x'), 'start-after inside a common prefix')

  // encoding-type=url (raw, as the SDK decodes it).
  const enc = await rawS3(gw.endpoint, gw.key, 'GET', '/tree', { query: { 'list-type': '2', prefix: 'sp', 'encoding-type': 'url' } })
  t.match(enc.text, '<Key>sp%20ace/with%2Bplus</Key>', 'keys url-encoded, `/` left alone (as S3)')
  t.match(enc.text, '<EncodingType>url</EncodingType>')
  const owner = await rawS3(gw.endpoint, gw.key, 'GET', '/tree', { query: { 'list-type': '2', prefix: 'a-b', 'fetch-owner': 'true' } })
  t.match(owner.text, /<Contents><Key>a-b<\/Key>.*<Owner><ID>[^<]+<\/ID><DisplayName>[^<]+<\/DisplayName><\/Owner>/s, 'fetch-owner: the gateway user')
  const noOwner = await rawS3(gw.endpoint, gw.key, 'GET', '/tree', { query: { 'list-type': '2', prefix: 'a-b' } })
  t.notMatch(noOwner.text, '<Owner>', 'v2 without fetch-owner: none')
  const bad = await rawS3(gw.endpoint, gw.key, 'GET', '/tree', { query: { 'list-type': '2', 'continuation-token': 'not a token!' } })
  t.equal(bad.status, 400)
  t.match(bad.text, '<Code>InvalidArgument</Code>')
  t.ok(bad.headers.get('x-amz-request-id'), 'errors carry x-amz-request-id')
  const badMax = await rawS3(gw.endpoint, gw.key, 'GET', '/tree', { query: { 'list-type': '2', 'max-keys': '-1' } })
  t.equal(badMax.status, 400)
  const noBucket = await rawS3(gw.endpoint, gw.key, 'GET', '/nobucket', { query: { 'list-type': '2' } })
  t.equal(noBucket.status, 404)
  t.match(noBucket.text, /<Code>NoSuchBucket<\/Code>.*<RequestId>/s)
})

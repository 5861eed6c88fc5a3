/**
 * S3 semantics with the aws CLI (v2): list-objects answers the Prefix it was asked
 * (`encoding-type=url` leaves `/` alone), create-bucket with `aws-global`, the standard
 * object headers through put-object and head-object, an empty `--continuation-token`,
 * and what the gateway would not keep (a public ACL, encryption at rest, tags, object
 * lock) refused rather than ignored.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { awsCli } from '../../helpers/aws-cli.js'
import { requireBinary, serverDir } from '../../servers/process.js'
import { type S3Gw, startS3Gateway } from './fixture.js'

requireBinary('/usr/bin/aws', 'awscli')
const aws = (gw: S3Gw, dir: string, args: readonly string[]) => awsCli({ endpoint: gw.endpoint, ...gw.key }, dir, ['--output', 'json', ...args])
// A dozen CLI runs of a few seconds each on a busy machine: a guard against hangs, not a speed.
t.setTimeout(300_000)


t.test('aws CLI: list-objects Prefix, mb with aws-global, standard headers, an empty token', async (t) => {
  const gw = await startS3Gateway(t)
  const dir = serverDir(t, 'aws-sem')
  const ok = async (args: readonly string[]) => {
    const r = await aws(gw, dir, args)
    t.equal(r.code, 0, `aws ${args.join(' ')}: ${r.stderr.slice(-1500)}`)
    return r.stdout.trim() === '' ? {} : (JSON.parse(r.stdout) as Record<string, unknown>)
  }
  await ok(['s3api', 'create-bucket', '--bucket', 'cli', '--create-bucket-configuration', 'LocationConstraint=aws-global'])
  const file = join(dir, 'body.txt')
  writeFileSync(file, 'hello')
  const tree = join(dir, 'tree')
  for (const k of ['foo/one.txt', 'foo/two words.txt', 'foo/sub/three.txt']) {
    mkdirSync(join(tree, k, '..'), { recursive: true })
    writeFileSync(join(tree, k), 'hello')
  }
  await ok(['s3', 'sync', '--only-show-errors', tree, 's3://cli/'])
  const listed = await ok(['s3api', 'list-objects', '--bucket', 'cli', '--prefix', 'foo/', '--delimiter', '/', '--no-paginate'])
  t.equal(listed.Prefix, 'foo/', 'Prefix as asked (the CLI asks for encoding-type=url and decodes)')
  t.same((listed.Contents as { Key: string }[]).map((c) => c.Key), ['foo/one.txt', 'foo/two words.txt'])
  t.same(listed.CommonPrefixes, [{ Prefix: 'foo/sub/' }])
  await ok([
    's3api', 'put-object', '--bucket', 'cli', '--key', 'doc.html', '--body', file, '--content-type', 'text/html', '--cache-control', 'max-age=5',
    '--content-disposition', 'inline', '--content-encoding', 'identity', '--content-language', 'fr', '--expires', '2037-10-21T07:28:00Z',
  ])
  const head = await ok(['s3api', 'head-object', '--bucket', 'cli', '--key', 'doc.html'])
  t.match(head, { CacheControl: 'max-age=5', ContentDisposition: 'inline', ContentEncoding: 'identity', ContentLanguage: 'fr', ContentType: 'text/html' }, 'head-object shows them')
  t.match(String(head.Expires), /2037/, 'and Expires')
  const v2 = await ok(['s3api', 'list-objects-v2', '--bucket', 'cli', '--continuation-token', ''])
  t.equal(v2.KeyCount, 4, 'an empty --continuation-token lists from the start')

  // What would not be kept is refused, never stored without it.
  await ok(['s3api', 'put-object', '--bucket', 'cli', '--key', 'private.txt', '--body', file, '--acl', 'private'])
  for (const extra of [['--acl', 'public-read'], ['--server-side-encryption', 'AES256'], ['--tagging', 'a=b'], ['--object-lock-mode', 'GOVERNANCE', '--object-lock-retain-until-date', '2037-01-01T00:00:00Z']]) {
    const r = await aws(gw, dir, ['s3api', 'put-object', '--bucket', 'cli', '--key', 'refused.txt', '--body', file, ...extra])
    t.not(r.code, 0, `put-object ${extra[0]}: refused`)
    t.match(r.stderr, /NotImplemented/, `${extra[0]}: NotImplemented`)
  }
  const none = await aws(gw, dir, ['s3api', 'head-object', '--bucket', 'cli', '--key', 'refused.txt'])
  t.not(none.code, 0, 'and nothing was stored')
})

/**
 * @module test/helpers/s3-client
 * The AWS SDK's S3 client as the tests use it: path-style, region us-east-1, destroyed
 * at the test's teardown. Checksums only where required by default (s3rver keeps an
 * aws-chunked body's framing as data; test/servers/s3rver.ts); `checksums: 'default'`
 * keeps the SDK's own (CRC32 trailers), as a user's client sends them.
 */
import { S3Client } from '@aws-sdk/client-s3'
import { Agent } from 'node:http'
import type { Test } from 'tap'

export interface S3ClientOptions {
  /** The SDK's retries: 1 to see each failure once, as it happened. */
  readonly maxAttempts?: number
  readonly checksums?: 'when-required' | 'default'
  /**
   * false: every request on a connection of its own. Where each request meets a fault
   * of its own (the fault matrix), an idle kept-alive connection the server closed meanwhile
   * would fail the next request before its fault lands.
   */
  readonly keepAlive?: boolean
}

export function s3Client(t: Test, endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }, o: S3ClientOptions = {}): S3Client {
  const c = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    ...(o.maxAttempts === undefined ? {} : { maxAttempts: o.maxAttempts }),
    ...(o.keepAlive === false ? { requestHandler: { httpAgent: new Agent({ keepAlive: false }) } } : {}),
    ...(o.checksums === 'default' ? {} : { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }),
  })
  t.teardown(() => c.destroy())
  return c
}

/**
 * @module gateways/s3/auth/checksums
 * The checksums S3 clients send with a payload (`x-amz-checksum-<name>`, as a header or
 * as a trailer of an aws-chunked body), computed while the payload streams: CRC32
 * (node:zlib), CRC32C (@aws-crypto/crc32c), SHA-1 and SHA-256 (node:crypto). Each is
 * the base64 of its big-endian bytes, as S3 writes it.
 */
import { createHash } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { Crc32c } from '@aws-crypto/crc32c'

export const CHECKSUMS = ['crc32', 'crc32c', 'sha1', 'sha256'] as const
export type ChecksumName = (typeof CHECKSUMS)[number]
/** Checksums S3 knows that this endpoint cannot verify: refused rather than taken unchecked. */
export const UNSUPPORTED_CHECKSUMS = ['crc64nvme'] as const

/** Bytes of each checksum, to tell a malformed value at once. */
export const CHECKSUM_BYTES: Readonly<Record<ChecksumName, number>> = { crc32: 4, crc32c: 4, sha1: 20, sha256: 32 }

export interface RunningChecksum {
  update(data: Uint8Array): void
  /** base64, as S3 writes it. */
  digest(): string
}

const be32 = (n: number): string => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n >>> 0)
  return b.toString('base64')
}

export function runningChecksum(name: ChecksumName): RunningChecksum {
  switch (name) {
    case 'crc32': {
      let v = 0
      return { update: (d) => void (v = crc32(d, v)), digest: () => be32(v) }
    }
    case 'crc32c': {
      const c = new Crc32c()
      return { update: (d) => void c.update(d), digest: () => be32(c.digest()) }
    }
    default: {
      const h = createHash(name)
      return { update: (d) => void h.update(d), digest: () => h.digest('base64') }
    }
  }
}

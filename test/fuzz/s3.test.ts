/** The S3 gateway's door, fuzzed with a fixed seed (test/fuzz/s3.ts). */
import t from 'tap'
import { fuzzInTap } from './ci.js'
import { s3Door } from './s3.js'

await fuzzInTap(t, s3Door, 150)

/** The SFTP gateway's door, fuzzed with a fixed seed (test/fuzz/sftp.ts). */
import t from 'tap'
import { fuzzInTap } from './ci.js'
import { sftpDoor } from './sftp.js'

await fuzzInTap(t, sftpDoor, 300)

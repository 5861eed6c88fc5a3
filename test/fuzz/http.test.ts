/** The HTTP API's door, fuzzed with a fixed seed (test/fuzz/http.ts). */
import t from 'tap'
import { fuzzInTap } from './ci.js'
import { httpDoor } from './http.js'

await fuzzInTap(t, httpDoor, 100)

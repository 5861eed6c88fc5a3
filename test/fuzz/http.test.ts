/** The HTTP API's door, fuzzed with a fixed seed (test/fuzz/http.ts). */
import t from 'tap'
import { fuzzInTap } from './ci.js'
import { httpProperties } from './http.js'

await fuzzInTap(t, async (w) => ({ properties: httpProperties(w) }), 60)

import fc from 'fast-check'
import { startWorld } from './world.js'
import { s3Door } from './s3.js'
import { outcomes } from './door.js'
const w = await startWorld()
const d = await s3Door(w)
const t0 = Date.now()
const r = await fc.check(d.properties[0]!.property, { seed: 1, numRuns: 100 })
console.log(Date.now() - t0, r.failed)
console.log([...outcomes].sort((a, b) => b[1] - a[1]))
await w.close(); process.exit(0)

/**
 * @module gateways/connection
 * The connection layer's face: what the composition root (front/) uses of it. Like a
 * door's folder, this one is imported through its index only (test/arch.test.ts), so
 * its parts can be rearranged without reaching past the folder.
 */
export { SharedViews } from './shared-views.js'
export { TransferLimits } from './transfer-limits.js'
export { openView, sweepStaging } from './view.js'
export { DoorMetrics } from './metrics.js'
export { Drain } from './drain.js'

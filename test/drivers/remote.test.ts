/**
 * The conformance suite through the worker pool: the local driver, called from the
 * main thread as a RemoteDriver whose every call is a typed message to a
 * worker and whose bytes cross as transferred buffers. Anything that does not survive
 * the trip (an error's code, a chunk's bytes, a cancelled stream) fails here.
 */
import t from 'tap'
import { WorkerPool } from '../../workers/pool.js'
import { RemoteDriver } from '../../workers/client.js'
import { runDriverSuite } from './suite.js'

const pool = new WorkerPool({ workers: 2, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())

runDriverSuite(t, {
  name: 'local through the pool',
  makeDriver: async (tt) =>
    new RemoteDriver(pool, { type: 'local', root: tt.testdir() }, { emptyDirs: true, atomicRename: true, rangeRead: true, mtimePrecisionMs: 1, refusedNameChars: '' }),
})

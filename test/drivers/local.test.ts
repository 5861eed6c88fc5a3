/**
 * @module test/drivers/local.test
 * The conformance suite against the local driver, each test in its own tap fixture folder.
 */
import t from 'tap'
import { createLocalDriver } from '../../workers/drivers/local.js'
import { runDriverSuite } from './suite.js'

void runDriverSuite(t, { name: 'local', makeDriver: async (t) => createLocalDriver({ root: t.testdir() }) })

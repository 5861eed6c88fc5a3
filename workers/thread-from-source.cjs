// Starts a pool thread from the TypeScript sources (tests, tsx): in a thread, tsx's hooks
// reach require() but not import(). Compiled runs start dist/workers/entry.js directly.
require('./entry.ts')

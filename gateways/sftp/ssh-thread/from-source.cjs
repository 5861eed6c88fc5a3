// Starts an SSH thread from the TypeScript sources (tests, tsx): in a thread, tsx's hooks
// reach require() but not import(). Compiled runs start dist/gateways/sftp/ssh-thread/entry.js directly.
require('./entry.ts')

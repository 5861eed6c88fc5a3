/** test/front/download.test.ts again, served by the node:http engine (test/node-engine/README.md). */
process.env.FILEGATE_HTTP_ENGINE = 'node'
await import('../front/download.test.js')

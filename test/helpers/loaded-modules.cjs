// Preloaded (`--require`) into a server under test: as the process exits, writes the file of every
// CommonJS module it loaded (an ESM import of a CommonJS package loads it through the same cache)
// to LOADED_MODULES_FILE, one per line.
// Worker threads load it too: only the main thread writes.
const { writeFileSync } = require('node:fs')
const { isMainThread } = require('node:worker_threads')

if (isMainThread) {
  process.on('exit', () => {
    writeFileSync(process.env.LOADED_MODULES_FILE, Object.keys(require.cache).join('\n'))
  })
}

// Preloaded (`--require`) into a server under test: as the process exits, writes the file of every
// CommonJS module it loaded (an ESM import of a CommonJS package loads it through the same cache)
// to LOADED_MODULES_FILE, one per line.
const { writeFileSync } = require('node:fs')

process.on('exit', () => {
  writeFileSync(process.env.LOADED_MODULES_FILE, Object.keys(require.cache).join('\n'))
})

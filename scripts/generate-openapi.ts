import { writeFileSync } from 'node:fs'
import { buildApp } from '../src/app.js'
import { DEFAULT_CONFIG } from '../src/config.js'

/** Regenerates openapi.yaml from the route schemas. */
const app = await buildApp({
  config: { ...DEFAULT_CONFIG, dbPath: ':memory:', adminPassword: 'generate-openapi-only' },
  logger: false,
})
writeFileSync(new URL('../openapi.yaml', import.meta.url), app.swagger({ yaml: true }))
await app.close()

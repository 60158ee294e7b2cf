import { onTestFinished } from 'vitest'
import type { Config } from '../../src/config.js'
import { createServices } from '../../src/services.js'
import type { Store } from '../../src/store/contract.js'
import { loopbackOnlyResolver, testConfig } from './app.js'

/** The real services on `store`, without Fastify, closed when the test ends. */
export async function testServices(store: Store, clock: () => Date, config: Partial<Config> = {}) {
  const log = { info: () => {}, warn: () => {}, error: () => {} }
  const services = await createServices({
    store,
    config: testConfig(config),
    clock,
    log,
    resolver: loopbackOnlyResolver,
  })
  onTestFinished(() => services.close())
  return services
}

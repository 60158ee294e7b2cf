import type { Store } from '../../src/store/contract.js'

/**
 * A store that says `stale` (changes may have been missed, as PostgreSQL's does while its
 * notification connection is down) whenever `flags.stale` is set; otherwise the store itself.
 */
export function staleable(real: Store): { store: Store; flags: { stale: boolean } } {
  const flags = { stale: false }
  const store = new Proxy(real, {
    get: (target, property) =>
      property === 'stale' ? flags.stale || target.stale : Reflect.get(target, property, target),
  })
  return { store, flags }
}

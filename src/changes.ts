import type { StoreChange } from './store/contract.js'

/**
 * A committed change. Local changes carry the stored record; changes heard from another instance
 * carry only the entity and id, and listeners reread what they need.
 */
export interface ChangeEvent<R = unknown> extends StoreChange {
  remote: boolean
  record?: R
}

/** The one change-event emitter every resource publishes to and every cache listens on. */
export class ChangeBus {
  private readonly listeners: ((event: ChangeEvent) => void)[] = []

  on(listener: (event: ChangeEvent) => void): void {
    this.listeners.push(listener)
  }

  /** Calls every listener synchronously, so the very next request sees the change. */
  emit(event: ChangeEvent): void {
    for (const listener of this.listeners) listener(event)
  }
}

/** The wall clock: the default wherever a clock is injected (tests pass one of their own). */
export const systemClock = (): Date => new Date()

/** Milliseconds since the epoch by `clock`: `Date.now` itself for the wall clock (no Date made). */
export function millisOf(clock: () => Date): () => number {
  return clock === systemClock ? Date.now : () => clock().getTime()
}

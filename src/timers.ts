export interface TimerLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/**
 * Runs `task` every `ms` in the background (never keeping the process alive), logging what it
 * removed at info and a failure at warn; returns the function that stops it.
 */
export function everyInterval(
  ms: number,
  task: () => Promise<number>,
  log: TimerLog,
  what: string,
): () => void {
  const timer = setInterval(() => {
    task().then(
      (purged) => {
        if (purged > 0) log.info({ purged }, `expired ${what} removed`)
      },
      (err: unknown) => log.warn({ err }, `expired ${what} purge failed`),
    )
  }, ms)
  timer.unref()
  return () => clearInterval(timer)
}

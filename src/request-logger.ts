import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, LevelWithSilent, LogFn } from 'pino'

type Level = Exclude<LevelWithSilent, 'silent'>

/** A logger that can tell whether a level would write (pino's loggers can). */
type Parent = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }

/** Whether `logger` writes lines of `level` (true when it cannot tell). */
export function writes(logger: Parent, level: Level): boolean {
  if (logger instanceof LazyChildLogger) return logger.writes(level)
  return logger.isLevelEnabled ? logger.isLevelEnabled(level) : true
}

/**
 * A request's logger, made only when a line is written. Most requests write nothing at the
 * default level (successful reads log at debug), and a pino child costs a few microseconds per
 * request, a large share of a cached list's time. Lines that are written carry the same bindings
 * (the request id) as a child made up front.
 */
class LazyChildLogger {
  private made: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
  ) {}

  private logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings)
    return this.made
  }

  writes(level: Level): boolean {
    return writes(this.made ?? this.parent, level)
  }

  get level(): string {
    return (this.made ?? this.parent).level
  }

  set level(level: string) {
    this.logger().level = level
  }

  // Each forwards its arguments as given: pino's overloads are kept by the LogFn type below.
  readonly fatal: LogFn = (...args: Parameters<LogFn>) => this.write('fatal', args)
  readonly error: LogFn = (...args: Parameters<LogFn>) => this.write('error', args)
  readonly warn: LogFn = (...args: Parameters<LogFn>) => this.write('warn', args)
  readonly info: LogFn = (...args: Parameters<LogFn>) => this.write('info', args)
  readonly debug: LogFn = (...args: Parameters<LogFn>) => this.write('debug', args)
  readonly trace: LogFn = (...args: Parameters<LogFn>) => this.write('trace', args)
  readonly silent: LogFn = () => {}

  private write(level: Level, args: Parameters<LogFn>): void {
    if (this.writes(level)) this.logger()[level](...args)
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options)
  }
}

/**
 * Fastify's `childLoggerFactory`: a lazy child unless the route asks for options of its own (a
 * level or serializers), which only a child made at once can honour.
 */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  for (const _ in options) return logger.child(bindings, options)
  return new LazyChildLogger(logger, bindings)
}

/** The query parameters the API defines (lists and logins): their values are shown in logs. */
const SHOWN_PARAMETERS = new Set(['method', 'filter', 'sort', 'limit', 'offset'])

/** A query key as sent, decoded (undefined when it is not valid percent-encoding). */
function queryKey(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/**
 * A request's URL as a log line carries it: the path, and of the query only the parameters the API
 * defines. Any other parameter, name and value, is replaced by `[redacted]`: clients put
 * credentials there (an OpenZiti enrollment's `?token=`, an `access_token`), and a request the
 * controller refuses or does not serve is still logged.
 */
export function loggedUrl(url: string): string {
  const start = url.indexOf('?')
  if (start === -1) return url
  const pairs = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const key = queryKey(eq === -1 ? pair : pair.slice(0, eq))
      return key !== undefined && SHOWN_PARAMETERS.has(key) ? pair : '[redacted]'
    })
  return `${url.slice(0, start)}?${pairs.join('&')}`
}

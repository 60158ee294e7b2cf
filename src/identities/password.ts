import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { AppError } from '../errors.js'

/** scrypt's cost N when `CTRL_PASSWORD_SCRYPT_N` is unset (with r 8: 16 MiB and about 40 ms). */
export const DEFAULT_SCRYPT_N = 16384

/** The largest cost `CTRL_PASSWORD_SCRYPT_N` takes. */
const MAX_SCRYPT_N = 131_072

/**
 * `CTRL_PASSWORD_SCRYPT_N`: scrypt's cost for new password hashes, a power of two from 1024 to
 * 131072 (OWASP's recommendation; 128 MiB a hash); unset, `DEFAULT_SCRYPT_N`. A stored hash keeps
 * the cost it was made with. Throws an Error naming the setting for any other value.
 */
export function scryptCost(setting: string | undefined): number {
  const text = setting?.trim()
  if (text === undefined || text === '') return DEFAULT_SCRYPT_N
  const n = /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN
  if (!(n >= 1024 && n <= MAX_SCRYPT_N && (n & (n - 1)) === 0)) {
    throw new Error(
      `CTRL_PASSWORD_SCRYPT_N: must be a power of two from 1024 to 131072, got "${setting}"`,
    )
  }
  return n
}

/**
 * Read once, as the module loads; a bad value gives the default here, and the configuration, which
 * checks the same setting, stops the start with its reason. The tests lower the cost
 * (vitest.config.ts) to save hashing time.
 */
function startCost(): number {
  try {
    return scryptCost(process.env.CTRL_PASSWORD_SCRYPT_N)
  } catch {
    return DEFAULT_SCRYPT_N
  }
}

const PARAMS = { N: startCost(), r: 8, p: 1 } as const
const KEY_LENGTH = 32

/**
 * How many password hashes may run at once. scrypt runs on libuv's thread pool (4 threads unless
 * UV_THREADPOOL_SIZE says otherwise), which the SQLite login batches' WAL sync and DNS lookups (a
 * JWKS fetch's) share; JWT signature checks have threads of their own. Each hash keeps a core busy
 * for its whole run, so the bound is half the cores: on a 2-core machine a bound of 2 let a flood
 * of passwords take every core from the main thread, and JWT logins fell to a fifth of their
 * speed. It also leaves one pool thread free, so that a flood of passwords on a machine of eight
 * cores or more cannot make every JWT login's WAL sync (or a JWKS fetch's lookup) wait behind
 * hashes. At least one, whatever the pool.
 */
export function hashConcurrency(cores: number, poolThreads: number): number {
  return Math.max(1, Math.min(Math.floor(cores / 2), poolThreads - 1))
}

/**
 * libuv's thread pool size, read from UV_THREADPOOL_SIZE as libuv reads it: 4 when unset, else its
 * leading integer (atoi), 0 meaning 1, at most 1024 (a negative one wraps past it, as an unsigned).
 */
export function poolThreads(setting = process.env.UV_THREADPOOL_SIZE): number {
  if (setting === undefined) return 4
  const n = Number.parseInt(setting, 10) || 0
  if (n === 0) return 1
  return n < 0 ? 1024 : Math.min(n, 1024)
}

const MAX_CONCURRENT_HASHES = hashConcurrency(availableParallelism(), poolThreads())
/**
 * Password checks waiting for a slot, at most: about six seconds of hashing on one slot. A flood
 * of passwords past it is answered 429 at once instead of queueing without bound (each waiter
 * holds its request and its memory while every later login, the admin's included, waits behind
 * it). Setting a password (an admin's write) always waits its turn.
 */
const MAX_WAITING_CHECKS = 128

/** A bound on concurrent work, with a bounded queue for the work that may be refused. */
export class HashSlots {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(
    private readonly concurrent: number,
    private readonly maxWaiting: number,
  ) {}

  /** Runs `work` in a slot; with `refusable`, throws 429 RATE_LIMITED when the queue is full. */
  async run<T>(work: () => Promise<T>, refusable: boolean): Promise<T> {
    if (this.running >= this.concurrent) {
      if (refusable && this.waiting.length >= this.maxWaiting) {
        throw new AppError('RATE_LIMITED', { headers: { 'retry-after': '1' } })
      }
      await new Promise<void>((r) => this.waiting.push(r))
    } else this.running++
    try {
      return await work()
    } finally {
      const next = this.waiting.shift()
      if (next)
        next() // the slot passes straight to the next waiter
      else this.running--
    }
  }
}

const slots = new HashSlots(MAX_CONCURRENT_HASHES, MAX_WAITING_CHECKS)

function derive(
  password: string,
  salt: Buffer,
  options: ScryptOptions,
  refusable: boolean,
): Promise<Buffer> {
  return slots.run(
    () =>
      new Promise((resolve, reject) => {
        // scrypt needs about 128 * N * r bytes: twice that, at least the 64 MiB it always had, at
        // most what the largest cost allowed needs (a stored hash asking more fails, as before).
        const need = 256 * (options.N ?? DEFAULT_SCRYPT_N) * (options.r ?? 8)
        const maxmem = Math.min(Math.max(64 * 1024 * 1024, need), 256 * MAX_SCRYPT_N * 8)
        scrypt(password, salt, KEY_LENGTH, { ...options, maxmem }, (err, key) =>
          err ? reject(err) : resolve(key),
        )
      }),
    refusable,
  )
}

/** Hashes a password with scrypt and a fresh 16-byte salt: `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, PARAMS, false)
  return [
    'scrypt',
    PARAMS.N,
    PARAMS.r,
    PARAMS.p,
    salt.toString('base64url'),
    key.toString('base64url'),
  ].join('$')
}

// Verified against when the username is unknown, so both failures cost the same time.
const DUMMY_HASH = `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_LENGTH).toString('base64url')}`

/**
 * Compares a password with a stored hash in constant time; a null hash never matches. Throws 429
 * RATE_LIMITED, before any hashing, while too many checks wait for a slot.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? DUMMY_HASH).split('$')
  const [scheme, n, r, p, salt, hash] = parts
  if (parts.length !== 6 || scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await derive(
    password,
    Buffer.from(salt, 'base64url'),
    {
      N: Number(n),
      r: Number(r),
      p: Number(p),
    },
    true,
  )
  return key.length === expected.length && timingSafeEqual(key, expected) && stored !== null
}

/** A random password for the bootstrap admin: 24 characters of base64url (144 bits). */
export function randomPassword(): string {
  return randomBytes(18).toString('base64url')
}

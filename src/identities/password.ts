import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'
import { availableParallelism } from 'node:os'

const PARAMS = { N: 16384, r: 8, p: 1 } as const
const KEY_LENGTH = 32

// scrypt runs on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise), which
// DNS lookups share (JWT signature checks have threads of their own): at most this many hashes
// run at once, and the others wait their turn here. Each hash keeps a core busy for its whole
// run, so the bound is half the cores (at least one): on a 2-core machine a bound of 2 let a
// flood of passwords take every core from the main thread, and JWT logins fell to a fifth of
// their speed.
const MAX_CONCURRENT_HASHES = Math.max(1, Math.floor(availableParallelism() / 2))
let running = 0
const waiting: (() => void)[] = []

async function withHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT_HASHES) await new Promise<void>((r) => waiting.push(r))
  else running++
  try {
    return await work()
  } finally {
    const next = waiting.shift()
    if (next)
      next() // the slot passes straight to the next waiter
    else running--
  }
}

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return withHashSlot(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password, salt, KEY_LENGTH, { ...options, maxmem: 64 * 1024 * 1024 }, (err, key) =>
          err ? reject(err) : resolve(key),
        )
      }),
  )
}

/** Hashes a password with scrypt and a fresh 16-byte salt: `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, PARAMS)
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

/** Compares a password with a stored hash in constant time; a null hash never matches. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? DUMMY_HASH).split('$')
  const [scheme, n, r, p, salt, hash] = parts
  if (parts.length !== 6 || scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  })
  return key.length === expected.length && timingSafeEqual(key, expected) && stored !== null
}

/** A random password for the bootstrap admin: 24 characters of base64url (144 bits). */
export function randomPassword(): string {
  return randomBytes(18).toString('base64url')
}

/**
 * Retries an assertion until it passes or `ms` have gone by (changes reach other instances through
 * notifications: the bound under test), then throws its last failure.
 */
export async function within(ms: number, check: () => Promise<void>): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    try {
      return await check()
    } catch (err) {
      if (Date.now() > end) throw err
      await new Promise((r) => setTimeout(r, 10))
    }
  }
}

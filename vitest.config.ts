import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Vitest's default in `run` is one worker fewer than the cores: one file at a time on the
    // 2-core CI, which then idles a core while a test waits on scrypt, PostgreSQL or a child
    // server. One file per core; not more, as the propagation bounds of test/e2e then miss.
    maxWorkers: Math.max(2, availableParallelism()),
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})

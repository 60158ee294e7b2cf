import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Vitest's default in `run` is one worker fewer than the cores: one file at a time on the
    // 2-core CI, which then idles a core while a test waits on scrypt, PostgreSQL or a child
    // server. One file per core: with more, the propagation bounds of test/e2e miss on 2 cores.
    // At most 4, so that the clusters of test/e2e (11 connections per server) stay within
    // PostgreSQL's default 100 connections.
    maxWorkers: Math.min(4, Math.max(2, availableParallelism())),
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})

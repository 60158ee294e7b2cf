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
    // scrypt's cost for the passwords tests set (the production default is 16 times it): about
    // 40 ms less for each app a test builds and each password login. Its own tests set it back.
    env: { CTRL_PASSWORD_SCRYPT_N: '1024' },
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})

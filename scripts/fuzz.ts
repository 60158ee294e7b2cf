import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/**
 * The long run of the generated-request test: `npm run fuzz` (5,000 requests and a new seed),
 * or `FUZZ_RUNS=20000 FUZZ_SEED=123 npm run fuzz` to choose (a failing seed replays exactly).
 */
const runs = process.env.FUZZ_RUNS ?? '5000'
const seed = process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31))
process.stdout.write(`fuzz: ${runs} requests, seed ${seed}\n`)
const root = fileURLToPath(new URL('..', import.meta.url))
const result = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', 'test/fuzz/generated.test.ts'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed } },
)
process.exit(result.status ?? 1)

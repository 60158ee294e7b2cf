import { execFileSync } from 'node:child_process'
import { join } from 'node:path'

/**
 * Builds dist/ once before any test file runs: the end-to-end tests start the built server as
 * `npm start` does, and several files building it at once would write the same files together.
 */
export default function setup(): void {
  const root = new URL('../', import.meta.url).pathname
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    { cwd: root, stdio: 'inherit' },
  )
}

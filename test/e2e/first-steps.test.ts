import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Started, startServer, stopServer } from '../helpers/server-process.js'

const run = promisify(execFile)
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The shell blocks of the README's "First steps" section, in order. */
function firstSteps(): { start: string; commands: string } {
  const section = readme.split('\n## First steps\n')[1]?.split('\n## ')[0] ?? ''
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '')
  const [start, commands] = blocks
  if (start === undefined || commands === undefined)
    throw new Error('First steps has no two sh blocks')
  return { start, commands }
}

describe("the README's first steps", () => {
  let server: Started
  let dir: string
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'first-steps-'))
    // The start command's settings, on a free port and a database of this test's own.
    const password = /CTRL_ADMIN_PASSWORD='([^']+)'/.exec(firstSteps().start)?.[1] ?? ''
    server = await startServer({
      CTRL_ADMIN_PASSWORD: password,
      CTRL_DB: join(dir, 'controller.db'),
    })
  })
  afterAll(async () => {
    await stopServer(server)
    rmSync(dir, { recursive: true, force: true })
  })

  it('take a new user from npm start to a JWT login and the client list', async () => {
    const { start, commands } = firstSteps()
    expect(start).toMatch(/npm start/)
    // Exactly the README's commands; only the address is this test's server.
    const script = commands.replace(/^CTRL=http:\/\/127\.0\.0\.1:1280$/m, `CTRL=${server.base}`)
    expect(script).not.toEqual(commands)
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '' },
      timeout: 60_000,
    })
    // Each curl prints one JSON body: signer, identity, API session, client list.
    const bodies = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(bodies).toHaveLength(4)
    const [signer, identity, session, list] = bodies
    expect(signer.data.id).toEqual(expect.any(String))
    expect(identity.data.id).toEqual(expect.any(String))
    expect(session.data.identity.name).toBe('alice')
    expect(session.data.identityId).toBe(identity.data.id)
    expect(list.data).toEqual([
      {
        id: signer.data.id,
        name: 'my-idp',
        externalAuthUrl: 'https://idp.example/login',
        _links: { self: { href: `./external-jwt-signers/${signer.data.id}` } },
      },
    ])
  })
})

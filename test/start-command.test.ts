import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('../', import.meta.url).pathname

/** `npm start`'s command: its `NAME=value` words, its Node options and its script. */
function startCommand(): { env: string[]; options: string[]; script: string } {
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
    scripts: { start: string }
  }
  const words = pkg.scripts.start.split(/\s+/)
  const node = words.indexOf('node')
  return {
    env: words.slice(0, node),
    options: words.slice(node + 1, -1),
    script: words[words.length - 1] as string,
  }
}

/** The README's systemd unit: its `Environment=` words and `ExecStart=` command. */
function serviceUnit(): { env: string[]; exec: string[] } {
  const readme = readFileSync(`${root}README.md`, 'utf8')
  const unit = /```ini\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
  const line = (key: string) =>
    new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1]?.trim().split(/\s+/) ?? []
  return { env: line('Environment'), exec: line('ExecStart') }
}

describe('how the server is started', () => {
  it('the README service unit runs it with the settings of npm start', () => {
    const start = startCommand()
    expect(start.options).toContain('--no-memory-reducer')
    const unit = serviceUnit()
    expect(unit.env).toEqual(start.env)
    expect(unit.exec.slice(1)).toEqual([...start.options, start.script])
  })

  it('this Node accepts every option of npm start', async () => {
    const { stdout } = await run(
      process.execPath,
      [...startCommand().options, '-e', 'process.stdout.write("started")'],
      { cwd: root, env: { PATH: process.env.PATH ?? '' } },
    )
    expect(stdout).toBe('started')
  })
})

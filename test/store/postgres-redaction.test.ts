import { describe, expect, it } from 'vitest'
import { redactMessage, redactUrl } from '../../src/store/postgres/connection.js'

describe('CTRL_DB passwords in messages', () => {
  it.each([
    ['postgres://ctrl:s3cret-pw@db.example:5432/ctrl', ['s3cret-pw']],
    // Accepted by the driver, refused by `new URL`: no host before the path.
    ['postgres://ctrl:s3cret-pw@/ctrl?host=/run/postgresql', ['s3cret-pw']],
    // A broken escape in the password, and the same in a query parameter.
    ['postgres://ctrl:pw%zz-s3cret@db/ctrl?password=q%zz-s3cret', ['pw%zz-s3cret', 'q%zz-s3cret']],
    [
      'postgres://db/ctrl?sslpassword=key-s3cret&password=query-s3cret',
      ['key-s3cret', 'query-s3cret'],
    ],
    // Escaped in the URL, shown decoded by a message.
    ['postgres://ctrl:p%40ss%20word@db/ctrl', ['p@ss word', 'p%40ss%20word']],
    ['postgres://ctrl:a@b@db/ctrl', ['a@b']],
    // An @ after the host, in the query or the fragment.
    ['postgres://ctrl:pw-s3cret@db/ctrl?application_name=ops@host', ['pw-s3cret']],
    ['postgres://ctrl:pw-s3cret@db/ctrl#frag@x', ['pw-s3cret']],
    // A + and an escape: the user info decodes + as itself, a query value either way.
    ['postgres://ctrl:a+b%40c@db/ctrl', ['a+b@c']],
    ['postgres://db/ctrl?password=a+b%40c', ['a+b@c', 'a b@c']],
  ])('hides the passwords of %s', (url, secrets) => {
    for (const secret of secrets) {
      const message = `connect failed for ${secret} (as ${secret}) at db`
      const out = redactMessage(message, url)
      expect(out).not.toContain(secret)
      expect(out).toContain('connect failed for ***')
      expect(out).toContain('at db')
    }
  })

  it('hides a password holding an unescaped slash, and no stray text of a query', () => {
    expect(redactMessage('auth failed for pa/ss', 'postgres://ctrl:pa/ss@db/ctrl')).toBe(
      'auth failed for ***',
    )
    // The user info is before the host: a query's ':' and '@' name no password.
    const url = 'postgres://ctrl@db/ctrl?application_name=a:b@c'
    expect(redactMessage('connection refused by db', url)).toBe('connection refused by db')
  })

  it('leaves a message alone when the URL holds no password', () => {
    const url = 'postgres://ctrl@db.example:5432/ctrl?application_name=ctrl'
    expect(redactMessage('connection refused: db.example:5432', url)).toBe(
      'connection refused: db.example:5432',
    )
  })

  it('shows the URL with its passwords hidden, or not at all when it cannot be read', () => {
    expect(redactUrl('postgres://ctrl:s3cret@db/ctrl?password=q&sslmode=require')).toBe(
      'postgres://ctrl:***@db/ctrl?password=***&sslmode=require',
    )
    // One the driver reads and URL does not: shown as unreadable, never with its password.
    expect(redactUrl('postgres://ctrl:s3cret@/ctrl?host=/run/postgresql')).toBe(
      'postgres://(unparseable URL)',
    )
  })
})

import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { BatchWriter } from '../../src/store/batch-writer.js'

function setup() {
  const db = new Database(':memory:')
  db.exec('CREATE TABLE t (id TEXT PRIMARY KEY)')
  const insert = db.prepare<[string]>('INSERT INTO t (id) VALUES (?)')
  let commits = 0
  const count = () => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n
  const countCommits = () => commits
  // Spy on the transactions the writer runs (a real database underneath).
  const original = db.transaction.bind(db)
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    const tx = original(fn)
    return Object.assign((...args: unknown[]) => {
      commits++
      return tx(...args)
    }, tx)
  }) as typeof db.transaction
  const writer = new BatchWriter<string>(db, (id) => insert.run(id))
  return { db, writer, count, countCommits }
}

describe('BatchWriter', () => {
  it('commits items added in the same turn together, and settles each only once stored', async () => {
    const { writer, count, countCommits } = setup()
    const pending = ['a', 'b', 'c'].map((id) => writer.add(id))
    expect(count()).toBe(0)
    await Promise.all(pending)
    expect(count()).toBe(3)
    expect(countCommits()).toBe(1)
    await writer.add('d')
    expect(countCommits()).toBe(2)
  })

  it('fails only the item whose write fails', async () => {
    const { writer, count } = setup()
    await writer.add('dup')
    const results = await Promise.allSettled(['x', 'dup', 'y'].map((id) => writer.add(id)))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(count()).toBe(3)
  })
})

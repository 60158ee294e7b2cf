import { describe, expect, it, onTestFinished } from 'vitest'
import { createMetrics, type Metrics } from '../../src/metrics.js'
import { createPool } from '../../src/store/postgres/connection.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { parseExposition } from './scrape.js'

async function statements(metrics: Metrics): Promise<number | undefined> {
  const samples = parseExposition((await metrics.scrape()).body)
  return samples.find((s) => s.name === 'ctrl_db_statements_total')?.value
}

async function testPool() {
  const url = await createTestDatabase()
  const pool = createPool({ url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 })
  onTestFinished(() => pool.end())
  return pool
}

describe.skipIf(!PG_URL)('ctrl_db_statements_total', () => {
  it('counts every statement the pool sends: through the pool, on a checked-out client, failed ones too', async () => {
    const metrics = createMetrics()
    const pool = await testPool()
    expect(await statements(metrics)).toBe(0)
    await pool.query('SELECT 1')
    await pool.query('SELECT $1::int AS n', [2])
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      await client.query({ text: 'SELECT 3', rowMode: 'array' })
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    expect(await statements(metrics)).toBe(5)
    await expect(pool.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' })
    expect(await statements(metrics)).toBe(6)
  })

  it('counts in each registry from its creation on', async () => {
    const pool = await testPool()
    const first = createMetrics()
    await pool.query('SELECT 1')
    const second = createMetrics()
    await pool.query('SELECT 1')
    await pool.query('SELECT 1')
    expect(await statements(first)).toBe(3)
    expect(await statements(second)).toBe(2)
    // A scrape only reads the count: scraping again adds nothing.
    expect(await statements(second)).toBe(2)
  })
})

import pg from 'pg'

/**
 * Cuts every instance's listening connection to the database of `url`, then runs `statements`
 * (plain SQL, no NOTIFY: changes no instance is told of). Resolves with how many were cut.
 */
export async function cutListenersThen(
  url: string,
  statements: [text: string, values: unknown[]][],
): Promise<number> {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  try {
    const cut = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'ext-jwt-controller-listen' AND datname = current_database()`,
    )
    for (const [text, values] of statements) await admin.query(text, values)
    return cut.rowCount ?? 0
  } finally {
    await admin.end()
  }
}

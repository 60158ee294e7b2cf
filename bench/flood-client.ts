/**
 * The password flood as a process of its own (`node dist/bench/flood-client.js <url> <clients>`),
 * so that its clients do not share the bench's event loop with the load generator being measured.
 * Each client sends wrong passwords, each under a fresh user name (no name reaches its backoff,
 * every attempt costs a full scrypt hash), until SIGTERM; it then prints the attempts sent.
 */
const [url, count] = [process.argv[2] ?? '', Number(process.argv[3] ?? 64)]
let active = true
let serial = 0
const client = async () => {
  let n = 0
  while (active) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        username: `flood-${process.pid}-${serial++}`,
        password: 'wrong-pw-1',
      }),
    }).catch(() => undefined)
    await res?.arrayBuffer()
    n++
  }
  return n
}
const clients = Array.from({ length: count }, client)
process.stdout.write('started\n')
process.on('SIGTERM', async () => {
  active = false
  const sent = (await Promise.all(clients)).reduce((a, b) => a + b, 0)
  process.stdout.write(`${sent}\n`)
  process.exit(0)
})

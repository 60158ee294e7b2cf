import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, type Paired, paired, type Result } from './common.js'
import { type Controller, startController } from './controller.js'
import type { Goals } from './goals.js'
import { startBareServer } from './processes.js'

export type Run = (round: number) => Promise<Result>

/** A route measured for a goal, warmed up in the first round only. */
export const route =
  (url: string, pid: number, headers?: Record<string, string>): Run =>
  (round) =>
    measure(url, { pid, warmup: round === 0, ...(headers ? { headers } : {}) })

/** A management route of `ctrl` as the admin, with a session taken right before the rounds. */
async function asAdmin(ctrl: Controller, path: string): Promise<Run> {
  const session = await ctrl.adminSession()
  return route(`${ctrl.base}${path}`, ctrl.pid, { 'zt-session': session })
}

export interface ListFigures {
  client: Paired
  signers: Paired
  identities: Paired
}

/** Seeds the 20 identities the identity list's default page (10) is taken from. */
async function seedIdentities(ctrl: Controller): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await ctrl.call('POST', '/edge/management/v1/identities', { name: `user-${i}` })
  }
}

/** A controller on `db` as the list goals read it: 100 signers and the 20 identities. */
export async function listsController(db: string): Promise<Controller> {
  const ctrl = await startController(db, { signers: 100 })
  await seedIdentities(ctrl)
  return ctrl
}

/** The three list goals of `ctrl` (seeded with 100 signers and 20 identities) against `bare`. */
export async function lists(ctrl: Controller, bare: Run, label: string): Promise<ListFigures> {
  const client = await paired(
    `${label} client signer list (default page: the 10 of 100 signers with an externalAuthUrl)`,
    'bare',
    bare,
    route(`${ctrl.base}/edge/client/v1/external-jwt-signers`, ctrl.pid),
  )
  const signers = await paired(
    `${label} management signer list (default page of 10, JWKS signers)`,
    'bare',
    bare,
    await asAdmin(ctrl, '/edge/management/v1/external-jwt-signers'),
  )
  const identities = await paired(
    `${label} management identity list (default page of 10)`,
    'bare',
    bare,
    await asAdmin(ctrl, '/edge/management/v1/identities'),
  )
  return { client, signers, identities }
}

export interface CertPageFigures {
  /** The controller's certificate page against the bare route. */
  page: Paired
  /** A bare route answering the very same bytes against the bare route: the page size's ceiling. */
  ceiling: Paired
  bytes: number
}

/**
 * The management signer list of a controller started by `startCertController`, against `bare`;
 * and, as its ceiling, a bare Fastify route of its own process answering the same bytes. A page of
 * certificates is large, and the load generator, on the same cores, pays for every byte it reads:
 * the ceiling shows what a page that size allows at all, whatever the server does to build it.
 */
export async function certPage(
  ctrl: Controller,
  bare: Run,
  label: string,
): Promise<CertPageFigures> {
  const path = '/edge/management/v1/external-jwt-signers'
  const res = await fetch(`${ctrl.base}${path}`, {
    headers: { 'zt-session': await ctrl.adminSession() },
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`bench: the certificate page answered ${res.status}`)
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-page-'))
  const file = join(dir, 'page.json')
  writeFileSync(file, body)
  const server = await startBareServer({ PAGE: file })
  const url = server.url
  try {
    const ceiling = await paired(
      `bare route answering the same ${body.length} bytes (ceiling)`,
      'bare',
      bare,
      route(`${url}/page`, server.pid),
    )
    const page = await paired(
      `${label} management signer list (default page of 10, certificate signers)`,
      'bare',
      bare,
      await asAdmin(ctrl, path),
    )
    return { page, ceiling, bytes: body.length }
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The certificate page's goal (0.4 of the bare route), with its ceiling beside it. */
export function certGoal(goals: Goals, label: string, f: CertPageFigures): void {
  goals.ratio(`${label} management signer list, certificate page / bare`, f.page, 0.4)
  goals.note(
    `${label} certificate page (${f.bytes} bytes): a bare route answering the same bytes ${f.ceiling.median.toFixed(2)} of the bare route (lowest ${f.ceiling.lowest.toFixed(2)}); the controller ${(f.page.median / f.ceiling.median).toFixed(2)} of that ceiling`,
  )
}

import { measure, type Paired, paired, type Result } from './common.js'
import type { Controller } from './controller.js'

export type Run = (round: number) => Promise<Result>

/** A route measured for a goal, warmed up in the first round only. */
export const route =
  (url: string, pid: number, headers?: () => Record<string, string>): Run =>
  (round) =>
    measure(url, { pid, warmup: round === 0, ...(headers ? { headers } : {}) })

/** A management route of `ctrl` as the admin, with a session taken right before the rounds. */
async function asAdmin(ctrl: Controller, path: string): Promise<Run> {
  const session = await ctrl.adminSession()
  return route(`${ctrl.base}${path}`, ctrl.pid, () => ({ 'zt-session': session }))
}

export interface ListFigures {
  client: Paired
  signers: Paired
  identities: Paired
}

/** Seeds the 20 identities the identity list's default page (10) is taken from. */
export async function seedIdentities(ctrl: Controller): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await ctrl.call('POST', '/edge/management/v1/identities', { name: `user-${i}` })
  }
}

/** The three list goals of `ctrl` (seeded with 100 signers and 20 identities) against `bare`. */
export async function lists(ctrl: Controller, bare: Run, label: string): Promise<ListFigures> {
  const client = await paired(
    `${label} client signer list (default page, 100 signers)`,
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

/** The management signer list of a controller started by `startCertController`, against `bare`. */
export async function certPage(ctrl: Controller, bare: Run, label: string): Promise<Paired> {
  return paired(
    `${label} management signer list (default page of 10, certificate signers)`,
    'bare',
    bare,
    await asAdmin(ctrl, '/edge/management/v1/external-jwt-signers'),
  )
}

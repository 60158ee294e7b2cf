import { AppError, caughtMessage } from '../errors.js'
import type { IntegrityFacts, Store } from '../store/contract.js'

/** The controller's own rules, checked on top of the database engine's: one line per problem. */
export function ruleProblems(facts: IntegrityFacts): string[] {
  const problems: string[] = []
  const policies = new Set(facts.policyIds)
  const signers = new Set(facts.signerIds)
  for (const i of facts.identities) {
    if (!policies.has(i.authPolicyId)) {
      problems.push(`identity ${i.id} uses auth policy ${i.authPolicyId}, which does not exist`)
    }
  }
  for (const r of facts.policySignerRefs) {
    if (!signers.has(r.signerId)) {
      problems.push(
        `auth policy ${r.policyId} names signer ${r.signerId} in ${r.field}, which does not exist`,
      )
    }
  }
  for (const r of facts.signerEnrollPolicies) {
    if (!policies.has(r.policyId)) {
      problems.push(
        `signer ${r.signerId} enrolls into auth policy ${r.policyId} (enrollAuthPolicyId), which does not exist`,
      )
    }
  }
  if (!facts.identities.some((i) => i.isAdmin && !i.disabled)) {
    problems.push('no enabled admin identity: nobody can manage the controller')
  }
  const byExternalId = new Map<string, string[]>()
  for (const i of facts.identities) {
    if (i.externalId === null) continue
    byExternalId.set(i.externalId, [...(byExternalId.get(i.externalId) ?? []), i.id])
  }
  for (const [externalId, ids] of byExternalId) {
    if (ids.length > 1)
      problems.push(`externalId "${externalId}" is held by identities ${ids.join(', ')}`)
  }
  return problems
}

/** Every problem of a store: its engine's checks first, then the controller's rules. */
export async function storeProblems(store: Store): Promise<string[]> {
  return [...(await store.storageProblems()), ...ruleProblems(await store.integrityFacts())]
}

/** Go's zero time, which the edge API reports for a check that has not run. */
const NEVER = '0001-01-01T00:00:00.000Z'

/** The edge API's `dataIntegrityCheckDetails`. */
export interface IntegrityResults {
  inProgress: boolean
  fixingErrors: boolean
  tooManyErrors: boolean
  startTime: string
  endTime: string
  error: string
  results: { description: string; fixed: boolean }[]
}

/** Problems listed at most; beyond, `tooManyErrors` says the list was cut. */
const MAX_RESULTS = 1000

/**
 * OpenZiti's data integrity check: `start` begins a run in the background (one at a time: another
 * while it runs is 429 `RATE_LIMITED`), `results` reports the last run, or the one in progress.
 */
export class IntegrityCheck {
  private state: IntegrityResults = {
    inProgress: false,
    fixingErrors: false,
    tooManyErrors: false,
    startTime: NEVER,
    endTime: NEVER,
    error: '',
    results: [],
  }
  private running: Promise<void> | undefined

  constructor(
    private readonly store: Store,
    private readonly clock: () => Date,
    private readonly log: { info(obj: object, msg: string): void },
  ) {}

  /** Starts a run; resolves once it started (not once it ended). */
  start(): void {
    if (this.running)
      throw new AppError('RATE_LIMITED', { message: 'an integrity check is running' })
    this.state = { ...this.state, inProgress: true, startTime: this.iso(), endTime: NEVER }
    this.running = this.run().finally(() => {
      this.running = undefined
    })
  }

  /** Resolves when the run in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.running
  }

  results(): IntegrityResults {
    return this.state
  }

  private async run(): Promise<void> {
    let problems: string[] = []
    let error = ''
    try {
      problems = await storeProblems(this.store)
    } catch (err) {
      // The answer says only that it failed; the driver's words go to the log.
      error = 'the check could not read the database'
      this.log.info({ reason: caughtMessage(err) }, 'integrity check failed')
    }
    this.state = {
      ...this.state,
      inProgress: false,
      endTime: this.iso(),
      error,
      tooManyErrors: problems.length > MAX_RESULTS,
      results: problems.slice(0, MAX_RESULTS).map((description) => ({ description, fixed: false })),
    }
    this.log.info({ problems: problems.length, error: error || undefined }, 'integrity check done')
  }

  private iso(): string {
    return this.clock().toISOString()
  }
}

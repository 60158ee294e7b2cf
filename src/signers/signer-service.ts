import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import type { Db } from '../store/db.js'
import { type ListParams, parseListQuery } from '../store/list-query.js'
import {
  CLIENT_SIGNER_LIST_SPEC,
  SIGNER_LIST_SPEC,
  type SignerRecord,
  SignerRepository,
} from '../store/signer-repository.js'
import type { SignerCertificate } from './certificate.js'
import {
  applyPatch,
  checkSigner,
  fromInput,
  notFound,
  type SignerInput,
  type SignerPatch,
  type WritableSigner,
} from './signer-rules.js'

/** A change to the set of signers, for caches that must follow it at once. */
export type SignerChange =
  | { type: 'upsert'; signer: SignerRecord; previous: SignerRecord | undefined }
  | { type: 'delete'; signer: SignerRecord }

/** Tells whether anything references a signer; returns the referencing field, if any. */
export type SignerReferenceCheck = (signerId: string) => string | undefined

export interface SignerServiceOptions {
  db: Db
  clock: () => Date
  /** Called before a delete, inside its transaction. */
  referenceCheck?: SignerReferenceCheck
  /** Why a jwksEndpoint may not be fetched from (the SSRF policy), or undefined. */
  jwksUrlCheck?: (url: string) => string | undefined
}

/** Management of external JWT signers: the rules of the seed on top of the repository. */
export class SignerService {
  readonly repository: SignerRepository
  private readonly listeners: ((change: SignerChange) => void)[] = []

  constructor(private readonly options: SignerServiceOptions) {
    this.repository = new SignerRepository(options.db)
  }

  /** Registers a listener called synchronously after every committed change. */
  onChange(listener: (change: SignerChange) => void): void {
    this.listeners.push(listener)
  }

  private emit(change: SignerChange): void {
    for (const listener of this.listeners) listener(change)
  }

  private build(
    fields: WritableSigner,
    base: Pick<SignerRecord, 'id' | 'createdAt'>,
    now: string,
  ): SignerRecord {
    const cert: SignerCertificate | undefined = checkSigner(fields)
    const refused = fields.jwksEndpoint && this.options.jwksUrlCheck?.(fields.jwksEndpoint)
    if (refused) throw fieldError('INVALID_FIELD', 'jwksEndpoint', refused, fields.jwksEndpoint)
    return {
      ...fields,
      ...base,
      commonName: cert?.commonName ?? null,
      fingerprint: cert?.fingerprint ?? null,
      notBefore: cert?.notBefore ?? null,
      notAfter: cert?.notAfter ?? null,
      updatedAt: now,
    }
  }

  create(input: SignerInput): SignerRecord {
    const now = this.options.clock().toISOString()
    const signer = this.build(fromInput(input), { id: newId(), createdAt: now }, now)
    this.repository.insert(signer)
    this.emit({ type: 'upsert', signer, previous: undefined })
    return signer
  }

  get(id: string): SignerRecord {
    const signer = this.repository.get(id)
    if (!signer) throw notFound(id)
    return signer
  }

  list(params: ListParams) {
    return this.repository.list(parseListQuery(params, SIGNER_LIST_SPEC))
  }

  listForClient(params: ListParams) {
    return this.repository.listForClient(parseListQuery(params, CLIENT_SIGNER_LIST_SPEC))
  }

  /** PUT: omitted optional fields reset to their defaults. */
  replace(id: string, input: SignerInput): SignerRecord {
    return this.update(id, () => fromInput(input))
  }

  /** PATCH: only the keys present change. */
  patch(id: string, patch: SignerPatch): SignerRecord {
    return this.update(id, (current) => applyPatch(current, patch))
  }

  private update(id: string, change: (current: WritableSigner) => WritableSigner): SignerRecord {
    const { db } = this.options
    const [signer, previous] = db.transaction(() => {
      const current = this.get(id)
      const now = this.options.clock().toISOString()
      const next = this.build(change(current), { id, createdAt: current.createdAt }, now)
      if (!this.repository.update(next)) throw notFound(id)
      return [next, current] as const
    })()
    this.emit({ type: 'upsert', signer, previous })
    return signer
  }

  delete(id: string): void {
    const signer = this.options.db.transaction(() => {
      const current = this.get(id)
      const field = this.options.referenceCheck?.(id)
      if (field !== undefined) {
        throw new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          cause: { field, reason: 'an authentication policy references this signer', value: id },
        })
      }
      this.repository.delete(id)
      return current
    })()
    this.emit({ type: 'delete', signer })
  }
}

import type { ListPage, ListQuery } from './query/list-query.js'

export type TargetToken = 'ACCESS' | 'ID'

/** An external JWT signer as stored. */
export interface SignerRecord {
  id: string
  name: string
  enabled: boolean
  issuer: string
  audience: string
  jwksEndpoint: string | null
  certPem: string | null
  kid: string | null
  claimsProperty: string
  useExternalId: boolean
  externalAuthUrl: string | null
  clientId: string | null
  scopes: string[] | null
  targetToken: TargetToken
  commonName: string | null
  fingerprint: string | null
  notBefore: string | null
  notAfter: string | null
  tags: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

/** What the unauthenticated client list shows of a signer. */
export interface ClientSignerRow {
  id: string
  name: string
  externalAuthUrl: string
}

/** An identity as stored (without its password hash). */
export interface IdentityRecord {
  id: string
  name: string
  externalId: string | null
  isAdmin: boolean
  isDefaultAdmin: boolean
  disabled: boolean
  authPolicyId: string
  tags: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

/** An authentication policy as stored. */
export interface AuthPolicyRecord {
  id: string
  name: string
  certAllowed: boolean
  updbAllowed: boolean
  updbMinPasswordLength: number
  updbRequireSpecialChar: boolean
  updbRequireNumberChar: boolean
  updbRequireMixedCase: boolean
  extJwtAllowed: boolean
  allowedSigners: string[]
  requireExtJwtSigner: string | null
  tags: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

/** An API session as stored; the token itself is never stored, only its SHA-256. */
export interface SessionRecord {
  id: string
  tokenHash: Buffer
  /** Made before tokens named their session: found by its token hash instead of its id. */
  legacyToken: boolean
  identityId: string
  authenticatorId: string
  ipAddress: string
  createdAt: string
  updatedAt: string
  lastActivityAt: string
  expiresAt: string
}

export type AuditAction =
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'set-password'
  | 'login'
  | 'logout'

/** The kinds of entity audit events name (the edge API's entity names). */
export type AuditEntityType =
  | 'external-jwt-signers'
  | 'identities'
  | 'auth-policies'
  | 'api-sessions'

/** An audit event as stored: who did what to which entity; field names only, never values. */
export interface AuditEventRecord {
  id: string
  at: string
  /** The identity that made the change (for a login, the one that logged in); null when internal. */
  actor: { id: string; name: string } | null
  action: AuditAction
  entityType: AuditEntityType
  entityId: string
  requestId: string | null
  /** The login method (`password`, `ext-jwt`) of a login; null otherwise. */
  method: string | null
  changedFields: string[]
}

/** One controller instance of the controllers list, as stored. */
export interface ControllerRecord {
  id: string
  /** Unique: an instance that restarts under its name replaces its own row. */
  name: string
  /** The base URL clients are given for this instance (`https://ctrl-1.example:1280`). */
  advertiseUrl: string
  /** Its TLS certificate and that certificate's SHA-1 fingerprint; empty over plain HTTP. */
  certPem: string
  fingerprint: string
  /** How often it refreshes `lastHeartbeatAt` (readers judge it offline after three periods). */
  heartbeatMs: number
  lastJoinedAt: string
  lastHeartbeatAt: string
  createdAt: string
  updatedAt: string
}

/** Persistence of external JWT signers. Writes of a unique name, issuer or kid fail with a 400. */
export interface SignerRepository {
  insert(signer: SignerRecord): Promise<void>
  /** Resolves false when no signer has that id. */
  update(signer: SignerRecord): Promise<boolean>
  delete(id: string): Promise<boolean>
  get(id: string): Promise<SignerRecord | undefined>
  getByIssuer(issuer: string): Promise<SignerRecord | undefined>
  all(): Promise<SignerRecord[]>
  list(query: ListQuery): Promise<ListPage<SignerRecord>>
  /**
   * Changes whenever any signer is written, by any instance (a cache of signer lists is valid for
   * one value). SQLite has one writer, which hears its own changes: its version never changes.
   */
  listVersion(): Promise<string>
  /** Enabled signers with an externalAuthUrl (only id and name are filterable). */
  listForClient(query: ListQuery): Promise<ClientSignerRow[]>
}

/** Persistence of identities and their password hashes. */
export interface IdentityRepository {
  insert(identity: IdentityRecord): Promise<void>
  update(identity: IdentityRecord): Promise<boolean>
  delete(id: string): Promise<boolean>
  get(id: string): Promise<IdentityRecord | undefined>
  getByName(name: string): Promise<IdentityRecord | undefined>
  getByExternalId(externalId: string): Promise<IdentityRecord | undefined>
  passwordHash(id: string): Promise<string | null>
  setPasswordHash(id: string, hash: string, updatedAt: string): Promise<boolean>
  countEnabledAdmins(): Promise<number>
  hasAdmin(): Promise<boolean>
  list(query: ListQuery): Promise<ListPage<IdentityRecord>>
}

/** Persistence of authentication policies and their allowed-signer lists. */
export interface AuthPolicyRepository {
  insert(policy: AuthPolicyRecord): Promise<void>
  update(policy: AuthPolicyRecord): Promise<boolean>
  delete(id: string): Promise<boolean>
  get(id: string): Promise<AuthPolicyRecord | undefined>
  list(query: ListQuery): Promise<ListPage<AuthPolicyRecord>>
  /** The policy field that references a signer, if any policy does. */
  signerReference(signerId: string): Promise<string | undefined>
  isUsedByIdentity(policyId: string): Promise<boolean>
}

/** Persistence of API sessions. */
export interface SessionRepository {
  /** Stores several sessions at once (group commit); all or none. */
  insertMany(sessions: SessionRecord[]): Promise<void>
  get(id: string): Promise<SessionRecord | undefined>
  /** A session whose token does not name it (`legacyToken`), by the token's hash. */
  getLegacyByTokenHash(hash: Buffer): Promise<SessionRecord | undefined>
  touch(id: string, lastActivityAt: string, expiresAt: string): Promise<void>
  delete(id: string): Promise<boolean>
  deleteForIdentity(identityId: string): Promise<number>
  deleteExpired(before: string): Promise<number>
  countForIdentity(identityId: string): Promise<number>
  /** Which of these identities have at least one session (one query for a page of them). */
  identitiesWithSessions(identityIds: string[]): Promise<string[]>
  count(): Promise<number>
  /** Every stored session (copying a store). */
  all(): Promise<SessionRecord[]>
}

/** Persistence of audit events (written inside the unit of work of the change they record). */
export interface AuditRepository {
  insertMany(events: AuditEventRecord[]): Promise<void>
  list(query: ListQuery): Promise<ListPage<AuditEventRecord>>
  /** Removes events older than `before`; resolves with how many. */
  deleteBefore(before: string): Promise<number>
}

/** Persistence of the controllers list (instances that share the store). */
export interface ControllerRepository {
  /**
   * Registers an instance by name: a new row, or the row of that name updated (its id and
   * createdAt kept). Resolves with the row as stored.
   */
  upsert(controller: ControllerRecord): Promise<ControllerRecord>
  /** Resolves false when no row has that id any more (it was removed: register again). */
  heartbeat(id: string, at: string): Promise<boolean>
  delete(id: string): Promise<boolean>
  list(query: ListQuery): Promise<ListPage<ControllerRecord>>
}

export interface Repositories {
  signers: SignerRepository
  identities: IdentityRepository
  policies: AuthPolicyRepository
  sessions: SessionRepository
  audit: AuditRepository
  controllers: ControllerRepository
}

/** A change to a stored entity, as other instances learn of it. */
export interface StoreChange {
  entity: 'signer' | 'identity' | 'policy' | 'session' | 'signer-keys'
  op: 'upsert' | 'delete' | 'refresh'
  id: string
}

/** The repositories of one unit of work, and the means to tell other instances what it changed. */
export interface UnitOfWork extends Repositories {
  /** Tells every other instance of the change once (and only if) the unit of work commits. */
  publish(change: StoreChange): Promise<void>
}

/** What other instances did, and whether this instance can still hear about it. */
export type FeedEvent =
  | { type: 'change'; change: StoreChange }
  /** Notifications may have been missed: every cache must be bypassed until `fresh`. */
  | { type: 'stale' }
  /** Listening again: caches must be reloaded once, then may be trusted. */
  | { type: 'fresh' }

/** The persistent store: SQLite for one process, PostgreSQL for several instances. */
export interface Store {
  readonly kind: 'sqlite' | 'postgres'
  /** Repositories outside any unit of work (each call its own statement). */
  readonly repos: Repositories
  /** Runs `work` atomically: it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: UnitOfWork) => Promise<T>): Promise<T>
  /** Resolves when the database answers, rejects when it does not. */
  ping(): Promise<void>
  /** Subscribes to other instances' changes and to staleness; SQLite never calls the listener. */
  onFeed(listener: (event: FeedEvent) => void): void
  /** True while this instance may have missed another's change (caches must not be trusted). */
  readonly stale: boolean
  close(): Promise<void>
}

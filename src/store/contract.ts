import type { ListPage, ListQuery } from './query/list-query.js'

export type TargetToken = 'ACCESS' | 'ID'

/** One claim condition of a signer's token rules: a JSON pointer and exactly one operator. */
export interface ClaimCondition {
  claim: string
  equals?: string | number | boolean
  oneOf?: (string | number | boolean)[]
  contains?: string
  matches?: string
  exists?: boolean
  /** For operators (explain-a-token); never sent to clients. */
  message?: string
}

/** What a signer asks of its tokens beyond issuer, audience, key and expiry; durations in Go syntax. */
export interface TokenRules {
  audiences?: string[]
  claims?: ClaimCondition[]
  maxTokenLifetime?: string
  maxTokenAge?: string
  clockSkew?: string
  sessionEndsWithToken?: boolean
}

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
  /** JWT enrollment: a token may create an identity (`enroll/token`), with or without a CSR. */
  enrollToTokenEnabled: boolean
  enrollToCertEnabled: boolean
  /** JSON pointers (`/preferred_username`) to the new identity's name and role attributes. */
  enrollNameClaimsSelector: string
  enrollAttributeClaimsSelector: string | null
  /** The policy enrolled identities get. */
  enrollAuthPolicyId: string
  commonName: string | null
  fingerprint: string | null
  notBefore: string | null
  notAfter: string | null
  tags: Record<string, unknown>
  /** Null: no rules (the signer behaves as OpenZiti's do). */
  tokenRules: TokenRules | null
  createdAt: string
  updatedAt: string
}

/** What the unauthenticated client list may show of a signer (OpenZiti's clients read all of it). */
export interface ClientSignerRow {
  id: string
  name: string
  /** Null only for a signer listed for enrollment alone. */
  externalAuthUrl: string | null
  issuer: string
  audience: string
  clientId: string | null
  scopes: string[] | null
  targetToken: TargetToken
  enrollToTokenEnabled: boolean
  enrollToCertEnabled: boolean
  tags: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

/** The client list's part of a stored signer (the same on both stores). */
export function clientSignerRow(s: SignerRecord): ClientSignerRow {
  return {
    id: s.id,
    name: s.name,
    externalAuthUrl: s.externalAuthUrl,
    issuer: s.issuer,
    audience: s.audience,
    clientId: s.clientId,
    scopes: s.scopes,
    targetToken: s.targetToken,
    enrollToTokenEnabled: s.enrollToTokenEnabled,
    enrollToCertEnabled: s.enrollToCertEnabled,
    tags: s.tags,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  }
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
  /** OpenZiti's role attributes: free names that group identities. */
  roleAttributes: string[]
  tags: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

/** A certificate authenticator: the certificate an identity enrolled with a CSR got. */
export interface CertAuthenticatorRecord {
  id: string
  identityId: string
  /** SHA-1 of the DER, lowercase hex. */
  fingerprint: string
  certPem: string
  createdAt: string
}

/** An authentication policy as stored. */
export interface AuthPolicyRecord {
  id: string
  name: string
  certAllowed: boolean
  /** Stored and shown (`primary.cert.allowExpiredCerts`); no certificate login here reads it. */
  certAllowExpired: boolean
  updbAllowed: boolean
  updbMinPasswordLength: number
  updbRequireSpecialChar: boolean
  updbRequireNumberChar: boolean
  updbRequireMixedCase: boolean
  /** Consecutive failed password logins that lock the user name; 0: the default backoff. */
  updbMaxAttempts: number
  /** How long that lock lasts; 0: the default backoff's growing interval. */
  updbLockoutDurationMinutes: number
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
  /** The latest `expiresAt` may slide to (the JWT's expiry, for `sessionEndsWithToken`), or null. */
  hardExpiresAt: string | null
}

export type AuditAction =
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'set-password'
  | 'login'
  | 'login-failed'
  | 'logout'
  | 'enroll'
  | 'snapshot'

/** The kinds of entity audit events name (the edge API's entity names). */
export type AuditEntityType =
  | 'external-jwt-signers'
  | 'identities'
  | 'auth-policies'
  | 'api-sessions'
  | 'database'

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

/** A login to store: its session and its audit event (a group commit stores several at once). */
export interface LoginRecord {
  session: SessionRecord
  event: AuditEventRecord
  /**
   * A password login's: the password hash its password was checked against. Absent for other
   * logins. See `recordLogins` for what is checked again when the login is stored.
   */
  passwordHash?: string | undefined
}

/** A session the session cap ended, or (`refused`) a login's session that was not stored. */
export interface EndedSession {
  id: string
  identityId: string
  /**
   * The login's session was not stored: its identity was deleted or disabled, or (a password
   * login) its password changed, after the login checked it and before it was stored.
   */
  refused?: true
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
  /**
   * The signer, locked against other writers until the unit of work ends: an update reads it so,
   * or two at once each write back the other's fields as they were (PostgreSQL: FOR NO KEY UPDATE,
   * which the key checks of rows that reference it do not wait for, nor it for them; on SQLite the
   * store's one writer already holds the database).
   */
  getForUpdate(id: string): Promise<SignerRecord | undefined>
  getByIssuer(issuer: string): Promise<SignerRecord | undefined>
  all(): Promise<SignerRecord[]>
  list(query: ListQuery): Promise<ListPage<SignerRecord>>
  /**
   * Enabled signers with an externalAuthUrl, and with `withEnrollment` also those that allow
   * enrollment (only id and name are filterable).
   */
  listForClient(query: ListQuery, withEnrollment?: boolean): Promise<ListPage<ClientSignerRow>>
  /** Whether any signer enrolls identities into this policy. */
  usesEnrollPolicy(policyId: string): Promise<boolean>
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
  /**
   * Inside a unit of work: waits for, then holds until it ends, the one lock that every change
   * which can reduce the set of enabled admins takes before it counts them (PostgreSQL; SQLite's
   * units of work are serialised already).
   */
  lockAdmins(): Promise<void>
  insertCertAuthenticator(authenticator: CertAuthenticatorRecord): Promise<void>
  hasAdmin(): Promise<boolean>
  list(query: ListQuery): Promise<ListPage<IdentityRecord>>
  /** The distinct role attributes of all identities (`ROLE_ATTRIBUTE_LIST_SPEC`'s field `id`). */
  roleAttributes(query: ListQuery): Promise<ListPage<string>>
}

/** Persistence of authentication policies and their allowed-signer lists. */
export interface AuthPolicyRepository {
  insert(policy: AuthPolicyRecord): Promise<void>
  update(policy: AuthPolicyRecord): Promise<boolean>
  delete(id: string): Promise<boolean>
  get(id: string): Promise<AuthPolicyRecord | undefined>
  /** The policy, locked against other writers until the unit of work ends (as a signer's). */
  getForUpdate(id: string): Promise<AuthPolicyRecord | undefined>
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
  /**
   * Slides a session's expiry; false when no such session is stored or the store holds it expired
   * at `lastActivityAt` (another instance's purge may have deleted it meanwhile): never revived.
   */
  touch(id: string, lastActivityAt: string, expiresAt: string): Promise<boolean>
  delete(id: string): Promise<boolean>
  /**
   * Ends every session of an identity. Within the unit of work that updates the identity first, so
   * that no login batch stores one after it (see `recordLogins`); likewise `deleteForIdentityExcept`.
   */
  deleteForIdentity(identityId: string): Promise<number>
  deleteExpired(before: string): Promise<number>
  countForIdentity(identityId: string): Promise<number>
  /** Ends every session of an identity but one (a password change keeps the caller's own). */
  deleteForIdentityExcept(identityId: string, keepId: string): Promise<string[]>
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

/** Consecutive failed password logins of one user name, and until when it is refused. */
export interface LoginFailureRecord {
  failures: number
  lockedUntil: string | null
}

/**
 * The brute-force counter, by user name. PostgreSQL keeps it in a table, shared by every instance;
 * SQLite in memory (one process owns the file; a restart forgets the counts).
 */
export interface LoginFailureRepository {
  get(name: string): Promise<LoginFailureRecord | undefined>
  /**
   * Counts one more failure at `at`; resolves with the count now held. `known`: the name is an
   * identity's (default: not); a store that bounds what it keeps forgets only other names.
   */
  addFailure(name: string, at: string, known?: boolean): Promise<number>
  /** Locks the name until `until`, or leaves a longer lock as it is. */
  lockUntil(name: string, until: string): Promise<void>
  clear(name: string): Promise<void>
  /**
   * Forgets counts last changed before `before` whose lock (if any) has ended, and a store that
   * bounds the names of no identity forgets the oldest beyond its bound; resolves with how many.
   */
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
  loginFailures: LoginFailureRepository
  controllers: ControllerRepository
}

/** A change to a stored entity, as other instances learn of it. */
export interface StoreChange {
  /**
   * `session`: `upsert` (no id) sessions were opened, `delete` one session ended;
   * `identity-sessions`: `delete`, sessions of the identity `id` ended (the session cap).
   */
  entity: 'signer' | 'identity' | 'policy' | 'session' | 'identity-sessions' | 'signer-keys'
  op: 'upsert' | 'delete' | 'refresh'
  id: string
}

/** Sessions were opened or ended (no id): other instances' identity pages show `hasApiSession`. */
export const SESSIONS_CHANGED: StoreChange = { entity: 'session', op: 'upsert', id: '' }

/** The repositories of one unit of work, and the means to tell other instances what it changed. */
export interface UnitOfWork extends Repositories {
  /** Tells every other instance of the change once (and only if) the unit of work commits. */
  publish(change: StoreChange): Promise<void>
}

/** What other instances did, and whether this instance can still hear about it. */
export type FeedEvent =
  /**
   * A change, through another instance or (`own`) this one: this instance applied its own already,
   * unless the commit's answer never reached it.
   */
  | { type: 'change'; change: StoreChange; own: boolean }
  /** Notifications may have been missed: every cache must be bypassed until `fresh`. */
  | { type: 'stale' }
  /** Listening again: caches must be reloaded once, then may be trusted. */
  | { type: 'fresh' }

/** What the controller's own integrity rules are checked against (ids and references only). */
export interface IntegrityFacts {
  signerIds: string[]
  policyIds: string[]
  /** Every signer a policy names: in `primary.extJwt.allowedSigners` or as its secondary factor. */
  policySignerRefs: { policyId: string; field: string; signerId: string }[]
  /** The policy each signer enrolls identities into. */
  signerEnrollPolicies: { signerId: string; policyId: string }[]
  identities: {
    id: string
    authPolicyId: string
    externalId: string | null
    isAdmin: boolean
    disabled: boolean
  }[]
}

/** The persistent store: SQLite for one process, PostgreSQL for several instances. */
export interface Store {
  readonly kind: 'sqlite' | 'postgres'
  /** Repositories outside any unit of work (each call its own statement). */
  readonly repos: Repositories
  /**
   * Runs `work` atomically: it commits when `work` resolves and rolls back when it throws. On
   * PostgreSQL `work` may run more than once (again whole after the server rolled it back for a
   * deadlock): it must do nothing but through `tx`, and act on its result only after this resolves.
   */
  transaction<T>(work: (tx: UnitOfWork) => Promise<T>): Promise<T>
  /**
   * Stores a group commit of logins, all or none: each session with its audit event (events in the
   * order given), then, when `keep` is set, ends each of their identities' sessions beyond its
   * `keep` newest (by creation, whichever instance opened them); resolves with the sessions ended.
   * Other instances are told that sessions were opened (`session`, `upsert`), at least whenever
   * an identity of the batch had none before (what their identity pages show), and of each
   * identity whose sessions were ended (`identity-sessions`, `delete`). PostgreSQL: one statement.
   *
   * A login whose identity is gone or disabled by then, or whose `passwordHash` is no longer the
   * identity's, is not stored (neither its session nor its event): it is in the result, `refused`.
   * This closes the window between a login's check of its credentials and its commit, in which an
   * identity's disabling or password change would miss the session (it ends the sessions stored
   * by then): on SQLite the batch's transaction and the change's are serial; on PostgreSQL the
   * batch reads the identities locked FOR SHARE, and a change that ends an identity's sessions
   * updates the identity before it deletes them, in one unit of work (so either waits for the
   * other's commit, and the later one sees what the earlier one did).
   */
  recordLogins(logins: LoginRecord[], keep?: number): Promise<EndedSession[]>
  /** How many `recordLogins` calls the session service keeps in flight at most. */
  readonly loginBatchesAtOnce: number
  /** Resolves when the database answers, rejects when it does not. */
  ping(): Promise<void>
  /** Subscribes to other instances' changes and to staleness; SQLite never calls the listener. */
  onFeed(listener: (event: FeedEvent) => void): void
  /** True while this instance may have missed another's change (caches must not be trusted). */
  readonly stale: boolean
  /**
   * Writes a consistent copy of the database to the new file `path` while requests keep being
   * served (SQLite); PostgreSQL refuses with 400 `SNAPSHOT_NOT_SUPPORTED` (pg_dump does this).
   */
  snapshot(path: string): Promise<void>
  /** Problems the database engine finds in its own file (SQLite); none on PostgreSQL. */
  storageProblems(): Promise<string[]>
  /** The rows the controller's integrity rules read. */
  integrityFacts(): Promise<IntegrityFacts>
  close(): Promise<void>
}

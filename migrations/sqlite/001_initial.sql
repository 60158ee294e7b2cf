-- Signers, identities, authentication policies and API sessions.
-- Timestamps are RFC 3339 UTC strings with milliseconds (they sort as text).

CREATE TABLE signers (
  id                TEXT PRIMARY KEY,
  name              TEXT NOT NULL UNIQUE,
  enabled           INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  issuer            TEXT NOT NULL UNIQUE,
  audience          TEXT NOT NULL,
  jwks_endpoint     TEXT,
  cert_pem          TEXT,
  kid               TEXT,
  claims_property   TEXT NOT NULL DEFAULT 'sub',
  use_external_id   INTEGER NOT NULL DEFAULT 0 CHECK (use_external_id IN (0, 1)),
  external_auth_url TEXT,
  client_id         TEXT,
  scopes            TEXT,
  target_token      TEXT NOT NULL DEFAULT 'ACCESS',
  common_name       TEXT,
  fingerprint       TEXT,
  not_before        TEXT,
  not_after         TEXT,
  tags              TEXT NOT NULL DEFAULT '{}',
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  CHECK ((jwks_endpoint IS NULL) <> (cert_pem IS NULL))
) WITHOUT ROWID;

CREATE UNIQUE INDEX signers_kid ON signers (kid) WHERE kid IS NOT NULL;
CREATE INDEX signers_created_at ON signers (created_at, id);
CREATE INDEX signers_enabled ON signers (enabled, id);
CREATE INDEX signers_client_list ON signers (id) WHERE enabled = 1 AND external_auth_url IS NOT NULL;

CREATE TABLE auth_policies (
  id                               TEXT PRIMARY KEY,
  name                             TEXT NOT NULL UNIQUE,
  cert_allowed                     INTEGER NOT NULL DEFAULT 1,
  cert_allow_expired               INTEGER NOT NULL DEFAULT 0,
  updb_allowed                     INTEGER NOT NULL DEFAULT 1,
  updb_min_password_length         INTEGER NOT NULL DEFAULT 12,
  updb_require_special_char        INTEGER NOT NULL DEFAULT 0,
  updb_require_number_char         INTEGER NOT NULL DEFAULT 0,
  updb_require_mixed_case          INTEGER NOT NULL DEFAULT 0,
  updb_max_attempts                INTEGER NOT NULL DEFAULT 0,
  updb_lockout_duration_minutes    INTEGER NOT NULL DEFAULT 0,
  ext_jwt_allowed                  INTEGER NOT NULL DEFAULT 1,
  secondary_require_totp           INTEGER NOT NULL DEFAULT 0,
  secondary_require_ext_jwt_signer TEXT REFERENCES signers (id),
  tags                             TEXT NOT NULL DEFAULT '{}',
  created_at                       TEXT NOT NULL,
  updated_at                       TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX auth_policies_secondary_signer ON auth_policies (secondary_require_ext_jwt_signer)
  WHERE secondary_require_ext_jwt_signer IS NOT NULL;
CREATE INDEX auth_policies_created_at ON auth_policies (created_at, id);

CREATE TABLE auth_policy_signers (
  policy_id TEXT NOT NULL REFERENCES auth_policies (id) ON DELETE CASCADE,
  signer_id TEXT NOT NULL REFERENCES signers (id),
  position  INTEGER NOT NULL,
  PRIMARY KEY (policy_id, signer_id)
) WITHOUT ROWID;

CREATE INDEX auth_policy_signers_signer ON auth_policy_signers (signer_id);

INSERT INTO auth_policies (id, name, created_at, updated_at)
VALUES ('default', 'Default', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

CREATE TABLE identities (
  id               TEXT PRIMARY KEY,
  name             TEXT NOT NULL UNIQUE,
  external_id      TEXT UNIQUE,
  is_admin         INTEGER NOT NULL DEFAULT 0,
  is_default_admin INTEGER NOT NULL DEFAULT 0,
  disabled         INTEGER NOT NULL DEFAULT 0,
  auth_policy_id   TEXT NOT NULL DEFAULT 'default' REFERENCES auth_policies (id),
  password_hash    TEXT,
  tags             TEXT NOT NULL DEFAULT '{}',
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX identities_auth_policy ON identities (auth_policy_id);
CREATE INDEX identities_created_at ON identities (created_at, id);
CREATE INDEX identities_admin ON identities (is_admin, disabled);

CREATE TABLE api_sessions (
  id               TEXT PRIMARY KEY,
  token_hash       BLOB NOT NULL UNIQUE,
  identity_id      TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  authenticator_id TEXT NOT NULL,
  ip_address       TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  last_activity_at TEXT NOT NULL,
  expires_at       TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX api_sessions_identity ON api_sessions (identity_id);
CREATE INDEX api_sessions_expires_at ON api_sessions (expires_at);

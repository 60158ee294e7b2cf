-- Signers, identities, authentication policies and API sessions (PostgreSQL).
-- The same entities and rules as migrations/sqlite; timestamps are timestamptz (millisecond
-- precision is what the API shows), flags are booleans, tags and scopes jsonb. Sorted text columns
-- use the C collation, so lists sort byte-wise exactly as on SQLite.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE signers (
  id                text COLLATE "C" PRIMARY KEY,
  name              text COLLATE "C" NOT NULL CONSTRAINT signers_name_key UNIQUE,
  enabled           boolean NOT NULL,
  issuer            text COLLATE "C" NOT NULL CONSTRAINT signers_issuer_key UNIQUE,
  audience          text NOT NULL,
  jwks_endpoint     text,
  cert_pem          text,
  kid               text,
  claims_property   text NOT NULL DEFAULT 'sub',
  use_external_id   boolean NOT NULL DEFAULT false,
  external_auth_url text,
  client_id         text,
  scopes            jsonb,
  target_token      text NOT NULL DEFAULT 'ACCESS',
  common_name       text,
  fingerprint       text,
  not_before        timestamptz,
  not_after         timestamptz,
  tags              jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  CHECK ((jwks_endpoint IS NULL) <> (cert_pem IS NULL))
);

CREATE UNIQUE INDEX signers_kid ON signers (kid) WHERE kid IS NOT NULL;
CREATE INDEX signers_created_at ON signers (created_at, id);
CREATE INDEX signers_enabled_name ON signers (enabled, name);
CREATE INDEX signers_enabled_created ON signers (enabled, created_at, id);
CREATE INDEX signers_client_list ON signers (id) WHERE enabled AND external_auth_url IS NOT NULL;
-- contains / icontains on name and issuer (LIKE and ILIKE) through trigram indexes.
CREATE INDEX signers_name_trgm ON signers USING gin (name gin_trgm_ops);
CREATE INDEX signers_issuer_trgm ON signers USING gin (issuer gin_trgm_ops);

CREATE TABLE auth_policies (
  id                               text COLLATE "C" PRIMARY KEY,
  name                             text COLLATE "C" NOT NULL CONSTRAINT auth_policies_name_key UNIQUE,
  cert_allowed                     boolean NOT NULL DEFAULT true,
  cert_allow_expired               boolean NOT NULL DEFAULT false,
  updb_allowed                     boolean NOT NULL DEFAULT true,
  updb_min_password_length         integer NOT NULL DEFAULT 12,
  updb_require_special_char        boolean NOT NULL DEFAULT false,
  updb_require_number_char         boolean NOT NULL DEFAULT false,
  updb_require_mixed_case          boolean NOT NULL DEFAULT false,
  updb_max_attempts                integer NOT NULL DEFAULT 0,
  updb_lockout_duration_minutes    integer NOT NULL DEFAULT 0,
  ext_jwt_allowed                  boolean NOT NULL DEFAULT true,
  secondary_require_totp           boolean NOT NULL DEFAULT false,
  secondary_require_ext_jwt_signer text REFERENCES signers (id),
  tags                             jsonb NOT NULL DEFAULT '{}',
  created_at                       timestamptz NOT NULL,
  updated_at                       timestamptz NOT NULL
);

CREATE INDEX auth_policies_secondary_signer ON auth_policies (secondary_require_ext_jwt_signer)
  WHERE secondary_require_ext_jwt_signer IS NOT NULL;
CREATE INDEX auth_policies_created_at ON auth_policies (created_at, id);

CREATE TABLE auth_policy_signers (
  policy_id text NOT NULL REFERENCES auth_policies (id) ON DELETE CASCADE,
  signer_id text NOT NULL REFERENCES signers (id),
  position  integer NOT NULL,
  PRIMARY KEY (policy_id, signer_id)
);

CREATE INDEX auth_policy_signers_signer ON auth_policy_signers (signer_id);

INSERT INTO auth_policies (id, name, created_at, updated_at)
VALUES ('default', 'Default', date_trunc('milliseconds', now()), date_trunc('milliseconds', now()));

CREATE TABLE identities (
  id               text COLLATE "C" PRIMARY KEY,
  name             text COLLATE "C" NOT NULL CONSTRAINT identities_name_key UNIQUE,
  external_id      text COLLATE "C" CONSTRAINT identities_external_id_key UNIQUE,
  is_admin         boolean NOT NULL DEFAULT false,
  is_default_admin boolean NOT NULL DEFAULT false,
  disabled         boolean NOT NULL DEFAULT false,
  auth_policy_id   text NOT NULL DEFAULT 'default' REFERENCES auth_policies (id),
  password_hash    text,
  tags             jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);

CREATE INDEX identities_auth_policy ON identities (auth_policy_id);
CREATE INDEX identities_created_at ON identities (created_at, id);
CREATE INDEX identities_admin ON identities (is_admin, disabled);

CREATE TABLE api_sessions (
  id               text COLLATE "C" PRIMARY KEY,
  token_hash       bytea NOT NULL CONSTRAINT api_sessions_token_hash_key UNIQUE,
  identity_id      text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  authenticator_id text NOT NULL,
  ip_address       text NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  last_activity_at timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);

CREATE INDEX api_sessions_identity ON api_sessions (identity_id);

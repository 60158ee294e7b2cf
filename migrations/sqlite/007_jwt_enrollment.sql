-- JWT enrollment (OpenZiti 2.x): what a signer lets a token holder enroll as (the role
-- attributes an enrolled identity gets are in 006). Existing signers take the defaults.
ALTER TABLE signers ADD COLUMN enroll_to_token_enabled INTEGER NOT NULL DEFAULT 0
  CHECK (enroll_to_token_enabled IN (0, 1));
ALTER TABLE signers ADD COLUMN enroll_to_cert_enabled INTEGER NOT NULL DEFAULT 0
  CHECK (enroll_to_cert_enabled IN (0, 1));
ALTER TABLE signers ADD COLUMN enroll_name_claims_selector TEXT NOT NULL DEFAULT '/sub';
ALTER TABLE signers ADD COLUMN enroll_attribute_claims_selector TEXT;
-- No foreign key: policies already reference signers (allowed signers), and copying a store inserts
-- signers first; the services check the policy exists and refuse to delete one a signer names.
ALTER TABLE signers ADD COLUMN enroll_auth_policy_id TEXT NOT NULL DEFAULT 'default';

CREATE INDEX signers_enroll_auth_policy ON signers (enroll_auth_policy_id);

-- Certificate authenticators made by enrolling with a CSR.
CREATE TABLE authenticators (
  id          TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  fingerprint TEXT NOT NULL UNIQUE,
  cert_pem    TEXT NOT NULL,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX authenticators_identity ON authenticators (identity_id);

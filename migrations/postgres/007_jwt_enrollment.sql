-- JWT enrollment (OpenZiti 2.x): what a signer lets a token holder enroll as (the role
-- attributes an enrolled identity gets are in 006). Existing signers take the defaults.
ALTER TABLE signers
  ADD COLUMN enroll_to_token_enabled boolean NOT NULL DEFAULT false,
  ADD COLUMN enroll_to_cert_enabled boolean NOT NULL DEFAULT false,
  ADD COLUMN enroll_name_claims_selector text NOT NULL DEFAULT '/sub',
  ADD COLUMN enroll_attribute_claims_selector text,
  -- No foreign key: policies already reference signers (allowed signers), and copying a store
  -- inserts signers first; the services check the policy exists and refuse to delete one in use.
  ADD COLUMN enroll_auth_policy_id text COLLATE "C" NOT NULL DEFAULT 'default';

CREATE INDEX signers_enroll_auth_policy ON signers (enroll_auth_policy_id);

-- Certificate authenticators made by enrolling with a CSR.
CREATE TABLE authenticators (
  id          text COLLATE "C" PRIMARY KEY,
  identity_id text COLLATE "C" NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  fingerprint text NOT NULL UNIQUE,
  cert_pem    text NOT NULL,
  created_at  timestamptz NOT NULL
);

CREATE INDEX authenticators_identity ON authenticators (identity_id);

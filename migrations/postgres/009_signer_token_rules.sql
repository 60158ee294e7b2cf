-- Token rules per signer (null: none) and sessions that end with their JWT: the latest expiry a
-- session may slide to (null: it slides for as long as it is used).
ALTER TABLE signers ADD COLUMN token_rules jsonb;
ALTER TABLE api_sessions ADD COLUMN hard_expires_at timestamptz;

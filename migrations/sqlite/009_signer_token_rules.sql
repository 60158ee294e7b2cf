-- Token rules per signer (JSON, null: none) and sessions that end with their JWT: the latest
-- expiry a session may slide to (null: it slides for as long as it is used).
ALTER TABLE signers ADD COLUMN token_rules TEXT;
ALTER TABLE api_sessions ADD COLUMN hard_expires_at TEXT;

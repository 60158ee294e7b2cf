-- Session tokens now read `<session id>.<secret>`: a session is found by its id (the table's key,
-- in creation order) and its token hash then compared. The unique index on token hashes put every
-- login's entry on a random page, the largest part of a login's commit. Sessions made before keep
-- their tokens: `legacy_token` marks them, and only they stay in an index by token hash.
CREATE TABLE api_sessions_new (
  id               TEXT PRIMARY KEY,
  token_hash       BLOB NOT NULL,
  legacy_token     INTEGER NOT NULL DEFAULT 0,
  identity_id      TEXT NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  authenticator_id TEXT NOT NULL,
  ip_address       TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  last_activity_at TEXT NOT NULL,
  expires_at       TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO api_sessions_new (id, token_hash, legacy_token, identity_id, authenticator_id,
  ip_address, created_at, updated_at, last_activity_at, expires_at)
SELECT id, token_hash, 1, identity_id, authenticator_id, ip_address, created_at, updated_at,
  last_activity_at, expires_at
FROM api_sessions;

DROP TABLE api_sessions;
ALTER TABLE api_sessions_new RENAME TO api_sessions;
CREATE INDEX api_sessions_identity ON api_sessions (identity_id);
CREATE UNIQUE INDEX api_sessions_legacy_token ON api_sessions (token_hash) WHERE legacy_token = 1;

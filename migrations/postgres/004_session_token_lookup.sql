-- Session tokens now read `<session id>.<secret>`: a session is found by its id (the table's key)
-- and its token hash then compared, so a login no longer inserts into a unique index of random
-- hashes. Sessions made before keep their tokens: `legacy_token` marks them, and only they stay in
-- an index by token hash.
ALTER TABLE api_sessions ADD COLUMN legacy_token boolean NOT NULL DEFAULT false;
UPDATE api_sessions SET legacy_token = true;
ALTER TABLE api_sessions DROP CONSTRAINT api_sessions_token_hash_key;
CREATE UNIQUE INDEX api_sessions_legacy_token ON api_sessions (token_hash) WHERE legacy_token;

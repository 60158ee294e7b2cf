-- The session cap (CTRL_MAX_SESSIONS_PER_IDENTITY) trims an identity's oldest sessions in every
-- login batch: newest first, past the cap. Ordered by creation within the identity, that is a walk
-- of at most the cap's entries of this index; with the identity alone, it read and sorted every
-- session of the identity on each batch, so a busy identity's logins slowed as its sessions grew.
CREATE INDEX api_sessions_identity_created ON api_sessions (identity_id, created_at, id);
DROP INDEX api_sessions_identity;

-- Failed password logins of names no identity has, bounded as on SQLite.
--
-- login_failures (005) keeps one row per user name that failed, known or not, until a day after
-- its last failure: a spray of made-up names (each a password check, from many addresses) grew it
-- without bound, by as many rows a day as the instances check passwords. `known` tells an
-- identity's name from the others; the purge (every minute) keeps only the newest MAX_UNKNOWN_NAMES
-- of the others, whatever their lock (a made-up name has no account to protect), and every known
-- name until a day after its last failure, as before (a spray must not clear a real account's
-- count and backoff).
--
-- Rows written before, and rows an instance of the release before writes during a rolling
-- upgrade, count as known: none is forgotten that was kept before.
ALTER TABLE login_failures ADD COLUMN known boolean NOT NULL DEFAULT true;

CREATE INDEX login_failures_unknown ON login_failures (updated_at) WHERE NOT known;

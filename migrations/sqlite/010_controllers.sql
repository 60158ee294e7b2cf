-- The controllers list: every instance that shares this store registers itself at start (one row
-- per instance name, so a restart replaces its own row), refreshes `last_heartbeat_at` every
-- `heartbeat_ms`, and deletes its row on a clean shutdown. `isOnline` is read, not stored: a row
-- whose heartbeat is older than three of its own periods is offline.
CREATE TABLE controllers (
  id                TEXT PRIMARY KEY,
  name              TEXT NOT NULL UNIQUE,
  advertise_url     TEXT NOT NULL,
  cert_pem          TEXT NOT NULL DEFAULT '',
  fingerprint       TEXT NOT NULL DEFAULT '',
  heartbeat_ms      INTEGER NOT NULL,
  last_joined_at    TEXT NOT NULL,
  last_heartbeat_at TEXT NOT NULL,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
);

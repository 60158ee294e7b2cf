-- The controllers list: every instance that shares this store registers itself at start (one row
-- per instance name, so a restart replaces its own row), refreshes `last_heartbeat_at` every
-- `heartbeat_ms`, and deletes its row on a clean shutdown. `isOnline` is read, not stored: a row
-- whose heartbeat is older than three of its own periods is offline.
CREATE TABLE controllers (
  id                text COLLATE "C" PRIMARY KEY,
  name              text COLLATE "C" NOT NULL CONSTRAINT controllers_name_key UNIQUE,
  advertise_url     text NOT NULL,
  cert_pem          text NOT NULL DEFAULT '',
  fingerprint       text COLLATE "C" NOT NULL DEFAULT '',
  heartbeat_ms      integer NOT NULL,
  last_joined_at    timestamptz NOT NULL,
  last_heartbeat_at timestamptz NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);

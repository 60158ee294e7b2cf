-- The brute-force counter: consecutive failed password logins per user name (known or not), kept
-- here so that every instance of a cluster counts the same attempts. A success deletes the row;
-- rows left alone are purged once old and unlocked.
CREATE TABLE login_failures (
  name         text COLLATE "C" PRIMARY KEY,
  failures     integer NOT NULL,
  locked_until timestamptz,
  updated_at   timestamptz NOT NULL
);
CREATE INDEX login_failures_updated ON login_failures (updated_at);

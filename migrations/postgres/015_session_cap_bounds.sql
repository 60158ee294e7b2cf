-- The session cap without reading an identity's sessions at every login.
--
-- record_logins (012) trims each identity of a batch to its `keep` newest sessions, and to know
-- whether there is anything to trim it reads every session the identity has: an index entry and a
-- heap row each (new rows are not all-visible, so an index-only scan visits the heap too). An
-- identity with 30 sessions cost the server about 40 µs a login for that read alone, which almost
-- never found anything to trim (RS256 logins of 5,000 identities: 90 µs of the server's CPU a login
-- with 2 sessions an identity, 116 µs with 26; without the trim, 70 to 79 µs throughout).
--
-- identity_session_bounds keeps, per identity, an upper bound of its sessions: `counted`, what the
-- last trim left (NULL: never counted), plus `added`, the sessions inserted since. Every insert of
-- sessions adds to it, whoever inserts them (record_logins_v2 in its own statement; a trigger for
-- record_logins of the release before, copy-to-postgres or a hand-written INSERT); deleting
-- sessions (logout, expiry, the trim, an identity deleted) only lowers the true count, so the bound
-- stays an upper bound without being touched. A batch trims, and counts anew, only the identities
-- whose bound passes `keep`: an identity under its cap costs one row update a batch, one at its
-- cap a trim per login as before.
--
-- Exactness: the upsert of the bounds locks each identity's row (in identity order, so two
-- batches never wait on each other in a cycle) and holds it until COMMIT. A batch of the same
-- identity, on any instance and of either release, waits there until this one commits, then adds
-- its own sessions to the bound this one left; the trim begins after the lock is held, in a
-- snapshot that sees every batch of the identity that committed before. The per-identity advisory
-- lock of 012 is still taken before a trim, so anything else that takes it (as an instance of the
-- release before does) is waited for as before.
--
-- Measured in one connection (batches of 14 logins of 5,000 identities, two databases in turns,
-- the server's CPU a login): with 15 sessions an identity, 133 µs through record_logins and 105
-- through record_logins_v2; with the foreign key checked through the bounds and the bounds written
-- in the function's own statement (below), 67 against 86 µs for the same function without those.
CREATE TABLE identity_session_bounds (
  identity_id text COLLATE "C" PRIMARY KEY REFERENCES identities (id) ON DELETE CASCADE,
  counted     integer,
  added       integer NOT NULL
);

-- The sessions' foreign key to identities is checked through the bounds instead (about 9 µs of
-- the server's CPU a login: the key checked each session on its own, locking its identity's row).
-- A session is inserted only with its identity's bound upserted in the same statement (by
-- record_logins_v2, or by the trigger below for any other INSERT): a new bound is checked by its
-- own foreign key, and an existing one exists only while its identity does (deleting an identity
-- deletes its bound, waiting for a batch that holds it). Deleting an identity ends its sessions,
-- as the key's ON DELETE CASCADE did, once any batch of it that held its bound has committed.
ALTER TABLE api_sessions DROP CONSTRAINT api_sessions_identity_id_fkey;

CREATE FUNCTION end_sessions_of_deleted_identities() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM api_sessions AS s USING gone_identities AS g WHERE s.identity_id = g.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER identities_end_sessions AFTER DELETE ON identities
  REFERENCING OLD TABLE AS gone_identities
  FOR EACH STATEMENT EXECUTE FUNCTION end_sessions_of_deleted_identities();

-- A session never changes identity (the key refused one naming no identity).
CREATE FUNCTION refuse_session_identity_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a session''s identity never changes' USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER api_sessions_identity_fixed BEFORE UPDATE OF identity_id ON api_sessions
  FOR EACH ROW WHEN (NEW.identity_id IS DISTINCT FROM OLD.identity_id)
  EXECUTE FUNCTION refuse_session_identity_change();

-- Sessions inserted by anything but record_logins_v2 (record_logins of the release before,
-- copy-to-postgres, a hand-written INSERT) are added here; record_logins_v2 adds its own in its
-- statement (one upsert that also answers which identities passed the cap) and says so with the
-- setting ctrl.sessions_bounded, set for its own duration only.
CREATE FUNCTION bound_new_sessions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('ctrl.sessions_bounded', true) = 'on' THEN
    RETURN NULL;
  END IF;
  INSERT INTO identity_session_bounds AS b (identity_id, counted, added)
    SELECT n.identity_id, NULL, count(*) FROM new_sessions AS n
    GROUP BY n.identity_id ORDER BY n.identity_id COLLATE "C"
  ON CONFLICT (identity_id) DO UPDATE SET added = b.added + excluded.added;
  RETURN NULL;
END
$$;

CREATE TRIGGER api_sessions_bound AFTER INSERT ON api_sessions
  REFERENCING NEW TABLE AS new_sessions
  FOR EACH STATEMENT EXECUTE FUNCTION bound_new_sessions();

-- record_logins (012) with the cap read from the bounds: the same parameters and results.
CREATE FUNCTION record_logins_v2(
  new_sessions json,
  new_events json,
  keep integer,
  channel text,
  opened_payload text,
  ended_template text,
  id_placeholder text
) RETURNS TABLE (ended_id text, ended_identity_id text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  over_identities text[];
  gone_ids text[];
  gone_identities text[];
BEGIN
  WITH new_rows AS (
    INSERT INTO api_sessions (id, token_hash, legacy_token, identity_id, authenticator_id,
        ip_address, created_at, updated_at, last_activity_at, expires_at, hard_expires_at)
      SELECT s.id, decode(s.token_hash, 'base64'), s.legacy_token, s.identity_id,
        s.authenticator_id, s.ip_address, s.created_at, s.updated_at, s.last_activity_at,
        s.expires_at, s.hard_expires_at
      FROM json_to_recordset(new_sessions) AS s(id text, token_hash text, legacy_token boolean,
        identity_id text, authenticator_id text, ip_address text, created_at timestamptz,
        updated_at timestamptz, last_activity_at timestamptz, expires_at timestamptz,
        hard_expires_at timestamptz)
      RETURNING api_sessions.identity_id),
  logged AS (
    INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type, entity_id,
        request_id, method, changed_fields)
      SELECT e.id, e.at, e.actor_id, e.actor_name, e.action, e.entity_type, e.entity_id,
        e.request_id, e.method, e.changed_fields
      FROM ROWS FROM (json_to_recordset(new_events) AS (id text, at timestamptz, actor_id text,
          actor_name text, action text, entity_type text, entity_id text, request_id text,
          method text, changed_fields jsonb)) WITH ORDINALITY
        AS e(id, at, actor_id, actor_name, action, entity_type, entity_id, request_id, method,
          changed_fields, n)
      ORDER BY e.n),
  -- Each identity's bound, its row locked until COMMIT, in identity order (a batch of the same
  -- identities waits here for this one, and two batches never wait on each other in a cycle). A
  -- new row is checked against identities by its foreign key: the sessions' check (see above).
  bounded AS (
    INSERT INTO identity_session_bounds AS b (identity_id, counted, added)
      SELECT r.identity_id, NULL, count(*) FROM new_rows AS r
      GROUP BY r.identity_id ORDER BY r.identity_id COLLATE "C"
    ON CONFLICT (identity_id) DO UPDATE SET added = b.added + excluded.added
    RETURNING b.identity_id, b.counted, b.added)
  SELECT array_agg(u.identity_id ORDER BY u.identity_id COLLATE "C")
      FILTER (WHERE u.counted IS NULL OR u.counted + u.added > keep)
    INTO over_identities FROM bounded AS u;

  PERFORM pg_notify(channel, opened_payload);

  IF keep IS NULL OR over_identities IS NULL THEN
    RETURN;
  END IF;

  PERFORM pg_advisory_xact_lock(1936028531, hashtext(i)) -- 0x73657373, "sess", as in 012
    FROM unnest(over_identities) AS i;

  -- One read of those identities' sessions: what goes past the cap, and what is left to count.
  WITH ranked AS (
    SELECT x.id, x.identity_id,
      row_number() OVER (PARTITION BY x.identity_id ORDER BY x.created_at DESC, x.id DESC) AS n,
      count(*) OVER (PARTITION BY x.identity_id) AS total
    FROM api_sessions AS x WHERE x.identity_id = ANY (over_identities)),
  counted AS (
    UPDATE identity_session_bounds AS b SET counted = least(t.total, keep), added = 0
      FROM (SELECT DISTINCT r.identity_id, r.total FROM ranked AS r) AS t
     WHERE b.identity_id = t.identity_id),
  gone AS (
    DELETE FROM api_sessions AS a USING ranked AS r WHERE a.id = r.id AND r.n > keep
    RETURNING a.id, a.identity_id)
  SELECT array_agg(g.id), array_agg(g.identity_id) INTO gone_ids, gone_identities FROM gone AS g;

  IF gone_ids IS NULL THEN
    RETURN;
  END IF;
  -- Other instances forget what they kept of these identities' sessions (delivered at COMMIT).
  PERFORM pg_notify(channel, replace(ended_template, id_placeholder, to_json(d.i)::text))
    FROM (SELECT DISTINCT unnest(gone_identities) AS i) AS d;
  RETURN QUERY SELECT * FROM unnest(gone_ids, gone_identities);
END
$$;

-- Planned as record_logins is (013): index reads only, one generic plan per connection.
ALTER FUNCTION record_logins_v2(json, json, integer, text, text, text, text)
  SET enable_seqscan = off;
ALTER FUNCTION record_logins_v2(json, json, integer, text, text, text, text)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION record_logins_v2(json, json, integer, text, text, text, text)
  SET ctrl.sessions_bounded = 'on';

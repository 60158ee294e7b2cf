-- Logins stored from arrays of what varies between them.
--
-- record_logins_v2 (015) reads each login as two JSON objects of 21 named fields. Most of them a
-- login made by the controller never varies, or repeats from another: the session's three times
-- are one, the event's time is the session's, its actor the session's identity, its entity the
-- session, its action, entity type and changed fields always the same. The server parsed and
-- matched every key and converted every value (six timestamps a login) all the same: measured in
-- one connection (batches of 14 logins of 5,000 identities, two functions in turns), about 4 µs of
-- the server's CPU a login of the 43 to 46 the whole call costs; RS256 logins of distinct tokens
-- through one instance served 1.02 times as many a second (six rounds against record_logins_v2,
-- each beside a SQLite controller; README, "Capacity").
--
-- record_logins_v3 takes one array per varying column, in login order, and derives the rest; its
-- results, locks and notices are record_logins_v2's, except that "sessions opened" goes only when
-- an identity of the batch had no session before (see below). The controller calls it for a batch
-- of logins of that shape (every login it makes) and record_logins_v2 for anything else.

-- The cap's trim of record_logins_v2 (015), for the identities whose bound passed `keep`: run by
-- record_logins_v3 within its statement's transaction, holding those identities' bounds.
CREATE FUNCTION trim_sessions_over_cap(
  over_identities text[],
  keep integer,
  channel text,
  ended_template text,
  id_placeholder text
) RETURNS TABLE (ended_id text, ended_identity_id text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  gone_ids text[];
  gone_identities text[];
BEGIN
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

ALTER FUNCTION trim_sessions_over_cap(text[], integer, text, text, text)
  SET enable_seqscan = off;
ALTER FUNCTION trim_sessions_over_cap(text[], integer, text, text, text)
  SET plan_cache_mode = force_generic_plan;

-- Each login's session: id, token hash, identity, authenticator, IP address, creation (also its
-- update and last activity, and its audit event's time), expiry and hard expiry; its event: id,
-- actor name, request id and method. The session is not a legacy token; the event is the
-- identity's `login` of the session, without changed fields.
CREATE FUNCTION record_logins_v3(
  session_ids text[],
  token_hashes bytea[],
  identity_ids text[],
  authenticator_ids text[],
  ip_addresses text[],
  created timestamptz[],
  expires timestamptz[],
  hard_expires timestamptz[],
  event_ids text[],
  actor_names text[],
  request_ids text[],
  methods text[],
  keep integer,
  channel text,
  opened_payload text,
  ended_template text,
  id_placeholder text
) RETURNS TABLE (ended_id text, ended_identity_id text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  over_identities text[];
BEGIN
  WITH new_rows AS (
    INSERT INTO api_sessions (id, token_hash, legacy_token, identity_id, authenticator_id,
        ip_address, created_at, updated_at, last_activity_at, expires_at, hard_expires_at)
      SELECT s.id, s.token_hash, false, s.identity_id, s.authenticator_id, s.ip_address,
        s.created_at, s.created_at, s.created_at, s.expires_at, s.hard_expires_at
      FROM unnest(session_ids, token_hashes, identity_ids, authenticator_ids, ip_addresses,
          created, expires, hard_expires)
        AS s(id, token_hash, identity_id, authenticator_id, ip_address, created_at, expires_at,
          hard_expires_at)
      RETURNING api_sessions.identity_id),
  logged AS (
    INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type, entity_id,
        request_id, method, changed_fields)
      SELECT e.id, e.at, e.actor_id, e.actor_name, 'login', 'api-sessions', e.entity_id,
        e.request_id, e.method, '[]'
      FROM unnest(event_ids, created, identity_ids, actor_names, session_ids, request_ids,
          methods) WITH ORDINALITY
        AS e(id, at, actor_id, actor_name, entity_id, request_id, method, n)
      ORDER BY e.n),
  -- The bounds as record_logins_v2 writes them (015): locked in identity order until COMMIT.
  bounded AS (
    INSERT INTO identity_session_bounds AS b (identity_id, counted, added)
      SELECT r.identity_id, NULL, count(*) FROM new_rows AS r
      GROUP BY r.identity_id ORDER BY r.identity_id COLLATE "C"
    ON CONFLICT (identity_id) DO UPDATE SET added = b.added + excluded.added
    RETURNING b.identity_id, b.counted, b.added)
  SELECT array_agg(u.identity_id ORDER BY u.identity_id COLLATE "C")
      FILTER (WHERE u.counted IS NULL OR u.counted + u.added > keep)
    INTO over_identities FROM bounded AS u;

  -- Other instances need "sessions opened" only where an identity had no session before: their
  -- identity pages show whether it has one (hasApiSession). Where it had, the oldest of those
  -- sessions (one row read, first in the index) is locked against deletion until COMMIT (FOR KEY
  -- SHARE, which a session's touch does not wait for), so an instance that hears of its end reads
  -- this batch's sessions too. When that one is being ended meanwhile, the notice goes: it is not
  -- waited for, and no other is locked in its place (a deletion of the identity's sessions locks
  -- them oldest first, so it never holds one this batch's trim waits for while it waits for the
  -- one locked here; the expiry sweep skips locked ones). The trim may end the locked one.
  IF EXISTS (
    SELECT FROM (SELECT DISTINCT unnest(identity_ids) AS i) AS d
     WHERE NOT EXISTS (
       SELECT FROM api_sessions AS a
        WHERE a.id = (
          SELECT o.id FROM api_sessions AS o
           WHERE o.identity_id = d.i AND o.id <> ALL (session_ids)
           ORDER BY o.created_at, o.id LIMIT 1)
        FOR KEY SHARE OF a SKIP LOCKED)) THEN
    PERFORM pg_notify(channel, opened_payload);
  END IF;

  IF keep IS NULL OR over_identities IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM trim_sessions_over_cap(over_identities, keep, channel,
    ended_template, id_placeholder);
END
$$;

-- Planned as record_logins_v2 is (013, 015); its own sessions are counted in its statement.
ALTER FUNCTION record_logins_v3(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], integer, text, text, text, text)
  SET enable_seqscan = off;
ALTER FUNCTION record_logins_v3(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], integer, text, text, text, text)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION record_logins_v3(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], integer, text, text, text, text)
  SET ctrl.sessions_bounded = 'on';

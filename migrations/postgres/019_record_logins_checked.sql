-- Logins stored only while their identity still may log in as it was checked.
--
-- A login checks its credentials (a password's scrypt, a JWT's signature), then its session waits
-- for the group commit. An identity disabled, or given a new password, in between ended the
-- sessions stored by then and missed this one: it worked on (after a re-enable, for a disabled
-- identity). record_logins_v4 is record_logins_v3 (016) with that check: it reads the batch's
-- identities locked FOR SHARE (in id order) and stores no session or event of a login whose
-- identity is gone or disabled, or whose password hash (password logins: checked_hashes, NULL for
-- others) is no longer the identity's. Those come back as refused rows.
--
-- FOR SHARE, not FOR KEY SHARE: it conflicts with the UPDATE of the identity that disables it or
-- sets its password, and with its DELETE. A change that came first (uncommitted) is waited for,
-- and the row is then read again as the change left it (READ COMMITTED's recheck of a row updated
-- meanwhile; FOR KEY SHARE does not wait for an update of other columns, and would read the row
-- as it was). A change that comes after waits for the batch's COMMIT (the controller updates the
-- identity before it ends its sessions, in one transaction), and its deletion of the identity's
-- sessions, a later statement, sees the batch's.

CREATE FUNCTION record_logins_v4(
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
  checked_hashes text[],
  keep integer,
  channel text,
  opened_payload text,
  ended_template text,
  id_placeholder text
) RETURNS TABLE (ended_id text, ended_identity_id text, refused boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  over_identities text[];
  refused_n bigint[];
BEGIN
  WITH now_as AS MATERIALIZED (
    SELECT i.id, i.disabled, i.password_hash FROM identities AS i
     WHERE i.id = ANY (identity_ids) ORDER BY i.id COLLATE "C" FOR SHARE)
  SELECT array_agg(l.n) INTO refused_n
    FROM unnest(identity_ids, checked_hashes) WITH ORDINALITY AS l(identity_id, hash, n)
    LEFT JOIN now_as AS w ON w.id = l.identity_id
   WHERE w.id IS NULL OR w.disabled
      OR (l.hash IS NOT NULL AND w.password_hash IS DISTINCT FROM l.hash);
  refused_n := coalesce(refused_n, '{}');

  WITH new_rows AS (
    INSERT INTO api_sessions (id, token_hash, legacy_token, identity_id, authenticator_id,
        ip_address, created_at, updated_at, last_activity_at, expires_at, hard_expires_at)
      SELECT s.id, s.token_hash, false, s.identity_id, s.authenticator_id, s.ip_address,
        s.created_at, s.created_at, s.created_at, s.expires_at, s.hard_expires_at
      FROM unnest(session_ids, token_hashes, identity_ids, authenticator_ids, ip_addresses,
          created, expires, hard_expires) WITH ORDINALITY
        AS s(id, token_hash, identity_id, authenticator_id, ip_address, created_at, expires_at,
          hard_expires_at, n)
      WHERE s.n <> ALL (refused_n)
      RETURNING api_sessions.identity_id),
  logged AS (
    INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type, entity_id,
        request_id, method, changed_fields)
      SELECT e.id, e.at, e.actor_id, e.actor_name, 'login', 'api-sessions', e.entity_id,
        e.request_id, e.method, '[]'
      FROM unnest(event_ids, created, identity_ids, actor_names, session_ids, request_ids,
          methods) WITH ORDINALITY
        AS e(id, at, actor_id, actor_name, entity_id, request_id, method, n)
      WHERE e.n <> ALL (refused_n)
      ORDER BY e.n),
  -- The bounds as record_logins_v3 writes them (016): locked in identity order until COMMIT.
  bounded AS (
    INSERT INTO identity_session_bounds AS b (identity_id, counted, added)
      SELECT r.identity_id, NULL, count(*) FROM new_rows AS r
      GROUP BY r.identity_id ORDER BY r.identity_id COLLATE "C"
    ON CONFLICT (identity_id) DO UPDATE SET added = b.added + excluded.added
    RETURNING b.identity_id, b.counted, b.added)
  SELECT array_agg(u.identity_id ORDER BY u.identity_id COLLATE "C")
      FILTER (WHERE u.counted IS NULL OR u.counted + u.added > keep)
    INTO over_identities FROM bounded AS u;

  -- "Sessions opened", as record_logins_v3 sends it (016), for the identities of stored logins.
  IF EXISTS (
    SELECT FROM (SELECT DISTINCT l.i FROM unnest(identity_ids) WITH ORDINALITY AS l(i, n)
                  WHERE l.n <> ALL (refused_n)) AS d
     WHERE NOT EXISTS (
       SELECT FROM api_sessions AS a
        WHERE a.id = (
          SELECT o.id FROM api_sessions AS o
           WHERE o.identity_id = d.i AND o.id <> ALL (session_ids)
           ORDER BY o.created_at, o.id LIMIT 1)
        FOR KEY SHARE OF a SKIP LOCKED)) THEN
    PERFORM pg_notify(channel, opened_payload);
  END IF;

  RETURN QUERY SELECT session_ids[n::integer], identity_ids[n::integer], true
    FROM unnest(refused_n) AS n;
  IF keep IS NULL OR over_identities IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT t.ended_id, t.ended_identity_id, false
    FROM trim_sessions_over_cap(over_identities, keep, channel, ended_template, id_placeholder)
      AS t;
END
$$;

-- Planned as record_logins_v3 is (016).
ALTER FUNCTION record_logins_v4(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], text[], integer, text, text,
    text, text)
  SET enable_seqscan = off;
ALTER FUNCTION record_logins_v4(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], text[], integer, text, text,
    text, text)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION record_logins_v4(text[], bytea[], text[], text[], text[], timestamptz[],
    timestamptz[], timestamptz[], text[], text[], text[], text[], text[], integer, text, text,
    text, text)
  SET ctrl.sessions_bounded = 'on';

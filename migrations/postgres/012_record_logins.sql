-- A group commit of logins in one statement (one round trip, its own transaction): the sessions,
-- their audit events in the order given, the "sessions opened" notification, then the session cap.
-- Before, the same work was six statements on one connection (BEGIN, two inserts, the locks, the
-- trim, COMMIT), each answered on its own. Measured side by side on one machine, batches of 6
-- logins with two in flight: the controller's CPU for the write went from 111 to 58 µs a login,
-- the server's from 217 to 155 µs, and a batch's latency from 2.9 to 1.7 ms.
--
-- The cap: each identity of the batch keeps its `keep` newest sessions (by creation). Batches of
-- one identity may run at once on several instances, so the trim takes a transaction-scoped
-- advisory lock per identity first (in identity order, with the key the trim used before: an
-- instance still on the previous statements during a rolling upgrade takes the same locks). In
-- READ COMMITTED each statement of a VOLATILE function takes a new snapshot, so the DELETE, begun
-- once the locks are held, sees every batch of those identities that committed meanwhile: the cap
-- is exact, and two batches never delete the same rows in different orders (a deadlock).
--
-- The rows arrive as JSON arrays of objects with the columns' names (token_hash in base64): one
-- parameter each, whatever the batch size, so the call is parsed and planned once per connection.
--
-- The cap's exactness needs READ COMMITTED (under REPEATABLE READ the DELETE would keep the
-- function's first snapshot): the controller's connections ask for it (connection.ts), whatever
-- the database's or role's default.
--
-- Instances of the release that created this function call it by name while others are upgraded:
-- a later change of its behaviour or signature is a new function (record_logins_v2), never a
-- CREATE OR REPLACE of this one.
CREATE FUNCTION record_logins(
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
  batch_identities text[];
  gone_ids text[];
  gone_identities text[];
BEGIN
  -- Each JSON document is parsed once: the identities of the batch come back from the INSERT.
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
      ORDER BY e.n)
  SELECT array_agg(DISTINCT r.identity_id ORDER BY r.identity_id) INTO batch_identities FROM new_rows AS r;

  PERFORM pg_notify(channel, opened_payload);

  IF keep IS NULL THEN
    RETURN;
  END IF;

  -- In the array's order (one statement: unnest gives its elements in order).
  PERFORM pg_advisory_xact_lock(1936028531, hashtext(i)) -- 0x73657373, "sess"
    FROM unnest(batch_identities) AS i;

  WITH gone AS (
    DELETE FROM api_sessions AS a WHERE a.id IN (
      SELECT past.id
      FROM unnest(batch_identities) AS i(identity_id)
      CROSS JOIN LATERAL (
        SELECT x.id FROM api_sessions AS x WHERE x.identity_id = i.identity_id
        ORDER BY x.created_at DESC, x.id DESC OFFSET keep) AS past)
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

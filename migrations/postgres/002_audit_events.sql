-- Audit events: who changed which signer, identity or policy, and every login and logout.
-- No foreign keys: an event outlives the entity and the actor it names. `seq` orders events
-- written in the same millisecond; `changed_fields` holds field names only (never values).
CREATE TABLE audit_events (
  seq            bigserial PRIMARY KEY,
  id             text COLLATE "C" NOT NULL CONSTRAINT audit_events_id_key UNIQUE,
  at             timestamptz NOT NULL,
  actor_id       text COLLATE "C",
  actor_name     text COLLATE "C",
  action         text COLLATE "C" NOT NULL,
  entity_type    text COLLATE "C" NOT NULL,
  entity_id      text COLLATE "C" NOT NULL,
  request_id     text,
  method         text COLLATE "C",
  changed_fields jsonb NOT NULL DEFAULT '[]'
);

-- The default order (newest first) and the retention purge read this.
CREATE INDEX audit_events_at ON audit_events (at, seq);
-- "Who changed this signer": filters on one entity.
CREATE INDEX audit_events_entity ON audit_events (entity_id, at);

-- Audit events: who changed which signer, identity or policy, and every login and logout.
-- No foreign keys: an event outlives the entity and the actor it names. `seq` orders events
-- written in the same millisecond; `changed_fields` is a JSON array of field names (never values).
CREATE TABLE audit_events (
  seq            INTEGER PRIMARY KEY,
  id             TEXT NOT NULL UNIQUE,
  at             TEXT NOT NULL,
  actor_id       TEXT,
  actor_name     TEXT,
  action         TEXT NOT NULL,
  entity_type    TEXT NOT NULL,
  entity_id      TEXT NOT NULL,
  request_id     TEXT,
  method         TEXT,
  changed_fields TEXT NOT NULL DEFAULT '[]'
);

-- The default order (newest first) and the retention purge read this.
CREATE INDEX audit_events_at ON audit_events (at, seq);
-- "Who changed this signer": filters on one entity.
CREATE INDEX audit_events_entity ON audit_events (entity_id, at);

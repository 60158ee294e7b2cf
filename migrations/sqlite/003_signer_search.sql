-- Substring search for signer lists (`name contains "x"`, `issuer icontains "x"`) without scanning the
-- table: an FTS5 trigram index over name and issuer. FTS5 needs integer rowids, which the signers
-- table (WITHOUT ROWID) does not have, so a small side table carries them; triggers keep both in step.
CREATE TABLE signer_search (
  rowid  INTEGER PRIMARY KEY,
  id     TEXT NOT NULL UNIQUE,
  name   TEXT NOT NULL,
  issuer TEXT NOT NULL
);

CREATE VIRTUAL TABLE signer_search_fts USING fts5 (
  name, issuer, content = 'signer_search', content_rowid = 'rowid', tokenize = 'trigram'
);

CREATE TRIGGER signer_search_ai AFTER INSERT ON signer_search BEGIN
  INSERT INTO signer_search_fts (rowid, name, issuer) VALUES (new.rowid, new.name, new.issuer);
END;
CREATE TRIGGER signer_search_ad AFTER DELETE ON signer_search BEGIN
  INSERT INTO signer_search_fts (signer_search_fts, rowid, name, issuer)
  VALUES ('delete', old.rowid, old.name, old.issuer);
END;
CREATE TRIGGER signer_search_au AFTER UPDATE ON signer_search BEGIN
  INSERT INTO signer_search_fts (signer_search_fts, rowid, name, issuer)
  VALUES ('delete', old.rowid, old.name, old.issuer);
  INSERT INTO signer_search_fts (rowid, name, issuer) VALUES (new.rowid, new.name, new.issuer);
END;

CREATE TRIGGER signers_search_ai AFTER INSERT ON signers BEGIN
  INSERT INTO signer_search (id, name, issuer) VALUES (new.id, new.name, new.issuer);
END;
CREATE TRIGGER signers_search_au AFTER UPDATE OF name, issuer ON signers BEGIN
  UPDATE signer_search SET name = new.name, issuer = new.issuer WHERE id = new.id;
END;
CREATE TRIGGER signers_search_ad AFTER DELETE ON signers BEGIN
  DELETE FROM signer_search WHERE id = old.id;
END;

INSERT INTO signer_search (id, name, issuer) SELECT id, name, issuer FROM signers;

-- Lists filtered on enabled and sorted by name or creation time read these in order.
CREATE INDEX signers_enabled_name ON signers (enabled, name);
CREATE INDEX signers_enabled_created ON signers (enabled, created_at, id);

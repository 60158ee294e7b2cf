-- Lists sort by a field and then by id ascending, so `sort createdAt desc` asks for created_at
-- descending with id ascending, which the (created_at, id) indexes cannot give in one scan: these
-- hold exactly that order (as migrations/sqlite/006 does).
CREATE INDEX signers_created_desc ON signers (created_at DESC, id);
CREATE INDEX signers_enabled_created_desc ON signers (enabled, created_at DESC, id);

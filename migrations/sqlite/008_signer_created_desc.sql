-- Lists sort by a field and then by id ascending, so `sort createdAt desc` asks for created_at
-- descending with id ascending: the (created_at, id) indexes can serve only one of the two
-- directions, and SQLite then sorted every match (39 to 53 ms at 100,000 signers, all created in the
-- same millisecond). These indexes hold exactly that order; ascending sorts keep the old ones.
CREATE INDEX signers_created_desc ON signers (created_at DESC, id);
CREATE INDEX signers_enabled_created_desc ON signers (enabled, created_at DESC, id);

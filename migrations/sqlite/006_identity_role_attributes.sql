-- Role attributes of identities (OpenZiti's `roleAttributes`): a JSON array of strings, read back
-- on the identity and listed, distinct, at /identity-role-attributes.
ALTER TABLE identities ADD COLUMN role_attributes TEXT NOT NULL DEFAULT '[]';

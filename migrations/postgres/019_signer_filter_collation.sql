-- The signer list filters on a certificate signer's fields, its clientId, targetToken and enroll*
-- settings, and its kid. Comparisons in filters (`commonName < "m"`, `between`) follow the column's
-- collation: as in 018, these use the C collation, so that a filter selects byte-wise exactly the
-- rows it selects on SQLite whatever the database's default collation. Only the unique index on kid
-- reads one of them; it is rebuilt, the table is not rewritten.
ALTER TABLE signers
  ALTER COLUMN kid TYPE text COLLATE "C",
  ALTER COLUMN cert_pem TYPE text COLLATE "C",
  ALTER COLUMN common_name TYPE text COLLATE "C",
  ALTER COLUMN fingerprint TYPE text COLLATE "C",
  ALTER COLUMN client_id TYPE text COLLATE "C",
  ALTER COLUMN target_token TYPE text COLLATE "C",
  ALTER COLUMN enroll_name_claims_selector TYPE text COLLATE "C",
  ALTER COLUMN enroll_attribute_claims_selector TYPE text COLLATE "C";

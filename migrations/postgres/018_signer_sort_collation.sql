-- Signer lists sort by audience and claimsProperty (OpenZiti's console sorts its signer table by
-- audience). Sorted text columns use the C collation, as in 001, so that a list sorts byte-wise
-- exactly as on SQLite whatever the database's default collation (under en_US, `alpha` would come
-- before `Zeta`; SQLite puts `Zeta` first). Comparisons in filters (`audience < "m"`) follow it
-- too. No index reads these columns; the change rewrites nothing but the column's collation.
ALTER TABLE signers
  ALTER COLUMN audience TYPE text COLLATE "C",
  ALTER COLUMN claims_property TYPE text COLLATE "C";

-- A counter every signer write increments in its own transaction: an instance that keeps signer
-- lists serialised compares it with the one they were built at, so a change committed through any
-- other instance shows in the very next response.
CREATE TABLE signer_list_version (
  one     boolean PRIMARY KEY DEFAULT true CHECK (one),
  version bigint NOT NULL
);
INSERT INTO signer_list_version (version) VALUES (0);

-- The plans of record_logins (012): index reads only, made once per connection. Its statements and
-- results are unchanged, so instances of the release before, which call it too during a rolling
-- upgrade, get the same plans.
--
-- enable_seqscan: a connection keeps the plans of its first calls. On a new database they are made
-- on the statistics of a nearly empty api_sessions (autovacuum analyzes it after its first rows),
-- and the plan then chosen for the session cap, a sequential scan, stayed as the table grew until
-- the next ANALYZE: with 20,000 sessions, one login took 17.8 s
-- (test/store/record-logins-postgres.test.ts). Every statement of the function can read by an
-- index or from its parameters.
--
-- plan_cache_mode: the cap's DELETE was planned anew on every call (its custom plans looked cheaper
-- on paper than the generic one), at each batch's cost.
--
-- Measured in one connection (the server's CPU a login; 5,000 identities; synchronous_commit off,
-- to leave the WAL flush out), before and after: batches of 11 logins, 50 and 50 µs with 5 sessions
-- an identity, 73 and 56 µs with 30, 101 and 88 µs with 100 (every login then ends a session), 814
-- and 45 µs on the statistics of an empty table; a batch of one login, 335 and 150 µs.
ALTER FUNCTION record_logins(json, json, integer, text, text, text, text)
  SET enable_seqscan = off;
ALTER FUNCTION record_logins(json, json, integer, text, text, text, text)
  SET plan_cache_mode = force_generic_plan;

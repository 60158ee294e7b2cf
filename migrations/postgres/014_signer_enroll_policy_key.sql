-- A signer's enroll_auth_policy_id references its policy (007 left it to the services' checks).
-- Those checks read before they write, and two instances' requests at once could pass both: a
-- policy deleted while a signer was created to enroll into it left the signer naming a deleted
-- policy. The key refuses the second of the two writes (answered 404 or 409 naming the field).
--
-- DEFERRABLE INITIALLY DEFERRED: checked at COMMIT, so that one unit of work may insert a signer
-- before the policy it names (policies reference signers too; copy-to-postgres inserts signers
-- first, and replaces the built-in default policy inside its transaction).
--
-- NOT VALID: a signer already naming a deleted policy does not stop the upgrade (check-data-integrity
-- reports it); the key is validated at once when no such signer exists.
ALTER TABLE signers
  ADD CONSTRAINT signers_enroll_auth_policy_id_fkey FOREIGN KEY (enroll_auth_policy_id)
  REFERENCES auth_policies (id) DEFERRABLE INITIALLY DEFERRED NOT VALID;

DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM signers s
     WHERE NOT EXISTS (SELECT 1 FROM auth_policies p WHERE p.id = s.enroll_auth_policy_id)
  ) THEN
    ALTER TABLE signers VALIDATE CONSTRAINT signers_enroll_auth_policy_id_fkey;
  END IF;
END
$$;

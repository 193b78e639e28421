-- The participant kit's SQL (services/kit/pkit.h), applied by pkit_migrate before
-- each participant's own schema, in the same transaction and under its lock:
-- the two checks that the kit's generated statements (services/kit_store/pkit_store.c)
-- end with. Idempotent, like every schema.

-- saga_check(ok, what): fails the statement (and the transaction) unless
-- ok. A write that must change exactly the rows the daemon decided on ends
-- with it, so the COMMIT sent behind it in the same pipeline never commits
-- a partial write (services/kit_store/pkit_store.c).
CREATE OR REPLACE FUNCTION saga_check(ok boolean, what text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'saga_check failed: %', what USING ERRCODE = 'P0001';
	END IF;
	RETURN 1;
END
$$;

-- saga_unchanged(ok, what): fails the statement (and the transaction) with
-- serialization_failure unless ok. The one-round-trip path
-- (services/kit_store/pkit_store.c, docs/architecture.md) ends with it: its writes were decided on cached
-- values, and a row that no longer holds them is a lost race, which the
-- daemon answers by taking the locking path (logged at DEBUG, not ERROR).
CREATE OR REPLACE FUNCTION saga_unchanged(ok boolean, what text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'saga_unchanged failed: %', what USING ERRCODE = '40001';
	END IF;
	RETURN 1;
END
$$;

-- Shipping participant schema. Applied by shippingd at every start, under an
-- advisory lock, so every statement must be idempotent. The records table
-- is the participant kit's (common/pkit.h): saga_id, status, the command's
-- arguments, updated_at.

-- The idempotency record of one saga id is its shipment (saga-semantics.md
-- rules 2 and 6): one per saga, created by the first ShipOrder. ShipOrder is
-- a retriable step: there is no compensation, so no tombstone either. The
-- primary key is what serialises concurrent duplicates.
CREATE TABLE IF NOT EXISTS shipments (
	saga_id uuid PRIMARY KEY,
	customer text NOT NULL,
	sku text NOT NULL,
	qty int NOT NULL CHECK (qty > 0),
	status text NOT NULL CHECK (status IN ('SHIPPED')),
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);

-- ListShipments' newest-first page.
CREATE INDEX IF NOT EXISTS shipments_newest ON shipments (created_at DESC, saga_id);

-- saga_check(ok, what): fails the statement (and the transaction) unless
-- ok. A write that must change exactly the rows the daemon decided on ends
-- with it, so the COMMIT sent behind it in the same pipeline never commits
-- a partial write (common/pkit_store.c).
CREATE OR REPLACE FUNCTION saga_check(ok boolean, what text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'saga_check failed: %', what USING ERRCODE = 'P0001';
	END IF;
	RETURN 1;
END
$$;

-- saga_unchanged(ok, what): fails the statement with serialization_failure
-- unless ok: the end of the one-round-trip path (common/pkit_store.c), a
-- lost race that the daemon answers by taking the locking path.
CREATE OR REPLACE FUNCTION saga_unchanged(ok boolean, what text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'saga_unchanged failed: %', what USING ERRCODE = '40001';
	END IF;
	RETURN 1;
END
$$;

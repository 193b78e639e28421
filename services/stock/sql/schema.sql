-- Stock participant schema. Applied by stockd at every start, under an
-- advisory lock, so every statement must be idempotent.

-- One row per sku: what can still be reserved.
CREATE TABLE IF NOT EXISTS stock (
	sku text PRIMARY KEY,
	on_hand bigint NOT NULL CHECK (on_hand >= 0)
);

-- The idempotency record of one saga id (saga-semantics.md rules 2, 5, 6):
-- the outcome of its ReserveStock, or the tombstone of an early ReleaseStock.
-- The primary key is what serialises concurrent duplicates.
CREATE TABLE IF NOT EXISTS reservations (
	saga_id uuid PRIMARY KEY,
	sku text NOT NULL,
	qty int NOT NULL CHECK (qty > 0),
	status text NOT NULL
	    CHECK (status IN ('RESERVED', 'OUT_OF_STOCK', 'UNKNOWN_SKU', 'RELEASED', 'TOMBSTONE')),
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);

-- ListStock sums the live reservations of each sku.
CREATE INDEX IF NOT EXISTS reservations_live_by_sku
	ON reservations (sku) WHERE status = 'RESERVED';

-- ListStock's newest-first page of reservations.
CREATE INDEX IF NOT EXISTS reservations_newest ON reservations (created_at DESC, saga_id);

-- saga_check(ok, what): fails the statement (and the transaction) unless
-- ok. A write that must change exactly the rows the daemon decided on ends
-- with it, so the COMMIT sent behind it in the same pipeline never commits
-- a partial write (store.c).
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
-- serialization_failure unless ok. The one-round-trip path (store.c,
-- docs/architecture.md) ends with it: its writes were decided on cached
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

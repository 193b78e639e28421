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

-- The business ledger of the records retention deleted (docs/participants.md,
-- "Retention"): a record older than --retention plus twice --max-clock-skew
-- is deleted and, in the same transaction, counted here by its sku and
-- status: how many (reservations) and the sum of their qty. Kept for ever,
-- so that stock conservation still holds once records are gone:
-- on_hand + live RESERVED qty + retired RESERVED total = initial + restocks.
CREATE TABLE IF NOT EXISTS reservations_retired (
	key text NOT NULL,
	status text NOT NULL,
	records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
	total bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (key, status)
);

-- ListStock sums the live reservations of each sku.
CREATE INDEX IF NOT EXISTS reservations_live_by_sku
	ON reservations (sku) WHERE status = 'RESERVED';

-- ListStock's newest-first page of reservations; retention takes the
-- expired ones oldest first by it (services/kit_store/pkit_retention.c).
CREATE INDEX IF NOT EXISTS reservations_newest ON reservations (created_at DESC, saga_id);

-- saga_check and saga_unchanged, which the kit's statements end with, come
-- from the kit (services/kit_store/sql/pkit.sql), applied before this file.

-- Rule R5 (schema version 3, issue 32; docs/saga-semantics.md, "Retention"):
-- a saga is its id and its start. Each record keeps the start of the saga
-- that made it (saga_started_unix_ms, ms since the epoch), and a command of
-- another start with the same id is refused saga_id_reused, changing
-- nothing (services/kit/pkit_decide.c). NULL: a record made before version 3,
-- which matches any start until retention deletes it.
ALTER TABLE reservations ADD COLUMN IF NOT EXISTS saga_started_ms bigint;

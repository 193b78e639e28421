-- Shipping participant schema. Applied by shippingd at every start, under an
-- advisory lock, so every statement must be idempotent. The records table
-- is the participant kit's (services/kit/pkit.h): saga_id, status, the command's
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

-- The business ledger of the records retention deleted (docs/participants.md,
-- "Retention"): a record older than --retention plus twice --max-clock-skew
-- is deleted and, in the same transaction, counted here by its customer and
-- status: how many (shipments) and the sum of their qty. Kept for ever, so
-- that what was shipped can still be told once records are gone.
CREATE TABLE IF NOT EXISTS shipments_retired (
	key text NOT NULL,
	status text NOT NULL,
	records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
	total bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (key, status)
);

-- ListShipments' newest-first page; retention takes the expired shipments
-- oldest first by it (services/kit_store/pkit_retention.c).
CREATE INDEX IF NOT EXISTS shipments_newest ON shipments (created_at DESC, saga_id);

-- saga_check and saga_unchanged, which the kit's statements end with, come
-- from the kit (services/kit_store/sql/pkit.sql), applied before this file.

-- Rule R5 (schema version 3, issue 32; docs/saga-semantics.md, "Retention"):
-- a saga is its id and its start. Each record keeps the start of the saga
-- that made it (saga_started_unix_ms, ms since the epoch), and a command of
-- another start with the same id is refused saga_id_reused, changing
-- nothing (services/kit/pkit_decide.c). NULL: a record made before version 3,
-- which matches any start until retention deletes it.
ALTER TABLE shipments ADD COLUMN IF NOT EXISTS saga_started_ms bigint;

-- Payment participant schema. Applied by paymentd at every start, under an
-- advisory lock, so every statement must be idempotent. Money is bigint
-- minor units.

-- One row per customer account.
CREATE TABLE IF NOT EXISTS accounts (
	customer text PRIMARY KEY,
	balance bigint NOT NULL CHECK (balance >= 0)
);

-- The idempotency record of one saga id (saga-semantics.md rules 2, 5, 6):
-- the outcome of its ChargePayment, or the tombstone of an early
-- RefundPayment. The primary key is what serialises concurrent duplicates.
CREATE TABLE IF NOT EXISTS charges (
	saga_id uuid PRIMARY KEY,
	customer text NOT NULL,
	amount bigint NOT NULL CHECK (amount > 0),
	status text NOT NULL
	    CHECK (status IN ('CHARGED', 'DECLINED', 'UNKNOWN_ACCOUNT', 'REFUNDED', 'TOMBSTONE')),
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);

-- The business ledger of the records retention deleted (docs/participants.md,
-- "Retention"): a record older than --retention plus twice --max-clock-skew
-- is deleted and, in the same transaction, counted here by its customer and
-- status: how many (charges) and the sum of their amount (minor units). Kept
-- for ever, so that money conservation still holds once records are gone:
-- balance + live CHARGED amount + retired CHARGED total = initial + deposits.
CREATE TABLE IF NOT EXISTS charges_retired (
	key text NOT NULL,
	status text NOT NULL,
	records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
	total bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (key, status)
);

-- The idempotency record of one keyed Deposit (proto Deposit.deposit_id):
-- what it added and the balance right after, which a duplicate is answered
-- with. Its primary key serialises concurrent duplicates: the second one's
-- insert fails, and with it the statement that added the money again.
-- Deposits sent without a key leave no row.
CREATE TABLE IF NOT EXISTS deposits (
	deposit_id uuid PRIMARY KEY,
	customer text NOT NULL,
	amount bigint NOT NULL CHECK (amount > 0),
	balance_after bigint NOT NULL CHECK (balance_after >= 0),
	created_at timestamptz NOT NULL DEFAULT now(),
	-- the token of the call that applied it, so that the same call re-run
	-- after losing its connection past the COMMIT knows the record is its own
	applied_by uuid
);
ALTER TABLE deposits ADD COLUMN IF NOT EXISTS applied_by uuid;

-- ListAccounts' newest-first page of charges, and the per-account sums;
-- retention takes the expired charges oldest first by charges_newest
-- (services/kit_store/pkit_retention.c).
CREATE INDEX IF NOT EXISTS charges_newest ON charges (created_at DESC, saga_id);
CREATE INDEX IF NOT EXISTS charges_by_customer ON charges (customer, status);

-- saga_check and saga_unchanged, which the kit's statements end with, come
-- from the kit (services/kit_store/sql/pkit.sql), applied before this file.

-- Rule R5 (schema version 3, issue 32; docs/saga-semantics.md, "Retention"):
-- a saga is its id and its start. Each record keeps the start of the saga
-- that made it (saga_started_unix_ms, ms since the epoch), and a command of
-- another start with the same id is refused saga_id_reused, changing
-- nothing (services/kit/pkit_decide.c). NULL: a record made before version 3,
-- which matches any start until retention deletes it.
ALTER TABLE charges ADD COLUMN IF NOT EXISTS saga_started_ms bigint;

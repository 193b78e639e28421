-- The orchestrator's own database: one row per saga (the saga row is also
-- the outbox: the command due is derived from the state and written in the
-- same transaction as the transition), and an append-only history.
-- Applied at every start; idempotent.

CREATE TABLE IF NOT EXISTS sagas (
    saga_id          uuid PRIMARY KEY,
    state            text NOT NULL CHECK (state IN
                         ('RESERVING', 'CHARGING', 'COMPLETED',
                          'REFUNDING', 'RELEASING', 'CANCELLED')),
    reason           text NOT NULL DEFAULT '',
    customer         text NOT NULL,
    sku              text NOT NULL,
    qty              integer NOT NULL CHECK (qty > 0),
    amount           bigint NOT NULL CHECK (amount > 0),   -- minor units
    version          bigint NOT NULL DEFAULT 1,            -- optimistic concurrency
    attempts         integer NOT NULL DEFAULT 0,           -- failed tries of the current command
    attention        boolean NOT NULL DEFAULT false,       -- flagged for an operator
    next_attempt_at  timestamptz,                          -- command due (or lease end); NULL when terminal
    step_deadline    timestamptz,                          -- NULL when the state has none
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The sweep reads the unfinished sagas through sagas_open. No index holds
-- a column that a non-terminal transition changes (state, next_attempt_at,
-- version, ...), and pages are left half empty (fillfactor), so those
-- updates are HOT: the new row version goes on the same page and no index
-- gets an entry. Only the terminal transition, which sets `finished`, is
-- indexed again (docs/benchmarks.md: 7.7 -> 5 index entries a saga).
ALTER TABLE sagas ADD COLUMN IF NOT EXISTS finished boolean
    GENERATED ALWAYS AS (state IN ('COMPLETED', 'CANCELLED')) STORED;
DO $$
BEGIN
    -- only when it differs: the ALTER takes a table lock and makes every
    -- session plan its statements on sagas again
    IF NOT coalesce((SELECT reloptions FROM pg_class WHERE oid = 'sagas'::regclass)
                    @> '{fillfactor=50}', false) THEN
        ALTER TABLE sagas SET (fillfactor = 50);
    END IF;
END
$$;
DROP INDEX IF EXISTS sagas_due;
CREATE INDEX IF NOT EXISTS sagas_open ON sagas (created_at) WHERE NOT finished;
CREATE INDEX IF NOT EXISTS sagas_created ON sagas (created_at DESC);

-- The history of every saga, keyed by (saga_id, version): every row is
-- written in the statement that writes the saga row it follows (store.c),
-- so the saga exists; there is no foreign key, whose check on every insert
-- cost about a tenth of the orchestrator's database time
-- (docs/benchmarks.md).
CREATE TABLE IF NOT EXISTS saga_history (
    saga_id     uuid NOT NULL,         -- sagas.saga_id
    version     bigint NOT NULL,       -- the saga version this row produced
    from_state  text,                  -- NULL for the start
    to_state    text NOT NULL,
    event       text NOT NULL,
    reason      text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (saga_id, version)
);

-- Databases made before that: drop the surrogate key and the foreign key,
-- and make (saga_id, version), unique already, the primary key (one
-- transaction, with the rest of this file).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'saga_history'
                 AND column_name = 'id') THEN
        ALTER TABLE saga_history DROP CONSTRAINT IF EXISTS saga_history_saga_id_fkey;
        ALTER TABLE saga_history DROP COLUMN id;
        ALTER TABLE saga_history
            DROP CONSTRAINT IF EXISTS saga_history_saga_id_version_key,
            ADD CONSTRAINT saga_history_pkey PRIMARY KEY (saga_id, version);
    END IF;
END
$$;

-- Append-only (semantics rule 8).
CREATE OR REPLACE FUNCTION saga_history_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'saga_history is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

DROP TRIGGER IF EXISTS saga_history_no_change ON saga_history;
CREATE TRIGGER saga_history_no_change
    BEFORE UPDATE OR DELETE ON saga_history
    FOR EACH ROW EXECUTE FUNCTION saga_history_append_only();

DROP TRIGGER IF EXISTS saga_history_no_truncate ON saga_history;
CREATE TRIGGER saga_history_no_truncate
    BEFORE TRUNCATE ON saga_history
    FOR EACH STATEMENT EXECUTE FUNCTION saga_history_append_only();

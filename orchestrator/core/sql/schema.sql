-- The orchestrator's own database: one row per saga (the saga row is also
-- the outbox: the command due is derived from the state and written in the
-- same transaction as the transition), and an append-only history.
-- Applied at every start; idempotent.

CREATE TABLE IF NOT EXISTS sagas (
    saga_id          uuid PRIMARY KEY,
    state            text NOT NULL,                        -- its definition's name of its position
    reason           text NOT NULL DEFAULT '',
    customer         text NOT NULL,
    sku              text NOT NULL,
    qty              integer CHECK (qty > 0),              -- NULL: input not an Order
    amount           bigint CHECK (amount > 0),            -- minor units; NULL as qty
    input            bytea,                                -- schema 11: see below
    version          bigint NOT NULL DEFAULT 1,            -- optimistic concurrency
    attempts         integer NOT NULL DEFAULT 0,           -- failed tries of the current command
    attention        boolean NOT NULL DEFAULT false,       -- flagged for an operator
    next_attempt_at  timestamptz,                          -- command due (or lease end); NULL when terminal
    step_deadline    timestamptz,                          -- NULL when the state has none
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- A saga's state is the name its definition gives its position (schema
-- version 10, issue 34: docs/saga-definitions.md, section 2): any saga
-- type's, not the order saga's seven. A database made before it checks
-- state against the order saga's names: that check is dropped once (ALTER
-- TABLE blocks even reads of sagas, so only when there is one). The
-- orchestrator writes only names of the definition the saga started with.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint
              WHERE conrelid = 'sagas'::regclass AND contype = 'c'
                AND pg_get_constraintdef(oid) LIKE '%RESERVING%' LOOP
        EXECUTE format('ALTER TABLE sagas DROP CONSTRAINT %I', c.conname);
    END LOOP;
END
$$;

-- A saga's input of its own message (schema version 11, issue 34:
-- docs/saga-definitions.md, "A saga's input"): `input` holds the protobuf
-- encoding of a type whose input is not sagas.v1.Order (NULL for one whose
-- input is, read from the typed columns), re-encoded canonically at the
-- start; such a saga keeps in `customer` its input's customer field if it
-- has one ('' otherwise), '' in sku and NULL in qty and amount. Made only
-- when missing (ALTER TABLE blocks even reads of sagas).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'input' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN input bytea,
                          ALTER COLUMN qty DROP NOT NULL,
                          ALTER COLUMN amount DROP NOT NULL;
    END IF;
END
$$;

-- The indexes of sagas. No index reads a column that a transition of a
-- saga on its first try changes (state, next_attempt_at, version, ...), and
-- pages are left half empty (fillfactor), so those updates are HOT: the new
-- row version goes on the same page and no index gets an entry
-- (docs/saga-states.md, docs/benchmarks.md). The sweep finds due work in two
-- indexes:
--   sagas_open:  sagas on their first try (in flight, or waiting to be sent),
--                oldest first; their next_attempt_at is a lease;
--   sagas_retry: sagas retrying after a failure (attempts > 0), by when the
--                next try is due; during an outage they pile up here, and
--                the sweep reads only the due ones.
-- `finished` and `retry_at` are plain columns that every writer of sagas
-- sets (store.c, from the position the pure state machine returns):
--   finished = the position is terminal (for the order saga: state IN
--   ('COMPLETED', 'CANCELLED'));
--   retry_at = next_attempt_at while attempts > 0 and not finished, else NULL.
-- On the first try they stay false and NULL, so they do not stop HOT. Only
-- the terminal transition, and a saga's first failure and its recovery, are
-- indexed. They were generated columns until PostgreSQL's cost of building
-- their expressions at every statement showed (docs/benchmarks.md).
--
-- Every change is made only when missing: ALTER TABLE takes a lock that
-- blocks even reads of sagas, and an orchestrator starting must not stall
-- the others sharing the database. Upgrading a database made before
-- `finished` existed fills the two columns once, under that lock.
DO $$
BEGIN
    IF NOT coalesce((SELECT reloptions FROM pg_class WHERE oid = 'sagas'::regclass)
                    @> '{fillfactor=50}', false) THEN
        ALTER TABLE sagas SET (fillfactor = 50);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'finished' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN finished boolean NOT NULL DEFAULT false,
                          ADD COLUMN retry_at timestamptz;
        UPDATE sagas SET finished = state IN ('COMPLETED', 'CANCELLED'),
                         retry_at = CASE WHEN attempts > 0
                                         AND state NOT IN ('COMPLETED', 'CANCELLED')
                                    THEN next_attempt_at END
         WHERE state IN ('COMPLETED', 'CANCELLED') OR attempts > 0;
    END IF;
    -- the layout of before: the same two columns, generated (the values
    -- stay; no rewrite)
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
               AND attname = 'finished' AND attgenerated <> '') THEN
        ALTER TABLE sagas ALTER COLUMN finished DROP EXPRESSION;
        ALTER TABLE sagas ALTER COLUMN finished SET DEFAULT false;
        ALTER TABLE sagas ALTER COLUMN finished SET NOT NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
               AND attname = 'retry_at' AND attgenerated <> '') THEN
        ALTER TABLE sagas ALTER COLUMN retry_at DROP EXPRESSION;
    END IF;
    -- an older sweep index; and sagas_open as first made, without retry_at
    DROP INDEX IF EXISTS sagas_due;
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('sagas_open')
               AND pg_get_expr(indpred, indrelid) NOT LIKE '%retry_at%') THEN
        DROP INDEX sagas_open;
    END IF;
    IF to_regclass('sagas_open') IS NULL THEN
        CREATE INDEX sagas_open ON sagas (created_at)
            WHERE NOT finished AND retry_at IS NULL;
    END IF;
    IF to_regclass('sagas_retry') IS NULL THEN
        CREATE INDEX sagas_retry ON sagas (retry_at) WHERE retry_at IS NOT NULL;
    END IF;
    -- the listing's index, sagas_created (created_at DESC) until schema
    -- version 4, is made below as sagas_listing
    -- sagactl list --attention: the few sagas flagged for an operator, not
    -- a walk of sagas_created from the newest. A transition that leaves
    -- the flag as it was still updates the row in place (HOT).
    IF to_regclass('sagas_attention') IS NULL THEN
        CREATE INDEX sagas_attention ON sagas (created_at DESC) WHERE attention;
    END IF;
END
$$;

-- Several orchestrators (schema version 3, issue 20; docs/architecture.md):
-- - `epoch`, the claim's fencing epoch (docs/saga-semantics.md rule 10): 1
--   when StartSaga writes the row (its orchestrator holds it), raised by
--   one by every claim of the sweep; every transition is written only
--   WHERE epoch = the epoch its writer read, so an orchestrator that was
--   frozen past its lease, or cut off from the database, and wakes up
--   changes nothing;
-- - `lease_owner`, the name of the orchestrator that wrote the claim
--   (orchestratord's instance name; for operators and tests);
-- - `waiter`, who waits for this saga's end on another orchestrator. NULL:
--   nobody (the hot path); an instance's name: a StartSaga with wait_ms or
--   a WaitSaga on that instance; '*': calls on several instances. The
--   write that ends the saga NOTIFYs channel saga_finished (payload: the
--   saga id) in its own statement when waiter is set and is not the
--   writer's own name (store.c), so the instance holding the call answers
--   it (listen.c).
-- None is indexed, so claims and waits stay HOT updates. Adding columns
-- with a constant default or none does not rewrite the table; done only
-- when missing (ALTER TABLE blocks even reads of sagas).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'epoch' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN epoch bigint NOT NULL DEFAULT 1,
                          ADD COLUMN lease_owner text;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'waiter' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN waiter text;
    END IF;
END
$$;

-- Listings a page at a time (schema version 4, issue 21): ListSagas
-- orders on (created_at DESC, saga_id DESC) and goes on after the key of a
-- page's last saga (the page token), `(created_at, saga_id) < (t, id)`, an
-- index range on sagas_listing. It replaces sagas_created (created_at
-- DESC), whose entries are its prefix: sagas started in one statement
-- share created_at (up to 128), and without saga_id in the index a page
-- inside such a run would re-sort it. Neither column changes after the
-- insert, so transitions stay HOT. The overdue listing and the gauges
-- (store_read_gauges) read only unfinished sagas, through sagas_open and
-- sagas_retry. CREATE INDEX blocks writes to sagas while it runs: once,
-- when the index is missing.
DO $$
BEGIN
    IF to_regclass('sagas_listing') IS NULL THEN
        CREATE INDEX sagas_listing ON sagas (created_at, saga_id);
    END IF;
    DROP INDEX IF EXISTS sagas_created;
END
$$;

-- Listings from an index at any size (schema version 8, issue 32;
-- docs/operations.md, "Listing plans"): every ListSagas filter reads an
-- index range that starts at the page's key and stops after the page,
-- never a walk of every saga ever made:
--   sagas_customer: (customer, created_at, saga_id), customer=...;
--   sagas_ended:    (cancelled, created_at, saga_id) of finished sagas,
--                   state=COMPLETED (cancelled false) and state=CANCELLED
--                   (true), and their bounded counts;
-- the unfinished states and --overdue through sagas_open and sagas_retry,
-- --attention through sagas_attention, the ages (created_after/before,
-- older_than) and no filter through sagas_listing. `cancelled` is a plain
-- column that every writer of `finished` sets with it (store.c):
-- cancelled = finished AND compensating (schema 10; before it, finished AND
-- state = 'CANCELLED', the order saga's name). No index holds `state`, which
-- every transition changes: a transition of a saga on its first try changes
-- none of these columns, so it stays HOT; only the terminal one (already
-- indexed by sagas_open's `finished`) adds an entry to sagas_ended. The
-- column is added without a rewrite; the CANCELLED sagas of before are
-- marked once, and both indexes are built once (CREATE INDEX blocks writes
-- to sagas while it runs: seconds per million sagas).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'cancelled' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN cancelled boolean NOT NULL DEFAULT false;
        UPDATE sagas SET cancelled = true WHERE finished AND state = 'CANCELLED';
        -- the planner's statistics of the new column now, not at the next
        -- autovacuum: without them it cannot tell how rare CANCELLED is
        ANALYZE sagas;
    END IF;
    IF to_regclass('sagas_customer') IS NULL THEN
        CREATE INDEX sagas_customer ON sagas (customer, created_at, saga_id);
    END IF;
    IF to_regclass('sagas_ended') IS NULL THEN
        CREATE INDEX sagas_ended ON sagas (cancelled, created_at, saga_id) WHERE finished;
    END IF;
END
$$;

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

-- Append-only (semantics rule 8). The one exception (schema version 6,
-- issue 23): retention deletes a finished saga's rows, whole, inside
-- saga_retention_batch (below), which turns the transaction-local setting
-- sagas.retention to its own transaction id around its DELETE. UPDATE and
-- TRUNCATE are refused always, and a DELETE in any other transaction too
-- (a guard against mistakes: the owner of the table can drop the trigger).
CREATE OR REPLACE FUNCTION saga_history_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- the retention batch sets the flag to its own transaction's id: a
    -- session that turns a plain 'on' (or anything else) on by hand still
    -- cannot delete
    IF TG_OP = 'DELETE'
       AND current_setting('sagas.retention', true) = pg_current_xact_id()::text THEN
        RETURN OLD;
    END IF;
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

-- The history feed (schema version 5, issue 22; docs/protocol.md, "The
-- history feed"): every history row keeps the id of the transaction that
-- wrote it, so that WatchHistory can hand each transaction's rows to a
-- follower once, in the order the transactions became visible, by
-- comparing two snapshots (pg_visible_in_snapshot). A 64-bit id (xid8):
-- it never wraps around, unlike the row's xmin. Rows stored before the
-- column existed get the id of the transaction that adds it. The index
-- is the feed's order, (xid, saga_id, version): a page is an ordered index
-- range from the older snapshot's xmin (or the last row sent) that stops
-- after `limit` rows, whatever the table holds beyond (an index on xid
-- alone made every page read and sort the rest of the range). Ids only
-- grow, so its inserts go to the right edge.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'saga_history'::regclass
                   AND attname = 'xid' AND NOT attisdropped) THEN
        ALTER TABLE saga_history ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
    END IF;
    IF to_regclass('saga_history_xid') IS NULL THEN
        CREATE INDEX saga_history_xid ON saga_history (xid, saga_id, version);
    END IF;
END
$$;

-- The feed's key (schema version 5): WatchHistory's cursors carry an
-- HMAC-SHA256 under it (orchestrator/core/feed_cursor.h), so that an
-- orchestrator reads back only cursors that this database's orchestrators
-- made: a forged one could name committed transactions as in progress and
-- make every call read rows it then skips. One row, 32 random bytes as 64
-- hex digits from two gen_random_uuid() (PostgreSQL's strong random source;
-- the uuids' version and variant bits are fixed, so 244 of the 256 bits are
-- random), made once; every orchestrator on the database reads it at start.
CREATE TABLE IF NOT EXISTS feed_key (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    key text NOT NULL CHECK (key ~ '^[0-9a-f]{64}$')
);
INSERT INTO feed_key (key)
    SELECT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
    ON CONFLICT DO NOTHING;

-- Retention (schema version 6, issue 23; docs/saga-semantics.md,
-- "Retention", rule R4; docs/operations.md, "Retention"): one batch of the
-- deletion of finished sagas with all their history
-- (orchestrator/core/store_retention.c). A saga goes when it is finished
-- (COMPLETED or CANCELLED), was created before saga_cutoff (now - retention
-- - 4 x skew) and finished, its row last written, before finished_cutoff
-- (now - retention). A saga that is not terminal stays, however old (one
-- past the horizon is flagged past_horizon and settled by hand).
--   dry:  counts those sagas and their history rows; deletes nothing (lim
--         is ignored);
--   else: takes at most lim of them, oldest first, in the order of the
--         sagas_listing index (created_at, saga_id), which reads them as a
--         range from the oldest and stops after lim, locking each (FOR
--         UPDATE SKIP LOCKED: two passes at once never take the same
--         saga, nor wait on each other), deletes their history rows (the
--         append-only trigger lets them through while sagas.retention
--         holds this transaction's id, set locally) and then their rows.
-- Both DELETEs join the picked ids (unnest) to the primary keys: on a
-- table of 220,000 sagas and 880,000 history rows a batch of 1000 is an
-- index range on sagas_listing and nested loops on sagas_pkey and
-- saga_history_pkey, 50 ms (a table small enough that the batch is a
-- twentieth of it gets a sequential scan, the cheaper plan there). The
-- dry count reads the sagas the planner's way (most of the table when
-- most of it is past the horizon) and each one's history by its key.
-- One call is one statement, so one transaction: a saga goes with all its
-- history or not at all. Returns the sagas and history rows counted or
-- deleted.
-- (The function is defined below, with rule R5's tombstones: version 7.)

-- A saga is its id and its start (schema version 7, issue 32;
-- docs/saga-semantics.md, rule R5). When retention deletes a saga, its id
-- and start stay here, as a tombstone, for as long as a participant may
-- still keep a record of that saga (horizon_id_cutoff_ms: created_at before
-- now - retention - --saga-id-retention - 4 x skew; taken away by the same
-- retention batches, oldest first). StartSaga refuses such an id
-- (FAILED_PRECONDITION saga_id_retired) instead of starting a new saga that
-- a participant would take for the old one: the insert skips it (NOT EXISTS
-- below), and a StartSaga that raced the retention batch deleting it (its
-- insert waited for that batch on the primary key, past its statement's
-- snapshot) is stopped by the trigger saga_id_not_retired, whose query
-- sees the batch's commit, and retried.
CREATE TABLE IF NOT EXISTS saga_ids_retired (
    saga_id    uuid PRIMARY KEY,
    created_at timestamptz NOT NULL,          -- the deleted saga's start
    retired_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS saga_ids_retired_created ON saga_ids_retired (created_at, saga_id);

CREATE OR REPLACE FUNCTION saga_id_not_retired() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM saga_ids_retired r JOIN new_sagas n USING (saga_id)) THEN
        -- a lost race with a retention batch: the caller re-runs the insert,
        -- whose NOT EXISTS then sees the tombstone
        RAISE EXCEPTION 'saga id retired while being started'
            USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS saga_id_not_retired ON sagas;
CREATE TRIGGER saga_id_not_retired
    AFTER INSERT ON sagas REFERENCING NEW TABLE AS new_sagas
    FOR EACH STATEMENT EXECUTE FUNCTION saga_id_not_retired();

-- saga_retention_batch, version 7: as above, and each deleted saga leaves
-- its tombstone in the same transaction; then at most lim tombstones whose
-- saga was created before id_cutoff go (not dry; dry counts them).
-- Returns the sagas, history rows and tombstones counted or deleted.
DROP FUNCTION IF EXISTS saga_retention_batch(timestamptz, timestamptz, integer, boolean);
CREATE OR REPLACE FUNCTION saga_retention_batch(saga_cutoff timestamptz,
                                                finished_cutoff timestamptz,
                                                id_cutoff timestamptz,
                                                lim integer, dry boolean)
RETURNS TABLE(sagas bigint, history bigint, ids bigint)
LANGUAGE plpgsql AS $$
DECLARE
    picked uuid[];
    n_sagas bigint := 0;
    n_history bigint := 0;
    n_ids bigint := 0;
BEGIN
    IF dry THEN
        SELECT count(*), coalesce(sum((SELECT count(*) FROM saga_history h
                                        WHERE h.saga_id = s.saga_id)), 0)
          INTO n_sagas, n_history
          FROM sagas s
         WHERE s.finished AND (coalesce(s.type, 'order') <> 'order'
                               OR s.state IN ('COMPLETED', 'CANCELLED'))
           AND s.created_at < saga_cutoff AND s.updated_at < finished_cutoff;
        SELECT count(*) INTO n_ids FROM saga_ids_retired WHERE created_at < id_cutoff;
        RETURN QUERY SELECT n_sagas, n_history, n_ids;
        RETURN;
    END IF;
    SELECT array_agg(x.saga_id) INTO picked FROM (
        SELECT s.saga_id FROM sagas s
         WHERE s.finished AND (coalesce(s.type, 'order') <> 'order'
                               OR s.state IN ('COMPLETED', 'CANCELLED'))
           AND s.created_at < saga_cutoff AND s.updated_at < finished_cutoff
         ORDER BY s.created_at, s.saga_id
         LIMIT greatest(lim, 0)
         FOR UPDATE SKIP LOCKED) x;
    IF picked IS NOT NULL THEN
        PERFORM set_config('sagas.retention', pg_current_xact_id()::text, true);
        DELETE FROM saga_history h USING unnest(picked) AS d(saga_id)
         WHERE h.saga_id = d.saga_id;
        GET DIAGNOSTICS n_history = ROW_COUNT;
        PERFORM set_config('sagas.retention', 'off', true);
        WITH gone AS (
            DELETE FROM sagas s USING unnest(picked) AS d(saga_id)
             WHERE s.saga_id = d.saga_id RETURNING s.saga_id, s.created_at)
        INSERT INTO saga_ids_retired (saga_id, created_at)
            SELECT saga_id, created_at FROM gone
            ON CONFLICT (saga_id) DO UPDATE SET created_at = EXCLUDED.created_at,
                                                retired_at = now();
        GET DIAGNOSTICS n_sagas = ROW_COUNT;
    END IF;
    DELETE FROM saga_ids_retired r USING (
        SELECT saga_id FROM saga_ids_retired WHERE created_at < id_cutoff
         ORDER BY created_at, saga_id LIMIT greatest(lim, 0)
         FOR UPDATE SKIP LOCKED) x
     WHERE r.saga_id = x.saga_id;
    GET DIAGNOSTICS n_ids = ROW_COUNT;
    RETURN QUERY SELECT n_sagas, n_history, n_ids;
END
$$;
-- Only the owner (the role the daemons apply this schema as) runs it: any
-- other role that may read the tables cannot delete through it.
REVOKE ALL ON FUNCTION saga_retention_batch(timestamptz, timestamptz, timestamptz, integer, boolean)
    FROM PUBLIC;

-- Saga definitions (schema version 9, issue 34; docs/saga-definitions.md,
-- section 2, and docs/operations.md, "Changing a saga definition"): every
-- version of a definition any saga started with, its text kept, so that a
-- saga finishes under the version it started with on any orchestrator,
-- whatever file that orchestrator was started with. `version` is the
-- SHA-256 of the type's canonical form (saga_def_version); `body` the
-- whole file it came from. Rows are never changed or deleted (a few KB a
-- version). sagas.def_id names one without a foreign key: the
-- orchestrator writes only ids it read from here, and the key's check
-- would cost every StartSaga a lookup.
CREATE TABLE IF NOT EXISTS saga_definitions (
    id        serial PRIMARY KEY,
    version   bytea NOT NULL UNIQUE CHECK (length(version) = 32),
    type      text NOT NULL,
    body      text NOT NULL,
    source    text NOT NULL DEFAULT '',  -- the file's path where it was first stored
    loaded_at timestamptz NOT NULL DEFAULT now()
);
-- The version a saga started with; NULL for a saga started before schema
-- version 9: the order saga as the orchestrator built it in.
ALTER TABLE sagas ADD COLUMN IF NOT EXISTS def_id integer;

-- A saga's position in its definition beside its state's name (schema
-- version 10, issue 34): `type` its saga type (NULL for one started before:
-- the order saga); `members` the members of its group that have succeeded
-- (their command forward, their compensation compensating), a bit each;
-- `compensating` true while it is compensated and once it is cancelled
-- (cancelled = finished AND compensating; the overdue listing's
-- compensation_failing reads it). Filled once for the rows of before,
-- under the lock of the ALTER TABLE, when the columns are added.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sagas'::regclass
                   AND attname = 'compensating' AND NOT attisdropped) THEN
        ALTER TABLE sagas ADD COLUMN type text,
                          ADD COLUMN members bigint NOT NULL DEFAULT 0,
                          ADD COLUMN compensating boolean NOT NULL DEFAULT false;
        UPDATE sagas SET compensating = true
         WHERE state IN ('REFUNDING', 'RELEASING', 'CANCELLED');
    END IF;
END
$$;

-- The audit trail (schema version 12, issue 36; docs/operations.md,
-- "Audit"): one row per operator action that changed something (a cancel,
-- a re-arm), with who asked (the caller's roles and address: nng gives no
-- certificate subject), when, why (the operator's words) and what it
-- touched: the saga (its id and its start: rule R5, an id may name another
-- saga after retention) and the version the action wrote, so that the
-- saga's history shows who and why beside its row (store_history joins on
-- (saga_id, saga_started_at, version)). `request_id` is the action's
-- idempotency key: a cancel repeated with it is answered from this row
-- (rule 11). Retention deletes no audit row: they outlive the sagas they
-- touched.
CREATE TABLE IF NOT EXISTS audit (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    action      text NOT NULL,              -- 'cancel', 'retry'
    role        text NOT NULL,              -- the caller's roles: 'admin'
    peer        text NOT NULL,              -- its address, host:port
    reason      text NOT NULL DEFAULT '',   -- the operator's words
    saga_id     uuid,                       -- the saga it touched
    saga_started_at timestamptz,            -- and its start (sagas.created_at)
    version     bigint,                     -- the saga version it wrote
    request_id  text NOT NULL DEFAULT '',   -- its idempotency key
    outcome     text NOT NULL DEFAULT ''    -- the saga's state after it
);
CREATE UNIQUE INDEX IF NOT EXISTS audit_saga ON audit (saga_id, saga_started_at, version)
    WHERE saga_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS audit_request
    ON audit (saga_id, saga_started_at, action, request_id)
    WHERE saga_id IS NOT NULL AND request_id <> '';

-- Append-only, as saga_history (rule 8): UPDATE, DELETE and TRUNCATE are
-- refused (a guard against mistakes: the owner of the table can drop the
-- trigger).
CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
DROP TRIGGER IF EXISTS audit_no_change ON audit;
CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
DROP TRIGGER IF EXISTS audit_no_truncate ON audit;
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

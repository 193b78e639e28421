-- Hotel participant schema (hoteld, tests/participants/hotel). Applied by
-- hoteld at every start, under an advisory lock, so every statement must be
-- idempotent.

-- One row per kind of room: how many rooms of it are free.
CREATE TABLE IF NOT EXISTS rooms (
	room text PRIMARY KEY,
	free bigint NOT NULL CHECK (free >= 0)
);

-- The idempotency record of one saga id (saga-semantics.md rules 2, 5, 6):
-- the outcome of its HoldRoom, or the tombstone of an early FreeRoom. The
-- primary key is what serialises concurrent duplicates. A hold takes one
-- room of its kind for `nights` nights. saga_started_ms is the start of the
-- saga that made it (rule R5; the kit reads and writes it).
CREATE TABLE IF NOT EXISTS holds (
	saga_id uuid PRIMARY KEY,
	room text NOT NULL,
	nights int NOT NULL CHECK (nights > 0),
	status text NOT NULL
	    CHECK (status IN ('HELD', 'NO_VACANCY', 'UNKNOWN_ROOM', 'FREED', 'TOMBSTONE')),
	saga_started_ms bigint,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);

-- The ledger of the records retention deleted (docs/participants.md,
-- "Retention"), by room and status: how many, and the sum of their nights.
-- Rooms add up: free + live HELD holds + retired HELD records = rooms set.
CREATE TABLE IF NOT EXISTS holds_retired (
	key text NOT NULL,
	status text NOT NULL,
	records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
	total bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (key, status)
);

-- ListRooms counts the live holds of each kind.
CREATE INDEX IF NOT EXISTS holds_live_by_room ON holds (room) WHERE status = 'HELD';

-- ListRooms' newest-first page of holds; retention takes the expired ones
-- oldest first by it (services/kit_store/pkit_retention.c).
CREATE INDEX IF NOT EXISTS holds_newest ON holds (created_at DESC, saga_id);

-- saga_check and saga_unchanged, which the kit's statements end with, come
-- from the kit (services/kit_store/sql/pkit.sql), applied before this file.

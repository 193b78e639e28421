/* store: all of the orchestrator's SQL (the `sagas` and `saga_history`
 * tables of sql/schema.sql). Every function takes the caller's PGconn (one
 * per thread) and returns 0 or a negative code: an enum pg_err from pg.h for
 * database failures, -ENOENT, -ENOMEM. Times are ms since the Unix epoch;
 * amounts minor units.
 */
#ifndef SAGA_STORE_H
#define SAGA_STORE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_watch.h"
#include "saga.h"
#include "valid.h"

/* One saga row. */
/* SAGA_NAME_MAX: room for a saga type's or a state's name and its NUL (a
 * definition's names are at most SAGA_DEF_NAME_MAX, 64: orch_defs.c checks
 * it at build time). */
#define SAGA_NAME_MAX 72
/* a saga's input of its own message, encoded, at most (bytes): StartSaga
 * refuses a larger one (docs/saga-definitions.md, "A saga's input") */
#define SAGA_INPUT_MAX 512

typedef struct saga_row {
	char saga_id[VALID_UUID_LEN + 1];
	saga s; /* the part the state machine decides on */
	char customer[VALID_NAME_MAX + 1];
	char sku[VALID_NAME_MAX + 1];
	int32_t qty;
	int64_t amount; /* minor units */
	int64_t version;
	int64_t epoch;        /* the fencing epoch of the claim this row was read under
	                         (sagas.epoch: 1 at the start, +1 at every claim) */
	char lease_owner[64]; /* sagas.lease_owner: the orchestrator that wrote
	                         the claim ("" when none is recorded) */
	int64_t created_ms;
	int64_t updated_ms;
	int64_t created_us; /* created_at in us since the epoch (the listing's
	                       key: page_token.h); 0 when not read */
	unsigned overdue;   /* store_list_sagas with overdue: why it is listed,
	                       a mask of 1 << store_overdue_reason; else 0 */
	int32_t def_id;     /* sagas.def_id: the version of the definition it
	                       started with (saga_definitions.id; orch_defs.h);
	                       0 for one started before schema version 9 */
	/* its position in its definition (schema version 10): the text the
	 * decisions are read from and written as; `s.state` is the order
	 * saga's state for a saga of type order, and for any other type the
	 * category of its position (store_category) */
	char type[SAGA_NAME_MAX];  /* sagas.type: its saga type ("order" for
	                              one started before schema 10) */
	char state[SAGA_NAME_MAX]; /* sagas.state: its definition's name of
	                              its position */
	uint64_t members;          /* sagas.members: a group's members done */
	bool compensating;         /* sagas.compensating: compensated, or
	                              cancelled */
	bool finished;             /* sagas.finished: completed or cancelled */
	/* its input when the type's input is not sagas.v1.Order (schema version
	 * 11): the message's canonical protobuf encoding (sagas.input);
	 * ninput 0 for an Order, which is in the typed columns above */
	uint32_t ninput;
	unsigned char input[SAGA_INPUT_MAX];
} saga_row;

/* An operator action's actor ("admin at 127.0.0.1:40000") and reason (the
 * operator's words, at most STORE_NOTE_MAX - 1 bytes of UTF-8), in bytes
 * with the NUL. */
#define STORE_ACTOR_MAX 96
#define STORE_NOTE_MAX  256

/* Who asked for an operator action, and why (table audit, schema 12). All
 * borrowed for the call. */
typedef struct store_actor {
	const char *role;       /* the caller's roles (authz_role_names): "admin" */
	const char *peer;       /* its address (rpc_peer): "127.0.0.1:40000" */
	const char *reason;     /* the operator's words; "" for none */
	const char *request_id; /* the action's idempotency key; "" for none */
} store_actor;

typedef struct store_history_entry {
	int64_t version;
	char from[SAGA_NAME_MAX]; /* the states' names: "" for the start */
	char to[SAGA_NAME_MAX];
	saga_state from_state; /* the order saga's states (store_category for
	                          other names): UNSPECIFIED for the start */
	saga_state to_state;
	char event[32];
	char reason[SAGA_REASON_MAX];
	int64_t at_ms;
	/* an operator's action (the audit row of this version): who, as
	 * "ROLE at PEER", and why; "" for the engine's own transitions */
	char actor[STORE_ACTOR_MAX];
	char note[STORE_NOTE_MAX];
} store_history_entry;

/* One version- and epoch-checked change of a saga row (rules 7 and 10). */
typedef struct store_update {
	const saga_row *before; /* the row as read; its version and epoch are the
	                           checks */
	saga next;              /* the row after the decision */
	const char *state;      /* its state's name (borrowed: the
	                           definition's) */
	uint64_t members;       /* its group's members done */
	bool compensating;      /* compensated, or cancelled */
	bool finished;          /* completed or cancelled */
	bool state_changed;     /* append a history row for the transition */
	bool attention_raised;  /* append a history row "attention" */
	const char *event;      /* history event name */
	bool applied;           /* out: false when a check failed */
	bool fenced;            /* out: not applied because the saga was claimed
	                           since (its epoch moved on: rule 10) */
	int64_t updated_ms;     /* out: the row's updated_at as written (ms since
	                           the epoch, as GetSaga reports it); 0 when unknown */
} store_update;

/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema. 2: state SHIPPING (issue 19). 3: the
 * claim's fencing epoch and lease owner, and sagas.waiter (the waits of
 * several orchestrators) (issue 20). 4: the listing's index on
 * (created_at, saga_id), sagas_listing, for paging (issue 21). 5: the
 * writing transaction's id in saga_history.xid, for the history feed
 * (issue 22). 6: retention, saga_retention_batch() and the DELETE of
 * saga_history it alone may make (issue 23). 7: rule R5's saga id
 * tombstones (issue 32). 8: sagas.cancelled and the listing indexes
 * sagas_customer and sagas_ended (issue 32). 9: saga_definitions and
 * sagas.def_id, the version of the definition a saga started with (issue
 * 34). 10: a saga's state is its definition's name of its position, with
 * sagas.type, members and compensating (issue 34). 12: the audit trail,
 * table audit (issue 36). */
#define STORE_SCHEMA_VERSION 12

/* store_category returns the category of a position as a saga_state (the
 * rules and the waits read it: saga_is_terminal, saga_wait_over): for type
 * "order" the order saga's state `state` names; for any other type
 * COMPLETED or CANCELLED when finished (by `compensating`), RELEASING
 * while compensating, else RESERVING (a step forward). Pure. */
saga_state store_category(const char *type, const char *state, bool compensating, bool finished);

/* The channel the end of a saga that somebody waits for on another
 * orchestrator is NOTIFYed on, with the saga id as payload (store_apply;
 * listen.h LISTENs). */
#define STORE_NOTIFY_CHANNEL "saga_finished"

/* store_apply_schema creates or updates the tables (sql/schema.sql) under an
 * advisory lock, so several orchestrators may start at once, and records
 * STORE_SCHEMA_VERSION (pg_apply_schema). Returns 0 or an enum pg_err:
 * PG_ERR_SCHEMA_NEWER when the database holds a newer schema (logged). */
int store_apply_schema(PGconn *conn);

/* store_insert_saga inserts `row` (version 1, epoch 1, lease owner `owner`:
 * the orchestrator that starts it holds it; row->def_id, the version of the
 * definition it starts under, 0 writing NULL) and its "started" history row
 * in one transaction. When the saga id exists already, nothing is written,
 * *created is false and *existing holds the stored row (duplicates of
 * StartSaga serialise on the primary key). `waiter` is the new row's
 * sagas.waiter (borrowed): NULL when nobody waits for its end, the
 * inserting instance's name for a StartSaga with wait_ms (store_apply
 * NOTIFYs its end when another instance writes it). A saga id that
 * retention deleted and still keeps as a tombstone (saga_ids_retired, rule
 * R5 of docs/saga-semantics.md) is not inserted: *created is false and
 * *existing holds only its saga_id, created_ms (the deleted saga's start)
 * and state SAGA_STATE_UNSPECIFIED, which no stored saga has. Returns 0,
 * -ENOENT (an existing row vanished: a bug) or a negative enum pg_err. */
int store_insert_saga(PGconn *conn, const saga_row *row, const char *owner, const char *waiter,
    bool *created, saga_row *existing);

/* store_insert_sagas is store_insert_saga for `n` sagas (1..RPC_BATCH_MAX)
 * in one statement, so one transaction and one commit for StartSagas that
 * arrived together. A saga id given twice is created by its first entry
 * only. Fills created[i] and stored[i] (the row as stored, new or existing)
 * for each rows[i] (a retired id's row as in store_insert_saga). Returns 0, -EINVAL (n out of
 * range), -ENOMEM, -ENOENT (an existing row vanished: a bug) or a negative enum pg_err. The new
 * sagas are committed once the insert statement succeeds, even when reading the existing ones then
 * fails: a caller that answers an error leaves them to the sweep (their lease ends) and to the
 * client, which retries with the same saga id. waiters[i] is rows[i]'s sagas.waiter as in
 * store_insert_saga (waiters NULL: none has one); borrowed. `owner` as in store_insert_saga. */
int store_insert_sagas(PGconn *conn, const saga_row *rows, const char *const *waiters, size_t n,
    const char *owner, bool *created, saga_row *stored);

/* store_get_sagas reads the sagas `ids` (n canonical UUIDs, may repeat) in
 * one statement. Sets found[i] and, when found, out[i]. Returns 0, -ENOMEM
 * or a negative enum pg_err. */
int store_get_sagas(PGconn *conn, const char *const *ids, size_t n, saga_row *out, bool *found);

/* store_get_saga reads one saga. Returns -ENOENT when there is none. */
int store_get_saga(PGconn *conn, const char *saga_id, saga_row *out);

/* store_same_start is true when `a` and `b` are the same start of a saga
 * (rule 6: a saga is its id, its type and its input): the same type and
 * the same input, typed (customer, sku, qty, amount) or encoded (byte for
 * byte: StartSaga keeps it canonically encoded). Pure. */
bool store_same_start(const saga_row *a, const saga_row *b);

/* store_mark_waiter records that a call on instance `instance` (its name,
 * borrowed; NULL: unnamed) waits for saga `saga_id` and reads the row
 * into *out (the UPDATE's RETURNING, or a read when it changed nothing). sagas.waiter becomes
 * `instance` when nobody or only this instance waited, else '*' (several instances wait): an end
 * written by any other instance is then NOTIFYed (store_apply), and one this instance writes is
 * answered in-process (engine on_finished), so a single orchestrator never pays a NOTIFY. The
 * caller registers its waiting call (waits_add) BEFORE this: an end committed before the mark is in
 * *out (terminal), one committed after it is NOTIFYed, so none is missed. A write only when the
 * mark changes (the first wait of an instance, then '*' once): else one more read. Returns 0,
 * -ENOENT for an unknown saga, or a negative enum pg_err. */
int store_mark_waiter(PGconn *conn, const char *saga_id, const char *instance, saga_row *out);

/* Why a saga is overdue (docs/operations.md, "Finding a stuck saga"): the
 * four conditions, on an unfinished saga, by the database's clock
 * (now()), written once in store.c (STORE_OVERDUE_COLS) for both the
 * listing and the gauges. */
typedef enum store_overdue_reason {
	/* its step deadline passed more than the margin ago: the sweep writes
	 * a deadline's transition within an interval, so no orchestrator is
	 * moving it */
	STORE_OVERDUE_PAST_DEADLINE,
	/* REFUNDING or RELEASING, and its command failed at least
	 * STORE_COMPENSATION_FAILING_TRIES tries: a compensation that keeps
	 * failing (retried forever: saga-semantics.md rule 3) */
	STORE_OVERDUE_COMPENSATION_FAILING,
	/* its row unchanged (sagas.updated_at: every transition and every
	 * failed try writes it) for longer than the stuck threshold */
	STORE_OVERDUE_STUCK,
	/* a retriable step (forward, no deadline: after the pivot, only
	 * forward), not parked (a parked saga has no next attempt: nothing
	 * retries it; its reason may outlive a re-arm), whose command failed at least
	 * STORE_COMPENSATION_FAILING_TRIES tries: retried forever like a
	 * compensation (a SHIPPING saga while shippingd is down); every failed
	 * try writes the row, so it is never `stuck` */
	STORE_OVERDUE_RETRYING,
	STORE_OVERDUE_N
} store_overdue_reason;

/* Failed tries of a compensation from which it counts as failing: the
 * first two may be a blip (a participant restarting); the third, with the
 * default backoff, is a few seconds of failure, well before attention
 * (--attention-after, 10). */
#define STORE_COMPENSATION_FAILING_TRIES 3

/* store_overdue_name returns the stable name of `r` ("past_deadline",
 * "compensation_failing", "stuck", "retrying"), "" for anything else. */
const char *store_overdue_name(store_overdue_reason r);

/* One listing (ListSagas): the filters, all ANDed, and where it starts. */
typedef struct store_list_query {
	saga_state state;          /* UNSPECIFIED: every state; else the sagas in
	                              the order saga's state of that name */
	const char *state_name;    /* NULL or "": any; else only sagas in the
	                              state of this name, any type (borrowed) */
	const char *type;          /* NULL or "": any; else only this saga type's
	                              sagas (borrowed) */
	bool attention_only;       /* only sagas flagged for an operator */
	bool overdue;              /* only unfinished sagas meeting a condition of
	                              store_overdue_reason; sets saga_row.overdue */
	int64_t margin_ms;         /* with overdue: STORE_OVERDUE_PAST_DEADLINE's margin */
	int64_t stuck_ms;          /* with overdue: STORE_OVERDUE_STUCK's threshold */
	int64_t older_than_ms;     /* > 0: only sagas created more than this long ago */
	const char *customer;      /* NULL or "": any; else only this customer's
	                              sagas (borrowed) */
	int64_t created_after_ms;  /* > 0: only sagas created at or after this
	                              instant (unix ms) */
	int64_t created_before_ms; /* > 0: only sagas created before it */
	bool after;                /* start after after_us/after_id (a page token) */
	int64_t after_us;          /* created_at of the last saga listed, us */
	const char *after_id;      /* its saga id (borrowed) */
	int limit;                 /* at most this many rows (1..) */
} store_list_query;

/* How a listing's statements are bounded (store_list_sagas,
 * store_count_sagas): they run in one read-only transaction whose
 * statement_timeout (SET LOCAL) is timeout_ms, and while PostgreSQL works
 * on them gone(arg) is polled: once it holds (the client went away) the
 * statement is cancelled (pg_watch.h). */
typedef struct store_watch {
	int64_t timeout_ms;    /* 1.. ms: the statement_timeout of the transaction */
	pg_watch_gone_fn gone; /* NULL: never */
	void *arg;
	bool cancelled; /* out: a cancel request was sent (gone held) */
} store_watch;

/* store_list_sagas returns up to q->limit sagas matching q, newest first:
 * ordered on (created_at DESC, saga_id DESC), after q's key when q->after,
 * so that pages following each other list every saga once, new sagas
 * being newer. Each filter reads an index range from the page's key
 * (docs/operations.md, "Listing plans"): sagas_listing (no filter, the
 * ages), sagas_customer, sagas_ended (COMPLETED, CANCELLED),
 * sagas_attention, or the sweep's two (unfinished states and overdue).
 * Bounded and watched as `w` says. *rows is malloc'd (caller frees), *n
 * its length. Returns 0, -ENOMEM or a negative enum pg_err
 * (PG_ERR_CANCELED: the statement_timeout fired or w->gone held). */
int store_list_sagas(
    PGconn *conn, const store_list_query *q, store_watch *w, saga_row **rows, size_t *n);

/* The number of sagas in one state (store_count_sagas). */
typedef struct store_count {
	int64_t n; /* exact when !more; else the bound: at least this many */
	bool more; /* more than the bound (COMPLETED and CANCELLED only) */
} store_count;

/* store_count_sagas counts the sagas of every state, in one statement
 * bounded and watched as `w` says: the unfinished states exactly (the
 * sweep's indexes: as many entries as unfinished sagas), COMPLETED and
 * CANCELLED exactly up to `bound` sagas each and otherwise as "more than
 * bound" (an index range of sagas_ended that stops after bound + 1
 * entries), so the answer costs the same at any size. out is indexed by
 * saga_state (SAGA_STATE_LAST + 1 entries; UNSPECIFIED stays 0). Returns 0
 * or a negative enum pg_err as store_list_sagas. */
int store_count_sagas(PGconn *conn, int64_t bound, store_watch *w, store_count *out);

/* store_history returns the history of one saga, oldest first; *out is
 * malloc'd (caller frees). -ENOENT when the saga does not exist. */
int store_history(PGconn *conn, const char *saga_id, store_history_entry **out, size_t *n);

/* One row of the history feed (store_feed). */
typedef struct store_feed_entry {
	uint64_t xid;                     /* the writing transaction (xid8) */
	char saga_id[VALID_UUID_LEN + 1]; /* canonical lowercase UUID */
	store_history_entry h;
} store_feed_entry;

/* store_feed reads the history feed after `from` (feed_cursor.h; borrowed):
 * the rows whose writing transaction is visible in the later snapshot and
 * not in from->seen, after from's key when from->has_next, ordered by
 * (xid, saga_id, version), at most `limit` (1..) of them. The later
 * snapshot is from->next when from->has_next, else the statement's own
 * (pg_current_snapshot(), the one its rows are read under), written into
 * next_snap (FEED_SNAPSHOT_MAX + 1 bytes). One statement, so the rows and
 * the snapshot agree (docs/protocol.md, "The history feed"). *out is
 * malloc'd (caller frees; NULL when *n is 0). Returns 0, -ENOMEM, -E2BIG
 * (the database's snapshot is longer than FEED_SNAPSHOT_MAX) or a negative
 * enum pg_err. */
struct feed_cursor;

/* store_feed_key reads the database's feed key (table feed_key, made by
 * the schema) into key (FEED_KEY_LEN bytes): the cursors' HMAC key.
 * Returns 0, -EIO when the row is missing or malformed, or a negative enum
 * pg_err. */
int store_feed_key(PGconn *conn, uint8_t *key);

/* store_snapshot writes the database's current snapshot as text
 * (pg_snapshot: "xmin:xmax:xip,...") into out (FEED_SNAPSHOT_MAX + 1
 * bytes): a feed from now on starts there. Returns 0, -E2BIG (longer than
 * FEED_SNAPSHOT_MAX) or a negative enum pg_err. */
int store_snapshot(PGconn *conn, char *out);
int store_feed(PGconn *conn, const struct feed_cursor *from, int limit, store_feed_entry **out,
    size_t *n, char *next_snap);

/* store_claim_due claims up to `limit` unfinished sagas whose
 * next_attempt_at <= now_ms (unix ms, the database's clock: dbclock.h), the
 * earliest due first, skipping rows other orchestrators hold (FOR UPDATE
 * SKIP LOCKED), and moves their next_attempt_at to the end of the lease of
 * the try the caller sends, saga_lease_until_ms(row, now_ms, pol) computed
 * in SQL (never past a step deadline), so nobody else claims them
 * meanwhile. Sagas on their first try (attempts 0) are looked for only among
 * those created before created_before_ms: the caller passes a time before
 * which none of them can be due (engine.c: now - saga_first_lease_ms / 2).
 * Each claimed row's fencing epoch is raised by one and its lease owner set
 * to `owner` (this orchestrator's name), so a write decided under an
 * earlier claim, by whoever held it, is refused (rule 10).
 * Fills rows[0..*n) (rows holds `limit`). Returns 0 or a pg_err code.
 * The version is not changed: a claim is not a transition. */
int store_claim_due(PGconn *conn, int64_t now_ms, const saga_policy *pol, int64_t created_before_ms,
    int limit, const char *owner, saga_row *rows, size_t *n);

/* store_claim_deadlines is store_claim_due restricted to sagas whose
 * step_deadline <= now_ms: the sweep claims them even when there is no room
 * under --max-inflight, to write their deadline transitions (rule 4) on
 * time. Same arguments, returns and ownership. */
int store_claim_deadlines(PGconn *conn, int64_t now_ms, const saga_policy *pol,
    int64_t created_before_ms, int limit, const char *owner, saga_row *rows, size_t *n);

/* What store_rearm did: a business outcome, or STORE_REARM_ERROR when the
 * database failed (the error then in its *err). */
typedef enum store_rearm_result {
	STORE_REARM_OK,           /* re-armed: *out is the new row */
	STORE_REARM_NOT_FOUND,    /* no such saga */
	STORE_REARM_TERMINAL,     /* it has finished: nothing to re-arm */
	STORE_REARM_PAST_HORIZON, /* created before the horizon: nothing changed */
	STORE_REARM_ERROR,        /* the database failed: *err says how */
} store_rearm_result;

/* store_rearm makes an unfinished saga's command due at `now_ms`, clears its
 * attention flag and attempt count, bumps its version (a reply in flight is
 * then dropped) and appends a history row "retry", in one transaction.
 * Returns STORE_REARM_OK with *out the new row; STORE_REARM_NOT_FOUND for
 * an unknown saga; STORE_REARM_TERMINAL for a finished one;
 * STORE_REARM_PAST_HORIZON (nothing changed) for one created before
 * `created_after_ms` (ms since the epoch; 0: any): past the retention
 * horizon, no participant takes its commands (rule R3); or
 * STORE_REARM_ERROR (nothing changed) with the error in *err, a negative
 * enum pg_err or -ENOMEM. *err (never NULL) is 0 for every other result,
 * so that it can be the rc of the callers' re-run on a lost connection
 * (API_DB). */
store_rearm_result store_rearm(PGconn *conn, const char *saga_id, int64_t now_ms,
    int64_t created_after_ms, const store_actor *who, saga_row *out, int *err);

/* What store_cancel did. */
typedef enum store_cancel_result {
	STORE_CANCEL_OK,           /* taken: *out is the new row */
	STORE_CANCEL_REPLAYED,     /* this request id's cancel was taken before:
	                            *out is the row as it is now, nothing changed */
	STORE_CANCEL_KEY_MISMATCH, /* this request id was a cancel with another
	                              reason (as rule 6): nothing changed */
	STORE_CANCEL_NOT_FOUND,    /* no such saga */
	STORE_CANCEL_PAST_HORIZON, /* unfinished, created before the horizon:
	                              nothing changed */
	STORE_CANCEL_REFUSED,      /* the rules refuse it (*refused says why):
	                              nothing changed; *out is the row */
	STORE_CANCEL_UNDECIDED,    /* its definition's version cannot run here:
	                              nothing changed */
	STORE_CANCEL_ERROR,        /* the database failed: *err says how */
} store_cancel_result;

/* store_decide_fn decides an operator's cancel of `row`, read under its
 * row lock: returns 0 and fills *after with the row to write and *up's
 * state_changed, event and attention_raised (store_cancel fills the rest),
 * or returns 0 with *refused set (static storage) when the rules refuse
 * it, or -1 when it cannot be decided here. */
typedef int store_decide_fn(
    void *ctx, const saga_row *row, saga_row *after, store_update *up, const char **refused);

/* store_cancel cancels saga `saga_id` for `who` (who->request_id its
 * idempotency key, who->reason required by the caller) in ONE transaction:
 * the row is locked (FOR UPDATE); a cancel with this (saga, request id)
 * in table audit is answered STORE_CANCEL_REPLAYED (with this reason) or
 * STORE_CANCEL_KEY_MISMATCH (another); else the cancel is refused
 * STORE_CANCEL_PAST_HORIZON when unfinished and created before
 * `created_after_ms` (0: any; rule R3), and decided by `decide` (ctx passed
 * back); when taken, the row is written as store_apply writes a
 * transition (its history row, event "cancel"; `writer` this
 * orchestrator's name), with its audit row (action "cancel", the version
 * written). Returns the result; *refused (never NULL) is set for
 * STORE_CANCEL_REFUSED; *err (never NULL) is 0 but for STORE_CANCEL_ERROR
 * (a negative enum pg_err or -ENOMEM), so that it can be the rc of
 * API_DB's re-run. Rule 11 (docs/saga-semantics.md). */
store_cancel_result store_cancel(PGconn *conn, const char *saga_id, const store_actor *who,
    int64_t created_after_ms, const char *writer, store_decide_fn *decide, void *ctx, saga_row *out,
    const char **refused, int *err);

/* One row of table audit. */
typedef struct store_audit_entry {
	int64_t id; /* its order: larger is later */
	int64_t at_ms;
	char action[16];
	char role[32];
	char peer[64];
	char reason[STORE_NOTE_MAX];
	char saga_id[40]; /* "" for an action on no saga */
	int64_t version;  /* the saga version it wrote; 0 for none */
	char request_id[64];
	char outcome[SAGA_NAME_MAX];
} store_audit_entry;

/* store_list_audit reads the audit rows, newest first: those of saga
 * `saga_id` ("" for every saga) and action `action` ("" for any), with ids
 * below `before_id` (0: from the newest), at most `limit` (1..). *out is
 * malloc'd (the caller frees it; NULL when *n is 0). Returns 0 or a
 * negative enum pg_err or -ENOMEM. */
int store_list_audit(PGconn *conn, const char *saga_id, const char *action, int64_t before_id,
    int limit, store_audit_entry **out, size_t *n);

/* The gauges of the sagas in the database (metrics, report.c). */
/* STORE_OPEN_OTHERS: the (type, state) pairs of other saga types than
 * the order saga that store_gauges counts, at most (16 types of a file
 * times their states would be more; the rest are counted in attention and
 * overdue only). */
#define STORE_OPEN_OTHERS 64

/* Unfinished sagas of one state of a saga type other than the order saga
 * (its definition's name of the state). */
typedef struct store_open_other {
	char type[SAGA_NAME_MAX];
	char state[SAGA_NAME_MAX];
	int64_t n;
} store_open_other;

typedef struct store_gauges {
	int64_t open[SAGA_STATE_LAST + 1];          /* order sagas by state, indexed by
	                                               saga_state; only unfinished states
	                                               are counted (the terminal ones and
	                                               UNSPECIFIED stay 0) */
	store_open_other others[STORE_OPEN_OTHERS]; /* other types' unfinished
	                                               sagas by state, those that
	                                               have some */
	size_t nothers;
	int64_t attention;                /* unfinished sagas flagged for attention */
	int64_t overdue[STORE_OVERDUE_N]; /* unfinished sagas by store_overdue_reason
	                                     (a saga may count under two) */
	int64_t overdue_total;            /* unfinished sagas meeting any of them,
	                                     each counted once */
} store_gauges;

/* store_read_gauges fills *out in ONE statement over the unfinished sagas
 * (the indexes sagas_open and sagas_retry; no terminal row is read), by
 * the database's clock: open sagas by state, those flagged for attention,
 * and the overdue ones by the conditions of store_overdue_reason, the same
 * SQL as ListSagas' overdue filter, with margin_ms as past_deadline's
 * margin and stuck_ms as stuck's threshold (ms, >= 0). Meant for elected
 * periodic work (report.c), never for a scrape. Returns 0 or a negative
 * enum pg_err (*out then unchanged). */
int store_read_gauges(PGconn *conn, int64_t margin_ms, int64_t stuck_ms, store_gauges *out);

/* store_apply writes `n` updates in ONE transaction (group commit): each an
 * UPDATE conditional on the version (rule 7) and the fencing epoch (rule 10)
 * its row was read with (a failed check sets applied = false and writes
 * nothing for that saga) plus its history row. Updates refused because
 * the saga was claimed since (by another orchestrator, or by this one's
 * sweep after the lease ended) also get fenced = true, from one read after
 * the commit that runs only when something was refused. On any database
 * error the whole transaction is rolled back and every applied flag is
 * false. `writer` is the writing instance's name (borrowed; NULL: none):
 * an update that ends a saga whose sagas.waiter is set and differs from it
 * NOTIFYs STORE_NOTIFY_CHANNEL with the saga id in the same transaction
 * (at its commit); the others, the hot path, send nothing and cost no
 * statement more. */
int store_apply(PGconn *conn, store_update *ups, size_t n, const char *writer);

#endif

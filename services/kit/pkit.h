/* pkit: the participant kit, the protocol side of an idempotent participant
 * written once (docs/participants.md, "Writing a participant"). stockd,
 * paymentd and shippingd are built on it.
 *
 * A service brings its schema (a records table keyed by saga id, to which
 * pkit_migrate adds the column saga_started_ms bigint (PKIT_STARTED_COL), and
 * optionally a table of rows with one int64 value each, such as a sku's
 * units or an account's balance), its pure decide function, and a
 * description of its messages (which request fields are the command's
 * arguments, which reply fields take its outcome). The kit does the rest,
 * the same for every service:
 *   - one idempotency record per saga id; a duplicate is answered from it
 *     (saga-semantics.md rule 2), a compensation that comes first leaves a
 *     tombstone (rule 5), the same key with other arguments is refused
 *     (rule 6): the decide function says which, the kit writes it;
 *   - the records, then the rows a transaction touches, locked in key order,
 *     so batches and single commands never deadlock; the commands of a batch
 *     decided in arrival order, each as if it ran alone;
 *   - the one-round-trip path for the step command of new saga ids
 *     (docs/architecture.md), with a value cache of the rows;
 *   - the reply only after COMMIT; a lost race (serialization failure,
 *     deadlock, a concurrent duplicate) retried; a lost connection re-run
 *     once; the fault point fail_before_commit (docs/testing.md);
 *   - validation at the edge, one error vocabulary, the log lines.
 *
 * Retention (docs/participants.md, "Retention"; pkit_retention.c): a record
 * (any status, tombstones too) whose created_at is older than
 * horizon_record_cutoff_ms (--retention plus twice --max-clock-skew) is
 * deleted by the daemon's elected retention job, and in the same
 * transaction folded into the service's summary table, which every service
 * must declare in its schema beside the records:
 *   CREATE TABLE IF NOT EXISTS <records>_retired (
 *       key text NOT NULL,         -- the record's first text column (sku)
 *       status text NOT NULL,      -- its status
 *       records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),
 *       total bigint NOT NULL DEFAULT 0, -- sum of its first number column
 *                                        -- (qty, amount); 0 without one
 *       PRIMARY KEY (key, status));
 * and an index whose first column is the records' created_at (the
 * newest-first listing's (created_at DESC, saga_id) serves), by which the
 * expired records are taken oldest first. The summaries are the business
 * ledger kept for ever: conservation still holds with them (stock: on_hand
 * + live RESERVED qty + retired RESERVED total = initial + restocks). The
 * rows table is never touched by retention.
 *
 * pkit_store.c holds the database side of the commands (the only SQL of
 * the kit with pkit_retention.c: generated from the table and column names
 * of the descriptor), pkit_rpc.c the rpc_server_ops of a participant. The
 * fuzz targets replace pkit_store.c by an in-memory store with the same
 * functions (they link neither pkit_retention.c nor participant.c).
 */
#ifndef SAGA_PKIT_H
#define SAGA_PKIT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "horizon.h"
#include "methods.h"
#include "pg.h"
#include "retention.h"
#include "rpc.h"
#include "valcache.h"
#include "valid.h"

/* The request field every saga command carries: its saga's start, ms since
 * the epoch (int64; docs/saga-semantics.md, rule R1). */
#define PKIT_STARTED_FIELD "saga_started_unix_ms"
/* The records' column that keeps it (bigint, NULL for a record made before
 * rule R5): every service's records table has it. */
#define PKIT_STARTED_COL "saga_started_ms"

/* The most text and number columns of a record, besides saga_id and
 * status. */
#define PKIT_TEXT_MAX 2
#define PKIT_NUM_MAX  1

/* The arguments of one command: the service's op, its text arguments
 * (names, 1..VALID_NAME_MAX bytes) and numbers. For a service with rows,
 * text[0] is the key of the row the command touches. */
typedef struct pkit_args {
	int op;                          /* the service's op, > 0 */
	const char *text[PKIT_TEXT_MAX]; /* borrowed; unused entries NULL */
	int64_t num[PKIT_NUM_MAX];
	/* the saga's start (PKIT_STARTED_FIELD, ms since the epoch): with the
	 * saga id, the saga's identity (docs/saga-semantics.md, rule R5) */
	int64_t started;
	/* the tolerated clock error (the horizon's skew_ms; 0: none), for a
	 * record made before R5 (pkit_decide) */
	int64_t skew_ms;
} pkit_args;

/* The idempotency record of one saga id, as its columns hold it. */
typedef struct pkit_record {
	int status; /* the service's status; 0: no record */
	char text[PKIT_TEXT_MAX][VALID_NAME_MAX + 1];
	int64_t num[PKIT_NUM_MAX];
	/* the start of the saga that made it (ms since the epoch; column
	 * PKIT_STARTED_COL); 0: unknown, a record made before rule R5 */
	int64_t started;
	/* when it was made (created_at, ms since the epoch, the participant's
	 * database clock); 0: unknown (in-memory stores) */
	int64_t made_ms;
} pkit_record;

/* The row of a command's key (text[0]), read under lock. */
typedef struct pkit_row {
	bool exists;
	int64_t value;
} pkit_row;

/* What a decide function says of one command. */
typedef struct pkit_outcome {
	int code;           /* rpc status code (status.h) */
	const char *reason; /* stable reason, "" when OK; static storage */
	int reply_status;   /* the status the reply reports */
	bool write_record;  /* insert or update the record to `record` */
	pkit_record record;
	bool write_row; /* set the row's value to `value` */
	int64_t value;
} pkit_outcome;

/* One command for the store: in, saga_id and args; out, the committed
 * outcome and the row's value after it (0 without a row). */
typedef struct pkit_cmd {
	const char *saga_id; /* canonical UUID text, borrowed */
	pkit_args args;
	pkit_outcome out;
	int64_t value;
} pkit_cmd;

/* The statements the kit generates for a service (pkit_store.c). */
typedef struct pkit_sql {
	char names[4][48];
	char text[4][2048];
	pg_stmt lock_records, lock_rows, write_batch, write_fast;
	bool built;
} pkit_sql;

typedef struct pkit_store pkit_store;

/* One field of a saga command's request, read by name from the decoded
 * message: a text (a string field, checked as a name by valid_name:
 * VALID_NAME_RULE) or a number (an int32 or
 * int64 field, checked to be within min..max). The texts fill args.text
 * and the numbers args.num, each in the order listed. */
typedef struct pkit_field {
	const char *name; /* the protobuf field name: "sku", "qty" */
	bool text;
	int64_t min, max; /* numbers only */
	const char *unit; /* numbers only: "minor units" in the error text, or NULL */
} pkit_field;

#define PKIT_FIELDS_MAX (PKIT_TEXT_MAX + PKIT_NUM_MAX)
/* The largest reply message (its C struct) the kit encodes, in bytes. */
#define PKIT_REPLY_MAX 256

/* One saga command method of a service (a step or a compensation). The kit
 * decodes its request (`request`, which has a string field saga_id and the
 * `fields`), and encodes its OK reply (`reply`, whose enum field status is
 * set to the outcome's reply_status, the field `reply_value` if any to the
 * row's value after the command, the bool field `reply_created` if any to
 * whether this call wrote the record). pkit_service_check verifies it all
 * against the descriptors at start. */
typedef struct pkit_method {
	enum method_id id; /* its row in the table of methods: METHOD_Stock_ReserveStock */
	int op;            /* what args.op it becomes */
	const char *what;  /* "reserve stock": "could not <what>: ..." */
	const char *verb;  /* "reserve": the log line of an outcome */
	const ProtobufCMessageDescriptor *request;
	pkit_field fields[PKIT_FIELDS_MAX];
	int n_fields;
	const ProtobufCMessageDescriptor *reply;
	const char *reply_value;   /* "on_hand", or NULL */
	const char *reply_created; /* "created", or NULL */
} pkit_method;

/* A business refusal's message: "could not <what>: <text>", followed by
 * the command's first text argument in quotes when names_key ("unknown sku
 * \"A1\""). Tombstones and key mismatches have the kit's own messages. */
typedef struct pkit_refusal {
	const char *reason; /* REASON_OUT_OF_STOCK */
	const char *text;   /* "out of stock" */
	bool names_key;
} pkit_refusal;

/* Any other method (admin): called with the worker's store. */
typedef struct pkit_other_method {
	enum method_id id; /* its row in the table of methods: METHOD_Stock_SetStock */
	void (*fn)(pkit_store *st, const rpc_request *call, rpc_reply *r);
} pkit_other_method;

/* A participant, described once (services/<name>/service.c). */
typedef struct pkit_service {
	const char *name; /* "stock": statement names and logs */
	pg_schema schema; /* its database (the embedded sql/schema.sql) */
	/* the records table: saga_id uuid PRIMARY KEY, status text, the text
	 * columns, the number columns (bigint or int), updated_at timestamptz */
	const char *records;
	const char *text_cols[PKIT_TEXT_MAX];
	int n_text;
	const char *num_cols[PKIT_NUM_MAX];
	int n_num;
	/* the rows table (NULL: the service has none): key text PRIMARY KEY,
	 * value bigint */
	const char *rows, *row_key, *row_value;
	int fast_op; /* the op the one-round-trip path serves (its step); 0: none */
	/* the pure decision (rules 2, 5, 6): `row` is NULL for a service
	 * without rows; fills *out, never fails */
	void (*decide)(
	    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out);
	const char *(*status_name)(int status); /* "RESERVED"; static */
	int (*status_parse)(const char *name);  /* 0 for unknown text */
	/* the protocol */
	const pkit_method *methods; /* the saga commands; they batch */
	size_t n_methods;
	const pkit_other_method *others;
	size_t n_others;
	/* the messages of its business refusals (any other reason: "could
	 * not <what>: <reason>") */
	const pkit_refusal *refusals;
	size_t n_refusals;
	const char *args_name;  /* "sku or qty": what a key mismatch names */
	const char *value_name; /* "on hand": the row's value in log lines */
	pkit_sql *sql;          /* static storage the kit fills at first use */
} pkit_service;

/* pkit_decide is the kit's decision of one command `a` on the record `rec`
 * of its saga id (status 0: none) and its row (`row`, NULL for a service
 * without rows); it fills *out and never fails. Rule R5
 * (docs/saga-semantics.md, "Retention"): a saga is its id and its start,
 * so a command whose start differs from its record's (a new saga reusing
 * the id of one whose record is still kept) is refused FAILED_PRECONDITION
 * saga_id_reused, changing nothing, and never answered from, nor allowed to
 * compensate, the other saga's record; out->record.started is then the
 * record's start (for the message). A record of unknown start (0, made
 * before R5) matches a command whose start is at most its made_ms plus
 * a->skew_ms and HORIZON_AHEAD_SLACK_MS (its saga started before it was
 * made, on a clock within the skew), and refuses any later one as
 * saga_id_reused: a new saga with its id starts at least --retention after
 * the old one's last record (rules R3, R4); one of unknown made_ms matches
 * any start. Otherwise it is v->decide's decision, and a
 * record it writes keeps its saga's start (a new one takes a->started).
 * Pure: pkit_store.c, the fuzz targets' in-memory store and the unit tests
 * call it. */
void pkit_decide(const pkit_service *v, const pkit_record *rec, const pkit_row *row,
    const pkit_args *a, pkit_outcome *out);

/* pkit_sql_add appends printf-style text to the generated statement `b`
 * (len bytes), keeping it NUL-terminated; *ok turns false when it did not
 * fit (pkit_store.c; used by pkit_retention.c too). */
__attribute__((format(printf, 4, 5))) void pkit_sql_add(
    char *b, size_t len, bool *ok, const char *fmt, ...);

/* ---- the store (pkit_store.c) ----
 * Errors are the negative enum pg_err values of pg.h: PG_ERR_CONNECTION
 * (the database is unreachable; a call re-runs once on a fresh connection
 * where safe), PG_ERR_RETRY (lost races past the retries), PG_ERR_INJECTED
 * (the fault point), others (a bug or bad data). A database error is never
 * a business refusal: refusals only come from the decide function. */

/* pkit_migrate connects to `conninfo` (waiting up to wait_ms ms) and applies
 * the kit's own SQL (services/kit_store/sql/pkit.sql: the functions saga_check and
 * saga_unchanged its statements end with) and then svc->schema, as one
 * script (pg_apply_schema: one transaction, the service's lock and
 * version), and last adds the column PKIT_STARTED_COL to svc->records
 * when the schema did not (rule R5). Returns 0, -ENOMEM, -EINVAL (a
 * records table name too long) or a negative enum pg_err. */
int pkit_migrate(const pkit_service *svc, const char *conninfo, int64_t wait_ms)
    __attribute__((warn_unused_result));

/* pkit_store_open makes the store of one worker thread (one PGconn).
 * `svc` and `conninfo` are borrowed and outlive the store; `cache` (may be
 * NULL: no one-round-trip path) is the daemon's value cache of its rows,
 * shared by its workers. It tries to connect for up to wait_ms ms, but a
 * store without a connection is still returned: every call reconnects
 * first. Returns 0 and *out, or -ENOMEM. */
int pkit_store_open(pkit_store **out, const pkit_service *svc, const char *conninfo,
    int64_t wait_ms, valcache *cache) __attribute__((warn_unused_result));

/* pkit_store_close closes the connection and frees the store; NULL is
 * ignored. */
void pkit_store_close(pkit_store *s);

/* pkit_store_apply applies `n` commands (1..RPC_BATCH_MAX, any mix of the
 * service's ops; saga ids and keys may repeat) in one local transaction:
 * the one-round-trip path when they are all svc->fast_op of distinct new
 * saga ids whose rows the cache knows; else lock every record, then every
 * row they touch, each in key order, call decide for each command in the
 * order given on what the commands before it left, write the results with
 * one set-based statement, commit. Fills each cmds[i].out and .value on 0;
 * nothing is written unless 0 is returned. A lost race retries the whole
 * transaction (which then answers from the winner's record); a lost
 * connection re-runs it once. Returns 0, -EINVAL (n out of range), -ENOMEM
 * or a negative enum pg_err. */
int pkit_store_apply(pkit_store *s, pkit_cmd *cmds, size_t n) __attribute__((warn_unused_result));

/* pkit_store_fast_counts reports what the one-round-trip path did since the
 * store was opened: *fast transactions committed, *fell_back tried and sent
 * to the locking path. */
void pkit_store_fast_counts(const pkit_store *s, uint64_t *fast, uint64_t *fell_back);

/* For a service's own (admin) statements: pkit_store_ready makes the
 * connection usable (0 or PG_ERR_CONNECTION); pkit_store_may_rerun is
 * pg_may_rerun on it; pkit_store_conn returns it (borrowed); pkit_store_learn
 * tells the value cache that the row `key` now holds `value`. */
int pkit_store_ready(pkit_store *s) __attribute__((warn_unused_result));
bool pkit_store_may_rerun(pkit_store *s, int rc, bool *rerun_done);
PGconn *pkit_store_conn(pkit_store *s);
void pkit_store_learn(pkit_store *s, const char *key, int64_t value);

/* pkit_store_snapshot runs the `n` read-only queries `sql` (an entry may be
 * NULL: skipped) in one REPEATABLE READ snapshot, so an admin listing's
 * aggregates agree with its rows; a query whose text holds $1 gets
 * limit + 1 for it (one row more than asked tells that there are more).
 * Re-run once after a lost connection. Returns 0 with each res[i] set (the
 * caller PQclears them; NULL for a skipped query), or a negative enum
 * pg_err with every res[i] NULL. */
int pkit_store_snapshot(pkit_store *s, const char *const *sql, int n, int32_t limit, PGresult **res)
    __attribute__((warn_unused_result));

/* ---- retention (pkit_retention.c) ---- */

/* What pkit_retention_batch deletes by: borrowed, both outliving it. */
typedef struct pkit_retention {
	const pkit_service *svc;       /* its records and <records>_retired */
	const horizon_policy *horizon; /* retention_ms > 0; else nothing expires */
} pkit_retention;

/* pkit_retention_batch is the kit's retention_batch_fn (retention.h), `arg`
 * a pkit_retention: on `conn` (outside a transaction), at `now_ms` (ms since
 * the epoch, the database's clock), it deletes, in one statement and so one
 * transaction, at most `limit` (> 0) records whose created_at is before
 * horizon_record_cutoff_ms(now_ms) (rule R2), oldest first, skipping those
 * another transaction holds (SKIP LOCKED: a record being answered, or taken
 * by another batch), and folds them into <records>_retired (per key and
 * status: records += how many, total += the sum of their first number
 * column). With `dry` it deletes nothing and counts every record expired
 * now (limit ignored). Sets out->n[0] to the records deleted (or counted),
 * out->n[1] to 0. Returns 0 (also, with nothing done, when the horizon's
 * retention_ms is 0), -EINVAL (limit < 1 without dry), PG_ERR_OTHER (the
 * statement did not fit: a bug in the descriptor), or the negative enum
 * pg_err of the failed statement, with nothing deleted. */
int pkit_retention_batch(void *arg, PGconn *conn, int64_t now_ms, int limit, bool dry,
    retention_counts *out) __attribute__((warn_unused_result));

/* ---- the RPC side (pkit_rpc.c) ---- */

/* PKIT_RPC_OPS(batch) is the rpc_server_ops of a participant whose app is a
 * participant_app (participant.h) naming its pkit_service; `batch` is the
 * NULL-terminated list of its saga command methods, which a batch frame may
 * carry. Each worker owns one pkit_store. Bad input is answered
 * INVALID_ARGUMENT ("bad_field", "malformed_payload"), an unknown method
 * UNIMPLEMENTED ("unknown_method"), a lost database UNAVAILABLE
 * ("database_unavailable"); the handlers never crash on any bytes. */
int pkit_worker_init(void *app, void **worker);
void pkit_worker_fini(void *app, void *worker);
void pkit_handle(void *app, void *worker, const rpc_request *call, rpc_reply *reply);
void pkit_handle_batch(
    void *app, void *worker, const rpc_request *calls, rpc_reply *replies, size_t n);
#define PKIT_RPC_OPS(batch)                                                                        \
	{                                                                                          \
		.batch_methods = (batch), .worker_init = pkit_worker_init,                         \
		.worker_fini = pkit_worker_fini, .handle = pkit_handle,                            \
		.handle_batch = pkit_handle_batch,                                                 \
	}

/* pkit_service_check verifies a descriptor against its protobuf messages
 * (every field it names exists with a usable type), its own limits, and
 * that each of its methods has an id of the table of methods (methods.h).
 * Returns true, or false after logging what is wrong (a bug: the daemon
 * refuses to start). */
bool pkit_service_check(const pkit_service *svc);

/* pkit_metrics_init registers the participant metrics of `svc` at 0
 * (docs/operations.md, "Metrics"): sagas_participant_commands_total{command,
 * outcome}, sagas_participant_duplicates_total{command},
 * sagas_participant_tombstones_total{command} (a tombstone is a record whose
 * status the service names "TOMBSTONE") and sagas_participant_batch_size.
 * The kit counts every answered saga command where its answer is decided.
 * Call once from main. */
void pkit_metrics_init(const pkit_service *svc);

/* Helpers for a service's decoding (each false with the error in `r`; a
 * payload is decoded with rpc_unpack, rpc.h): pkit_check_saga_id: a
 * canonical UUID; pkit_check_name: 1..VALID_NAME_MAX bytes of UTF-8 without
 * control characters (field names the field); pkit_check_range: min <= v
 * <= max, the message naming the number's unit ("minor units") unless
 * unit is NULL. */
bool pkit_check_saga_id(rpc_reply *r, const char *s);
bool pkit_check_name(rpc_reply *r, const char *field, const char *s);
bool pkit_check_range(
    rpc_reply *r, const char *field, int64_t v, int64_t min, int64_t max, const char *unit);

/* pkit_list_request decodes an admin listing request `call` of type
 * `desc`, whose bool field `include_field` asks for rows and int32 field
 * "limit" bounds them: 0 means `def`, more than `max` is INVALID_ARGUMENT
 * bad_field. Returns true with *include and *limit set, or false with the
 * error in `r`. The fields must exist (a bug otherwise). */
bool pkit_list_request(const ProtobufCMessageDescriptor *desc, const char *include_field,
    int32_t def, int32_t max, const rpc_request *call, bool *include, int32_t *limit, rpc_reply *r);

/* pkit_page_fits adds the encoded size of a listing's next `row` to *bytes
 * (start it at the reply's size without rows, plus 2) and is true while the
 * reply still fits in RPC_REPLY_BUDGET: rows are added while it does, so a
 * page of long names cannot pass the frame limit. */
bool pkit_page_fits(size_t *bytes, const ProtobufCMessage *row);

/* pkit_store_failed answers a store error `rc` of the action `what` ("list
 * stock"): UNAVAILABLE database_unavailable, fault_injected or
 * database_busy, INTERNAL out_of_memory or database_error; never a business
 * refusal, so the orchestrator retries. Logs it at WARNING. */
void pkit_store_failed(rpc_reply *r, int rc, const char *what, const char *saga_id);

#endif

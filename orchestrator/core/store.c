#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "rpc.h"
#include "valid.h"
#include "schema_sql.h"
#include "store_internal.h"

void store_read_row(const PGresult *r, int i, saga_row *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->saga_id, sizeof out->saga_id, "%s", PQgetvalue(r, i, 0));
	/* a reason longer than the field is cut at a character, never inside */
	(void)valid_utf8_copy(out->s.reason, sizeof out->s.reason, PQgetvalue(r, i, 2));
	snprintf(out->customer, sizeof out->customer, "%s", PQgetvalue(r, i, 3));
	snprintf(out->sku, sizeof out->sku, "%s", PQgetvalue(r, i, 4));
	out->qty = (int32_t)pg_get_i64(r, i, 5);
	out->amount = pg_get_i64(r, i, 6);
	out->version = pg_get_i64(r, i, 7);
	out->s.attempts = (int32_t)pg_get_i64(r, i, 8);
	out->s.attention = PQgetvalue(r, i, 9)[0] == 't';
	out->s.next_attempt_ms = pg_get_i64(r, i, 10);
	out->s.step_deadline_ms = pg_get_i64(r, i, 11);
	out->created_ms = pg_get_i64(r, i, 12);
	out->updated_ms = pg_get_i64(r, i, 13);
	out->epoch = pg_get_i64(r, i, 14);
	(void)valid_utf8_copy(out->lease_owner, sizeof out->lease_owner, PQgetvalue(r, i, 15));
	out->def_id = (int32_t)pg_get_i64(r, i, 16);
	snprintf(out->type, sizeof out->type, "%s", PQgetvalue(r, i, 17));
	snprintf(out->state, sizeof out->state, "%s", PQgetvalue(r, i, 1));
	out->members = (uint64_t)pg_get_i64(r, i, 18);
	out->compensating = PQgetvalue(r, i, 19)[0] == 't';
	out->finished = PQgetvalue(r, i, 20)[0] == 't';
	out->s.state = store_category(out->type, out->state, out->compensating, out->finished);
	/* the input, hex; a value longer than the row holds (never written by
	 * StartSaga, which refuses it) is read as none */
	const char *hex = PQgetvalue(r, i, 21);
	size_t nhex = strlen(hex);
	if (nhex % 2 == 0 && nhex / 2 <= sizeof out->input) {
		for (size_t k = 0; k < nhex / 2; k++) {
			unsigned v = 0;
			(void)sscanf(hex + 2 * k, "%2x", &v);
			out->input[k] = (unsigned char)v;
		}
		out->ninput = (uint32_t)(nhex / 2);
	}
}

/* store_input_hex writes row's input as lowercase hex into hex (room for
 * 2 * SAGA_INPUT_MAX + 1 bytes; "" for none), as the inserts take it. */
static void store_input_hex(const saga_row *row, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (uint32_t k = 0; k < row->ninput && k < SAGA_INPUT_MAX; k++) {
		hex[2 * k] = digits[row->input[k] >> 4];
		hex[2 * k + 1] = digits[row->input[k] & 15];
	}
	hex[2 * (row->ninput < SAGA_INPUT_MAX ? row->ninput : SAGA_INPUT_MAX)] = '\0';
}

bool store_same_start(const saga_row *a, const saga_row *b)
{
	return strcmp(a->type, b->type) == 0 && strcmp(a->customer, b->customer) == 0
	    && strcmp(a->sku, b->sku) == 0 && a->qty == b->qty && a->amount == b->amount
	    && a->ninput == b->ninput && a->ninput <= SAGA_INPUT_MAX
	    && memcmp(a->input, b->input, a->ninput) == 0;
}

saga_state store_category(const char *type, const char *state, bool compensating, bool finished)
{
	if (strcmp(type, "order") == 0)
		return saga_state_parse(state);
	if (finished)
		return compensating ? SAGA_STATE_CANCELLED : SAGA_STATE_COMPLETED;
	return compensating ? SAGA_STATE_RELEASING : SAGA_STATE_RESERVING;
}

/* The statements of the API and the engine, prepared once per session
 * (pg_exec_stmt). */
/* clang-format off */
/* StartSaga: the saga row and its "started" history row in ONE statement,
 * so one transaction without BEGIN/COMMIT round trips. */
static const pg_stmt STORE_INSERT_SAGA = {"saga_insert_saga",
    "WITH ins AS ("
    "  INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at,"
    "    step_deadline, lease_owner, waiter, def_id, type, input) SELECT $1::uuid, $2::text,"
    "    $3::text, $4::text, nullif($5::integer, 0), nullif($6::bigint, 0), " TS("$7") ", "
    TS("$8") ", $10::text, $9::text, nullif($11::integer, 0), $12::text,"
    "    decode(nullif($13::text, ''), 'hex')"
    /* rule R5: never an id whose deleted saga a participant may remember */
    "    WHERE NOT EXISTS (SELECT 1 FROM saga_ids_retired r WHERE r.saga_id = $1::uuid)"
    "  ON CONFLICT (saga_id) DO NOTHING RETURNING *),"
    " hist AS ("
    "  INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason)"
    "  SELECT saga_id, 1, NULL, state, 'started', '' FROM ins)"
    " SELECT " SAGA_COLS " FROM ins", true};
/* StartSagas that arrived together: the same, with one row per saga. A saga
 * id given twice, or already stored, inserts nothing (DO NOTHING). */
static const pg_stmt STORE_INSERT_SAGAS = {"saga_insert_sagas",
    "WITH v AS ("
    "  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::integer[],"
    "    $6::bigint[], $7::bigint[], $8::bigint[], $9::text[], $10::integer[], $11::text[],"
    "    $12::text[])"
    "    AS t(saga_id, state, customer, sku, qty, amount, next_ms, deadline_ms, waiter,"
    "      def_id, type, input_hex)),"
    " ins AS ("
    "  INSERT INTO sagas (saga_id, state, customer, sku, qty, amount, next_attempt_at,"
    "    step_deadline, lease_owner, waiter, def_id, type, input) SELECT saga_id, state,"
    "    customer, sku, nullif(qty, 0), nullif(amount, 0), " TS("next_ms") ", "
    TS("deadline_ms") ", $13, waiter, nullif(def_id, 0), type,"
    "    decode(nullif(input_hex, ''), 'hex') FROM v"
    "    WHERE NOT EXISTS (SELECT 1 FROM saga_ids_retired r WHERE r.saga_id = v.saga_id)"
    "  ON CONFLICT (saga_id) DO NOTHING RETURNING *),"
    " hist AS ("
    "  INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason)"
    "  SELECT saga_id, 1, NULL, state, 'started', '' FROM ins)"
    " SELECT " SAGA_COLS " FROM ins", true};
/* rule R5: the tombstones of deleted sagas among $1 (saga_ids_retired) */
static const pg_stmt STORE_GET_RETIRED = {"saga_get_retired",
    "SELECT saga_id, " MS("created_at") " FROM saga_ids_retired WHERE saga_id = ANY($1::uuid[])",
    false};
static const pg_stmt STORE_GET_SAGA = {"saga_get_saga",
    "SELECT " SAGA_COLS " FROM sagas WHERE saga_id = $1", false};
static const pg_stmt STORE_GET_SAGAS = {"saga_get_sagas",
    "SELECT " SAGA_COLS " FROM sagas WHERE saga_id = ANY($1::uuid[])", false};
/* WaitSaga: instance $2 waits for this saga's end (schema.sql, waiter):
 * its name when nobody else waits, else '*' (anyone), and the row as it is
 * now. Only a mark that changes the column is written: a row already
 * marked so (a second wait, or a client asking again and again) is not
 * rewritten (no new row version, no WAL, no row lock that the claims'
 * SKIP LOCKED would pass over); store_mark_waiter then reads it. */
#define STORE_WAITER_MARK                                                                          \
	"CASE WHEN waiter IS NULL OR waiter = $2::text THEN coalesce($2::text, '*') ELSE '*' END"
static const pg_stmt STORE_MARK_WAITER = {"saga_mark_waiter",
    "UPDATE sagas SET waiter = " STORE_WAITER_MARK
    " WHERE saga_id = $1 AND waiter IS DISTINCT FROM " STORE_WAITER_MARK
    " RETURNING " SAGA_COLS, false};
/* clang-format on */

int store_apply_schema(PGconn *conn)
{
	/* one schema change at a time when several orchestrators start together */
	static const pg_schema schema = {.what = "orchestrator",
	    .sql = orchestrator_schema_sql,
	    .lock_key = "7101",
	    .version = STORE_SCHEMA_VERSION,
	    .prog = "orchestratord"};
	return pg_apply_schema(conn, &schema);
}

int store_insert_history(PGconn *conn, const char *saga_id, int64_t version, const char *from,
    const char *to, const char *event, const char *reason)
{
	char ver[24];
	snprintf(ver, sizeof ver, "%" PRId64, version);
	const char *p[6] = {saga_id, ver, from != NULL && from[0] ? from : NULL, to, event, reason};
	return pg_run(conn,
	    "INSERT INTO saga_history (saga_id, version, from_state, to_state, event, reason) "
	    "VALUES ($1, $2, $3, $4, $5, $6)",
	    6, p);
}

/* store_exec_ids runs `st`, whose one parameter is the array of the `n`
 * saga ids `ids` (uuid[]), into *r (the caller clears it). Returns 0,
 * -ENOMEM or a negative enum pg_err. */
static int store_exec_ids(
    PGconn *conn, const pg_stmt *st, const char *const *ids, size_t n, PGresult **r)
{
	pg_buf arr = {0};
	pg_array_open(&arr);
	for (size_t i = 0; i < n; i++)
		pg_array_add(&arr, ids[i]);
	pg_array_close(&arr);
	if (arr.oom) {
		pg_buf_free(&arr);
		return -ENOMEM;
	}
	const char *p[1] = {arr.p};
	int rc = pg_exec_stmt(conn, st, 1, p, r);
	pg_buf_free(&arr);
	return rc;
}

/* store_retired_row fills *out as the row of a retired saga id: created_ms
 * the deleted saga's start, state SAGA_STATE_UNSPECIFIED. */
static void store_retired_row(const char *saga_id, int64_t created_ms, saga_row *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->saga_id, sizeof out->saga_id, "%s", saga_id);
	out->s.state = SAGA_STATE_UNSPECIFIED;
	out->created_ms = created_ms;
}

/* store_find_retired looks up the `n` ids (n >= 1) in saga_ids_retired:
 * for each found, out[i] becomes its retired row (store_retired_row) and
 * found[i] true. Returns 0, -ENOMEM or a negative enum pg_err. */
static int store_find_retired(
    PGconn *conn, const char *const *ids, size_t n, saga_row *out, bool *found)
{
	for (size_t i = 0; i < n; i++)
		found[i] = false;
	PGresult *r = NULL;
	int rc = store_exec_ids(conn, &STORE_GET_RETIRED, ids, n, &r);
	if (rc != 0)
		return rc;
	for (int k = 0; k < PQntuples(r); k++)
		for (size_t i = 0; i < n; i++)
			if (!found[i] && strcmp(ids[i], PQgetvalue(r, k, 0)) == 0) {
				store_retired_row(ids[i], pg_get_i64(r, k, 1), &out[i]);
				found[i] = true;
			}
	PQclear(r);
	return 0;
}

/* The tries of an insert that lost the race with a retention batch
 * deleting the same id (the trigger saga_id_not_retired's
 * serialization_failure): the next one sees its tombstone. */
#define STORE_INSERT_TRIES 3

int store_insert_saga(PGconn *conn, const saga_row *row, const char *owner, const char *waiter,
    bool *created, saga_row *existing)
{
	char qty[16], amount[24], next[24], deadline[24], def_id[16];
	snprintf(qty, sizeof qty, "%" PRId32, row->qty);
	snprintf(def_id, sizeof def_id, "%" PRId32, row->def_id);
	snprintf(amount, sizeof amount, "%" PRId64, row->amount);
	snprintf(next, sizeof next, "%" PRId64, row->s.next_attempt_ms);
	snprintf(deadline, sizeof deadline, "%" PRId64, row->s.step_deadline_ms);
	char hex[2 * SAGA_INPUT_MAX + 1];
	store_input_hex(row, hex);
	const char *p[13] = {row->saga_id, row->state, row->customer, row->sku, qty, amount, next,
	    deadline, waiter, owner, def_id, row->type, hex};
	PGresult *r = NULL;
	*created = false;
	/* the saga row and its "started" history row in ONE statement, so one
	 * transaction without BEGIN/COMMIT round trips */
	int rc = PG_ERR_RETRY;
	for (int i = 0; i < STORE_INSERT_TRIES && rc == PG_ERR_RETRY; i++)
		rc = pg_exec_stmt(conn, &STORE_INSERT_SAGA, 13, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 1) {
		store_read_row(r, 0, existing);
		*created = true;
		PQclear(r);
		return 0;
	}
	PQclear(r);
	/* a duplicate: the conflict waited for the first insert, so it is
	 * there; or a retired id (rule R5) */
	rc = store_get_saga(conn, row->saga_id, existing);
	if (rc == -ENOENT) {
		bool found = false;
		const char *ids[1] = {row->saga_id};
		rc = store_find_retired(conn, ids, 1, existing, &found);
		if (rc == 0 && !found)
			rc = -ENOENT;
	}
	return rc;
}

int store_get_saga(PGconn *conn, const char *saga_id, saga_row *out)
{
	PGresult *r = NULL;
	const char *p[1] = {saga_id};
	int rc = pg_exec_stmt(conn, &STORE_GET_SAGA, 1, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		store_read_row(r, 0, out);
	}
	PQclear(r);
	return rc;
}

int store_mark_waiter(PGconn *conn, const char *saga_id, const char *instance, saga_row *out)
{
	PGresult *r = NULL;
	const char *p[2] = {saga_id, instance};
	int rc = pg_exec_stmt(conn, &STORE_MARK_WAITER, 2, p, &r);
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 1) {
		store_read_row(r, 0, out);
		PQclear(r);
		return 0;
	}
	PQclear(r);
	/* marked so already (or no such saga): the mark was committed before
	 * the UPDATE saw it, so an end committed after this read (a new
	 * statement: a new snapshot) finds it and is NOTIFYed or answered
	 * in-process, and one committed before is in the row read here. The
	 * column only ever goes NULL -> name -> '*', never back. */
	return store_get_saga(conn, saga_id, out);
}

int store_get_sagas(PGconn *conn, const char *const *ids, size_t n, saga_row *out, bool *found)
{
	for (size_t i = 0; i < n; i++)
		found[i] = false;
	if (n == 0)
		return 0;
	PGresult *r = NULL;
	int rc = store_exec_ids(conn, &STORE_GET_SAGAS, ids, n, &r);
	if (rc != 0)
		return rc;
	for (int k = 0; k < PQntuples(r); k++) {
		const char *id = PQgetvalue(r, k, 0);
		for (size_t i = 0; i < n; i++) /* an id may be asked for twice */
			if (!found[i] && strcmp(ids[i], id) == 0) {
				store_read_row(r, k, &out[i]);
				found[i] = true;
			}
	}
	PQclear(r);
	return 0;
}

int store_insert_sagas(PGconn *conn, const saga_row *rows, const char *const *waiters, size_t n,
    const char *owner, bool *created, saga_row *stored)
{
	if (n == 0 || n > RPC_BATCH_MAX)
		return -EINVAL;
	enum {
		C_ID,
		C_STATE,
		C_CUSTOMER,
		C_SKU,
		C_QTY,
		C_AMOUNT,
		C_NEXT,
		C_DEADLINE,
		C_WAITER,
		C_DEF,
		C_TYPE,
		C_INPUT,
		C_N
	};
	char hex[2 * SAGA_INPUT_MAX + 1];
	pg_buf cols[C_N];
	pg_arrays_open(cols, C_N);
	for (size_t i = 0; i < n; i++) {
		const saga_row *w = &rows[i];
		created[i] = false;
		pg_array_add(&cols[C_ID], w->saga_id);
		pg_array_add(&cols[C_STATE], w->state);
		pg_array_add(&cols[C_CUSTOMER], w->customer);
		pg_array_add(&cols[C_SKU], w->sku);
		pg_array_add_i64(&cols[C_QTY], w->qty);
		pg_array_add_i64(&cols[C_AMOUNT], w->amount);
		pg_array_add_i64(&cols[C_NEXT], w->s.next_attempt_ms);
		pg_array_add_i64(&cols[C_DEADLINE], w->s.step_deadline_ms);
		pg_array_add(&cols[C_WAITER], waiters ? waiters[i] : NULL);
		pg_array_add_i64(&cols[C_DEF], w->def_id);
		pg_array_add(&cols[C_TYPE], w->type);
		store_input_hex(w, hex);
		pg_array_add(&cols[C_INPUT], hex);
	}
	const char *p[C_N + 1];
	int rc = pg_arrays_close(cols, C_N, p);
	bool any_waiter = false;
	for (size_t i = 0; waiters != NULL && i < n; i++)
		any_waiter = any_waiter || waiters[i] != NULL;
	if (!any_waiter)
		p[C_WAITER] = NULL; /* unnest pads a NULL array with NULLs */
	p[C_N] = owner;
	PGresult *r = NULL;
	if (rc == 0) {
		rc = PG_ERR_RETRY;
		for (int i = 0; i < STORE_INSERT_TRIES && rc == PG_ERR_RETRY; i++)
			rc = pg_exec_stmt(conn, &STORE_INSERT_SAGAS, C_N + 1, p, &r);
	}
	pg_arrays_free(cols, C_N);
	if (rc != 0)
		return rc;
	/* the rows inserted: the first request of each new saga id created it */
	for (int k = 0; k < PQntuples(r); k++) {
		const char *id = PQgetvalue(r, k, 0);
		for (size_t i = 0; i < n; i++)
			if (strcmp(rows[i].saga_id, id) == 0) {
				store_read_row(r, k, &stored[i]);
				created[i] = true;
				break;
			}
	}
	PQclear(r);
	/* the others existed (or were given twice): the conflict waited for
	 * the first insert, so they are there to read */
	const char *ids[RPC_BATCH_MAX];
	size_t at[RPC_BATCH_MAX], m = 0;
	for (size_t i = 0; i < n; i++)
		if (!created[i]) {
			ids[m] = rows[i].saga_id;
			at[m++] = i;
		}
	if (m == 0)
		return 0;
	saga_row *got = calloc(m, sizeof *got);
	bool found[RPC_BATCH_MAX];
	if (got == NULL)
		return -ENOMEM;
	rc = store_get_sagas(conn, ids, m, got, found);
	/* the ids not stored: retired (rule R5), or a bug */
	const char *gone[RPC_BATCH_MAX];
	size_t gone_at[RPC_BATCH_MAX], ng = 0;
	for (size_t j = 0; rc == 0 && j < m; j++) {
		if (found[j]) {
			stored[at[j]] = got[j];
		} else {
			gone[ng] = ids[j];
			gone_at[ng++] = at[j];
		}
	}
	if (rc == 0 && ng > 0) {
		bool retired[RPC_BATCH_MAX];
		rc = store_find_retired(conn, gone, ng, got, retired);
		for (size_t j = 0; rc == 0 && j < ng; j++) {
			if (!retired[j])
				rc = -ENOENT;
			else
				stored[gone_at[j]] = got[j];
		}
	}
	free(got);
	return rc;
}

const char *store_overdue_name(store_overdue_reason r)
{
	switch (r) {
	case STORE_OVERDUE_PAST_DEADLINE:
		return "past_deadline";
	case STORE_OVERDUE_COMPENSATION_FAILING:
		return "compensation_failing";
	case STORE_OVERDUE_STUCK:
		return "stuck";
	case STORE_OVERDUE_RETRYING:
		return "retrying";
	case STORE_OVERDUE_N:
		break;
	}
	return "";
}

int store_history(PGconn *conn, const char *saga_id, store_history_entry **out, size_t *n)
{
	const char *p[1] = {saga_id};
	PGresult *r = NULL;
	int rc = pg_exec(conn,
	    "SELECT h.version, coalesce(h.from_state, ''), h.to_state, h.event, h.reason, " MS(
	        "h.at") ", coalesce(s.type, 'order'), coalesce(a.role || ' at ' || a.peer, ''), "
	                "coalesce(a.reason, '') FROM sagas s LEFT JOIN saga_history h "
	                "ON h.saga_id = s.saga_id LEFT JOIN audit a ON a.saga_id = h.saga_id "
	                "AND a.saga_started_at = s.created_at AND a.version = h.version WHERE "
	                "s.saga_id = $1 ORDER BY h.version",
	    1, p, &r);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	if (count == 0) {
		PQclear(r);
		return -ENOENT;
	}
	*out = calloc((size_t)count, sizeof **out);
	if (*out == NULL) {
		PQclear(r);
		return -ENOMEM;
	}
	size_t k = 0;
	for (int i = 0; i < count; i++) {
		if (PQgetisnull(r, i, 0))
			continue; /* a saga without history rows (cannot happen) */
		store_history_entry *e = &(*out)[k++];
		e->version = pg_get_i64(r, i, 0);
		snprintf(e->from, sizeof e->from, "%s", PQgetvalue(r, i, 1));
		snprintf(e->to, sizeof e->to, "%s", PQgetvalue(r, i, 2));
		/* the order saga's enum for its own type only */
		bool order = strcmp(PQgetvalue(r, i, 6), "order") == 0;
		e->from_state = order ? saga_state_parse(e->from) : SAGA_STATE_UNSPECIFIED;
		e->to_state = order ? saga_state_parse(e->to) : SAGA_STATE_UNSPECIFIED;
		snprintf(e->event, sizeof e->event, "%s", PQgetvalue(r, i, 3));
		(void)valid_utf8_copy(e->reason, sizeof e->reason, PQgetvalue(r, i, 4));
		e->at_ms = pg_get_i64(r, i, 5);
		(void)valid_utf8_copy(e->actor, sizeof e->actor, PQgetvalue(r, i, 7));
		(void)valid_utf8_copy(e->note, sizeof e->note, PQgetvalue(r, i, 8));
	}
	*n = k;
	PQclear(r);
	return 0;
}

/* `finished` as schema.sql defines it. The claim sets both columns from
 * the row as it is: a saga that an orchestrator older than these plain
 * columns ended (without setting them) is claimed once and healed (no
 * lease, out of sagas_open; the engine finds no command to send). */
#define STORE_TERMINAL "(finished OR " STORE_TERMINAL_NAME ")"
/* The lease a claimed row gets, saga_lease_until_ms (saga.h, rule T5) in
 * SQL: now ($1) + the try's timeout (the request timeout $2 doubled per
 * failed try, at most $5) + the grace $6, never past the step deadline. A
 * row claimed past its deadline keeps that deadline as its next attempt,
 * so if its deadline transition is not written, the next sweep finds it
 * again. The integration test claim_lease checks it against the C function. */
#define STORE_LEASE                                                                                \
	"LEAST(to_timestamp(($1::bigint + LEAST($2::bigint * (1::bigint << LEAST(attempts, 40)),"  \
	" $5::bigint) + $6::bigint) / 1000.0), coalesce(step_deadline, 'infinity'))"
/* clang-format off */
/* The sweep's claim, from two indexes (schema.sql): due retries through
 * sagas_retry, soonest first, and sagas on their first try whose lease or
 * deadline has come through sagas_open, oldest first; of those, the ones
 * due earliest win (so sagas retrying every second cannot keep older due
 * work from the room under --max-inflight). A saga in retry is only in
 * sagas_retry, so an outage that leaves thousands of sagas retrying does
 * not make every sweep read them all; and a saga on its first try cannot
 * be due before created_at + min(lease, step timeout), so the sweep reads
 * only those created before $4, not a burst of young ones. sagas_open is
 * walked with a plain index scan, which marks the entries of finished
 * sagas dead as it passes them (a bitmap scan would not). */
#define STORE_CLAIM_SQL(also)                                                      \
	"WITH retry AS ("                                                          \
	"  SELECT saga_id, next_attempt_at FROM sagas"                             \
	"  WHERE retry_at IS NOT NULL AND retry_at <= " TS("$1") also              \
	"  ORDER BY retry_at LIMIT $3 FOR UPDATE SKIP LOCKED),"                    \
	" first AS ("                                                              \
	"  SELECT saga_id, next_attempt_at FROM sagas"                             \
	"  WHERE NOT finished AND retry_at IS NULL AND created_at <= " TS("$4")    \
	"    AND next_attempt_at <= " TS("$1") also                                \
	"  ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)"                   \
	" UPDATE sagas SET"                                                        \
	"  epoch = epoch + 1, lease_owner = $7,"                                    \
	"  next_attempt_at = CASE WHEN NOT " STORE_TERMINAL " THEN " STORE_LEASE " END," \
	"  retry_at = CASE WHEN attempts > 0 AND NOT " STORE_TERMINAL " THEN"      \
	"    " STORE_LEASE " END, finished = " STORE_TERMINAL                      \
	", cancelled = (cancelled OR (coalesce(type, 'order') = 'order'"            \
	"   AND state = 'CANCELLED'))"                                              \
	" WHERE saga_id = ANY(ARRAY(" \
	"  SELECT saga_id FROM (SELECT * FROM retry UNION ALL SELECT * FROM first) due" \
	"  ORDER BY next_attempt_at LIMIT $3)) "                                   \
	"RETURNING " SAGA_COLS
static const pg_stmt STORE_CLAIM_DUE = {"saga_claim_due", STORE_CLAIM_SQL(""), true};
/* The same claim, only sagas whose step deadline has passed: the sweep
 * writes their deadline transitions even when there is no room to send
 * (engine.c). */
static const pg_stmt STORE_CLAIM_DEADLINES = {
    "saga_claim_deadlines", STORE_CLAIM_SQL(" AND step_deadline <= " TS("$1")), true};
/* clang-format on */

static int store_claim(PGconn *conn, const pg_stmt *stmt, int64_t now_ms, const saga_policy *pol,
    int64_t created_before_ms, int limit, const char *owner, saga_row *rows, size_t *n)
{
	char now[24], rt[24], lim[16], before[24], max[24], grace[24];
	int64_t first = pol->request_timeout_ms > 0 ? pol->request_timeout_ms : 1;
	snprintf(now, sizeof now, "%" PRId64, now_ms);
	snprintf(rt, sizeof rt, "%" PRId64, first);
	snprintf(lim, sizeof lim, "%d", limit);
	snprintf(before, sizeof before, "%" PRId64, created_before_ms);
	snprintf(max, sizeof max, "%" PRId64,
	    pol->request_timeout_max_ms > first ? pol->request_timeout_max_ms : first);
	snprintf(grace, sizeof grace, "%" PRId64, pol->lease_grace_ms);
	const char *p[7] = {now, rt, lim, before, max, grace, owner};
	PGresult *r = NULL;
	*n = 0;
	int rc = pg_exec_stmt(conn, stmt, 7, p, &r);
	if (rc != 0)
		return rc;
	int count = PQntuples(r);
	for (int i = 0; i < count && i < limit; i++)
		store_read_row(r, i, &rows[i]);
	*n = (size_t)(count < limit ? count : limit);
	PQclear(r);
	return 0;
}

int store_claim_due(PGconn *conn, int64_t now_ms, const saga_policy *pol, int64_t created_before_ms,
    int limit, const char *owner, saga_row *rows, size_t *n)
{
	return store_claim(
	    conn, &STORE_CLAIM_DUE, now_ms, pol, created_before_ms, limit, owner, rows, n);
}

int store_claim_deadlines(PGconn *conn, int64_t now_ms, const saga_policy *pol,
    int64_t created_before_ms, int limit, const char *owner, saga_row *rows, size_t *n)
{
	return store_claim(
	    conn, &STORE_CLAIM_DEADLINES, now_ms, pol, created_before_ms, limit, owner, rows, n);
}

int store_read_gauges(PGconn *conn, int64_t margin_ms, int64_t stuck_ms, store_gauges *out)
{
	char margin[24], stuck[24];
	snprintf(margin, sizeof margin, "%" PRId64, margin_ms);
	snprintf(stuck, sizeof stuck, "%" PRId64, stuck_ms);
	const char *p[2] = {margin, stuck};
	PGresult *r = NULL;
	/* one row per saga type and unfinished state that has sagas */
	int rc = pg_exec(conn,
	    "SELECT state, count(*), count(*) FILTER (WHERE attention),"
	    " count(*) FILTER (WHERE past_deadline),"
	    " count(*) FILTER (WHERE compensation_failing),"
	    " count(*) FILTER (WHERE stuck),"
	    " count(*) FILTER (WHERE retrying),"
	    " count(*) FILTER (WHERE " STORE_OVERDUE_ANY "), type"
	    " FROM (SELECT state, attention, " STORE_OVERDUE_COLS(
	        "$1", "$2") ", coalesce(type, 'order') AS type FROM sagas WHERE " STORE_UNFINISHED
	                    ") s GROUP BY type, state",
	    2, p, &r);
	if (rc != 0)
		return rc;
	store_gauges g;
	memset(&g, 0, sizeof g);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *type = PQgetvalue(r, i, 3 + STORE_OVERDUE_N + 1);
		saga_state st = strcmp(type, "order") == 0 ? saga_state_parse(PQgetvalue(r, i, 0))
		                                           : SAGA_STATE_UNSPECIFIED;
		if (st != SAGA_STATE_UNSPECIFIED) {
			g.open[st] = pg_get_i64(r, i, 1);
		} else if (strcmp(type, "order") != 0 && g.nothers < STORE_OPEN_OTHERS) {
			store_open_other *o = &g.others[g.nothers++];
			snprintf(o->type, sizeof o->type, "%s", type);
			snprintf(o->state, sizeof o->state, "%s", PQgetvalue(r, i, 0));
			o->n = pg_get_i64(r, i, 1);
		}
		g.attention += pg_get_i64(r, i, 2);
		for (int k = 0; k < STORE_OVERDUE_N; k++)
			g.overdue[k] += pg_get_i64(r, i, 3 + k);
		g.overdue_total += pg_get_i64(r, i, 3 + STORE_OVERDUE_N);
	}
	PQclear(r);
	*out = g;
	return 0;
}

store_rearm_result store_rearm(PGconn *conn, const char *saga_id, int64_t now_ms,
    int64_t created_after_ms, const store_actor *who, saga_row *out, int *err)
{
	char now[24];
	snprintf(now, sizeof now, "%" PRId64, now_ms);
	const char *p[2] = {saga_id, now};
	PGresult *r = NULL;
	store_rearm_result res = STORE_REARM_ERROR;
	int rc = pg_begin(conn);
	if (rc != 0) {
		*err = rc;
		return STORE_REARM_ERROR;
	}
	rc = pg_exec(conn,
	    "UPDATE sagas SET attention = false, attempts = 0, retry_at = NULL, "
	    "next_attempt_at = " TS("$2") ", "
	                                  "version = version + 1, updated_at = now() "
	                                  "WHERE saga_id = $1 AND NOT " STORE_TERMINAL " "
	                                  "RETURNING " SAGA_COLS,
	    2, p, &r);
	if (rc != 0)
		goto out_rollback;
	if (PQntuples(r) == 0) {
		PQclear(r);
		r = NULL;
		rc = pg_exec(conn, "SELECT 1 FROM sagas WHERE saga_id = $1", 1, p, &r);
		if (rc == 0)
			res = PQntuples(r) == 0 ? STORE_REARM_NOT_FOUND : STORE_REARM_TERMINAL;
		goto out_rollback;
	}
	store_read_row(r, 0, out);
	PQclear(r);
	r = NULL;
	if (out->created_ms < created_after_ms) {
		res = STORE_REARM_PAST_HORIZON;
		goto out_rollback;
	}
	rc = store_insert_history(
	    conn, saga_id, out->version, out->state, out->state, "retry", out->s.reason);
	if (rc == 0)
		rc = store_insert_audit(conn, "retry", who, saga_id, out->version, out->state);
	if (rc != 0)
		goto out_rollback;
	*err = pg_commit(conn);
	return *err == 0 ? STORE_REARM_OK : STORE_REARM_ERROR;
out_rollback:
	PQclear(r);
	pg_rollback(conn);
	*err = rc;
	return rc != 0 ? STORE_REARM_ERROR : res;
}

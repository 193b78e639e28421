/* pkit_toy: the toy services and the shared fixture of the participant
 * kit's tests (pkit_toy.h says what they are). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <pthread.h>

#include "elect.h"
#include "fault.h"
#include "horizon.h"
#include "log.h"
#include "participant.h"
#include "pg.h"
#include "pkit.h"
#include "pkit_toy.h"
#include "retention.h"
#include "rpc.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"
#include "status.h"
#include "valcache.h"
#include "valid.h"

/* ---- the toy service (rows) ---- */

static const char *const toy_names[]
    = {"NONE", "TAKEN", "SHORT", "NO_ROW", "RETURNED", "TOMBSTONE"};

/* saga_check and saga_unchanged as services/stock/sql/schema.sql has them */
#define TOY_CHECK_FUNCTIONS                                                                        \
	"CREATE OR REPLACE FUNCTION saga_check(ok boolean, what text) RETURNS integer\n"           \
	"LANGUAGE plpgsql AS $$\n"                                                                 \
	"BEGIN\n"                                                                                  \
	"	IF ok IS NOT TRUE THEN\n"                                                                \
	"		RAISE EXCEPTION 'saga_check failed: %', what USING ERRCODE = 'P0001';\n"                \
	"	END IF;\n"                                                                               \
	"	RETURN 1;\n"                                                                             \
	"END\n"                                                                                    \
	"$$;\n"                                                                                    \
	"CREATE OR REPLACE FUNCTION saga_unchanged(ok boolean, what text) RETURNS integer\n"       \
	"LANGUAGE plpgsql AS $$\n"                                                                 \
	"BEGIN\n"                                                                                  \
	"	IF ok IS NOT TRUE THEN\n"                                                                \
	"		RAISE EXCEPTION 'saga_unchanged failed: %', what USING ERRCODE = "                      \
	"'40001';\n"                                                                               \
	"	END IF;\n"                                                                               \
	"	RETURN 1;\n"                                                                             \
	"END\n"                                                                                    \
	"$$;\n"

static const char toy_schema_sql[]
    = "CREATE TABLE IF NOT EXISTS toy_rows (\n"
      "	key text PRIMARY KEY,\n"
      "	value bigint NOT NULL CHECK (value >= 0)\n"
      ");\n"
      "CREATE TABLE IF NOT EXISTS toy_records (\n"
      "	saga_id uuid PRIMARY KEY,\n"
      "	key text NOT NULL,\n"
      "	n bigint NOT NULL CHECK (n > 0),\n"
      "	status text NOT NULL\n"
      "	    CHECK (status IN ('TAKEN', 'SHORT', 'NO_ROW', 'RETURNED', 'TOMBSTONE')),\n"
      "	saga_started_ms bigint,\n"
      "	created_at timestamptz NOT NULL DEFAULT now(),\n"
      "	updated_at timestamptz NOT NULL DEFAULT now()\n"
      ");\n"
      "CREATE TABLE IF NOT EXISTS toy_records_retired (\n"
      "	key text NOT NULL,\n"
      "	status text NOT NULL,\n"
      "	records bigint NOT NULL DEFAULT 0 CHECK (records >= 0),\n"
      "	total bigint NOT NULL DEFAULT 0,\n"
      "	PRIMARY KEY (key, status)\n"
      ");\n"
      "CREATE INDEX IF NOT EXISTS toy_records_newest ON toy_records (created_at DESC, "
      "saga_id);\n" TOY_CHECK_FUNCTIONS;

static const char *toy_status_name(int s)
{
	return s >= TOY_NONE && s <= TOY_TOMBSTONE ? toy_names[s] : "NONE";
}

static int toy_status_parse(const char *name)
{
	for (int i = TOY_TAKEN; i <= TOY_TOMBSTONE; i++)
		if (strcmp(name, toy_names[i]) == 0)
			return i;
	return TOY_NONE;
}

static void toy_new_record(pkit_outcome *o, const pkit_args *a, int status)
{
	o->write_record = true;
	o->record.status = status;
	snprintf(o->record.text[0], sizeof o->record.text[0], "%s", a->text[0]);
	o->record.num[0] = a->num[0];
}

/* toy_decide: rules 2 (a duplicate answered from the record), 5 (an early
 * compensation leaves a tombstone) and 6 (the same saga id with other
 * arguments is refused). */
static void toy_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	memset(out, 0, sizeof *out);
	out->reason = "";
	bool take = a->op == TOY_OP_TAKE;
	if (rec->status != TOY_NONE) {
		if (rec->status == TOY_TOMBSTONE && take) {
			out->code = RPC_ABORTED;
			out->reason = REASON_TOMBSTONE;
			out->reply_status = TOY_TOMBSTONE;
			return;
		}
		if (strcmp(rec->text[0], a->text[0]) != 0 || rec->num[0] != a->num[0]) {
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
			out->reply_status = rec->status;
			return;
		}
		if (!take && rec->status == TOY_TAKEN) {
			out->write_record = true;
			out->record = *rec;
			out->record.status = TOY_RETURNED;
			out->write_row = row->exists;
			out->value = row->value + rec->num[0];
			out->reply_status = TOY_RETURNED;
			return;
		}
		out->reply_status = rec->status;
		if (!take)
			return; /* a compensation succeeds once recorded */
		if (rec->status == TOY_SHORT) {
			out->code = RPC_FAILED_PRECONDITION;
			out->reason = REASON_OUT_OF_STOCK;
		} else if (rec->status == TOY_NO_ROW) {
			out->code = RPC_NOT_FOUND;
			out->reason = REASON_UNKNOWN_SKU;
		} else {
			out->reply_status = TOY_TAKEN; /* TAKEN or RETURNED: the take was OK */
		}
		return;
	}
	if (!take) {
		toy_new_record(out, a, TOY_TOMBSTONE);
		out->reply_status = TOY_TOMBSTONE;
		return;
	}
	if (!row->exists) {
		toy_new_record(out, a, TOY_NO_ROW);
		out->code = RPC_NOT_FOUND;
		out->reason = REASON_UNKNOWN_SKU;
		out->reply_status = TOY_NO_ROW;
		return;
	}
	if (row->value < a->num[0]) {
		toy_new_record(out, a, TOY_SHORT);
		out->code = RPC_FAILED_PRECONDITION;
		out->reason = REASON_OUT_OF_STOCK;
		out->reply_status = TOY_SHORT;
		return;
	}
	toy_new_record(out, a, TOY_TAKEN);
	out->write_row = true;
	out->value = row->value - a->num[0];
	out->reply_status = TOY_TAKEN;
}

/* The toy borrows sagas.v1.ReserveStockRequest and ReleaseStockRequest
 * (saga_id, sku, qty) as its requests, and their replies: sku is the key,
 * qty is n. */
#define TOY_FIELDS {{"sku", true, 0, 0, NULL}, {"qty", false, 1, VALID_QTY_MAX, NULL}}, 2

const pkit_method toy_methods[] = {
    {TOY_TAKE_ID, TOY_OP_TAKE, "take units", "take", &sagas__v1__reserve_stock_request__descriptor,
        TOY_FIELDS, &sagas__v1__reserve_stock_reply__descriptor, "on_hand", NULL},
    {TOY_GIVEBACK_ID, TOY_OP_GIVEBACK, "give units back", "give back",
        &sagas__v1__release_stock_request__descriptor, TOY_FIELDS,
        &sagas__v1__release_stock_reply__descriptor, NULL, NULL},
};

static pkit_sql toy_sql;

const pkit_service toy_service = {
    .name = "toy",
    .schema = {.what = "toy",
        .sql = toy_schema_sql,
        .lock_key = "7310587035298048201",
        .version = 1,
        .prog = "test_pkit"},
    .records = "toy_records",
    .text_cols = {"key"},
    .n_text = 1,
    .num_cols = {"n"},
    .n_num = 1,
    .rows = "toy_rows",
    .row_key = "key",
    .row_value = "value",
    .fast_op = TOY_OP_TAKE,
    .decide = toy_decide,
    .status_name = toy_status_name,
    .status_parse = toy_status_parse,
    .methods = toy_methods,
    .n_methods = sizeof toy_methods / sizeof toy_methods[0],
    .args_name = "key or n",
    .value_name = "units",
    .sql = &toy_sql,
};

/* ---- the notes service (no rows, two text columns, no number) ---- */

static const char notes_schema_sql[]
    = "CREATE TABLE IF NOT EXISTS toy_notes (\n"
      "	saga_id uuid PRIMARY KEY,\n"
      "	who text NOT NULL,\n"
      "	what text NOT NULL,\n"
      "	status text NOT NULL CHECK (status IN ('NOTED')),\n"
      "	saga_started_ms bigint,\n"
      "	created_at timestamptz NOT NULL DEFAULT now(),\n"
      "	updated_at timestamptz NOT NULL DEFAULT now()\n"
      ");\n"
      "CREATE TABLE IF NOT EXISTS toy_notes_retired (\n"
      "	key text NOT NULL,\n"
      "	status text NOT NULL,\n"
      "	records bigint NOT NULL DEFAULT 0,\n"
      "	total bigint NOT NULL DEFAULT 0,\n"
      "	PRIMARY KEY (key, status)\n"
      ");\n"
      "CREATE INDEX IF NOT EXISTS toy_notes_newest\n"
      "	ON toy_notes (created_at DESC, saga_id);\n" TOY_CHECK_FUNCTIONS;

/* how often the kit gave the rows-less decide a row (it must not) */
int notes_rows_seen;

static const char *notes_status_name(int s)
{
	return s == NOTE_NOTED ? "NOTED" : "NONE";
}

static int notes_status_parse(const char *name)
{
	return strcmp(name, "NOTED") == 0 ? NOTE_NOTED : NOTE_NONE;
}

static void notes_decide(
    const pkit_record *rec, const pkit_row *row, const pkit_args *a, pkit_outcome *out)
{
	if (row != NULL)
		notes_rows_seen++;
	memset(out, 0, sizeof *out);
	out->reason = "";
	if (rec->status != NOTE_NONE) {
		out->reply_status = rec->status;
		if (strcmp(rec->text[0], a->text[0]) != 0
		    || strcmp(rec->text[1], a->text[1]) != 0) {
			out->code = RPC_ALREADY_EXISTS;
			out->reason = REASON_KEY_MISMATCH;
		}
		return;
	}
	out->write_record = true;
	out->record.status = NOTE_NOTED;
	snprintf(out->record.text[0], sizeof out->record.text[0], "%s", a->text[0]);
	snprintf(out->record.text[1], sizeof out->record.text[1], "%s", a->text[1]);
	out->reply_status = NOTE_NOTED;
}

/* Notes borrow sagas.v1.ShipOrderRequest and its reply: customer is who,
 * sku is what (qty is checked and not kept). */
static const pkit_method notes_methods[] = {
    {NOTE_ID, NOTE_OP, "note", "note", &sagas__v1__ship_order_request__descriptor,
        {{"customer", true, 0, 0, NULL}, {"sku", true, 0, 0, NULL},
            {"qty", false, 1, VALID_QTY_MAX, NULL}},
        3, &sagas__v1__ship_order_reply__descriptor, NULL, "created"},
};

static pkit_sql notes_sql;

const pkit_service notes_service = {
    .name = "notes",
    .schema = {.what = "toy_notes",
        .sql = notes_schema_sql,
        .lock_key = "7310587035298048202",
        .version = 1,
        .prog = "test_pkit"},
    .records = "toy_notes",
    .text_cols = {"who", "what"},
    .n_text = 2,
    .n_num = 0,
    .rows = NULL,
    .fast_op = NOTE_OP,
    .decide = notes_decide,
    .status_name = notes_status_name,
    .status_parse = notes_status_parse,
    .methods = notes_methods,
    .n_methods = sizeof notes_methods / sizeof notes_methods[0],
    .sql = &notes_sql,
};

/* ---- the database ---- */

#define TEST_DB "pkit_toy"

void sql_ok(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

/* db_text runs `sql` (one parameter, may be NULL) and copies the first
 * column of its only row into out, or "" when it has no row. */
void db_text(PGconn *c, const char *sql, const char *p1, char *out, size_t len)
{
	const char *p[] = {p1};
	PGresult *r = PQexecParams(c, sql, p1 ? 1 : 0, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	if (PQntuples(r) > 1)
		fail_msg("%s: %d rows", sql, PQntuples(r));
	snprintf(out, len, "%s", PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
}

/* db_int is db_text for a number; -1 when there is no row. */
int64_t db_int(PGconn *c, const char *sql, const char *p1)
{
	char buf[64];
	db_text(c, sql, p1, buf, sizeof buf);
	return *buf ? strtoll(buf, NULL, 10) : -1;
}

/* row_value: the toy row's value, -1 when the row does not exist. */
int64_t row_value(fixture *f, const char *key)
{
	return db_int(f->admin, "SELECT value FROM toy_rows WHERE key = $1", key);
}

/* the toy record of a saga id as "STATUS key n", "" when there is none */
const char *record_of(fixture *f, const char *saga_id)
{
	static char buf[256];
	db_text(f->admin,
	    "SELECT status || ' ' || key || ' ' || n FROM toy_records WHERE saga_id = $1", saga_id,
	    buf, sizeof buf);
	return buf;
}

int64_t record_count(fixture *f)
{
	return db_int(f->admin, "SELECT count(*) FROM toy_records", NULL);
}

/* toy_reset empties every toy table and seeds the rows "KEY=value ...". */
void toy_reset(fixture *f, const char *rows)
{
	sql_ok(f->admin,
	    "TRUNCATE toy_records, toy_rows, toy_notes, toy_records_retired, toy_notes_retired", 0,
	    NULL);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", rows);
	for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		assert_non_null(eq);
		*eq = '\0';
		const char *p[] = {tok, eq + 1};
		sql_ok(f->admin, "INSERT INTO toy_rows (key, value) VALUES ($1, $2::bigint)", 2, p);
	}
}

void set_row(fixture *f, const char *key, int64_t value)
{
	char v[32];
	snprintf(v, sizeof v, "%" PRId64, value);
	const char *p[] = {key, v};
	sql_ok(f->admin,
	    "INSERT INTO toy_rows (key, value) VALUES ($1, $2::bigint)"
	    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
	    2, p);
}

int fixture_setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	assert_non_null(f);
	const char *port = getenv("PG_PORT");
	assert_non_null(port);
	char root[256];
	snprintf(root, sizeof root, "host=127.0.0.1 port=%s user=postgres dbname=postgres", port);
	snprintf(f->conninfo, sizeof f->conninfo, "host=127.0.0.1 port=%s user=postgres dbname=%s",
	    port, TEST_DB);
	snprintf(f->conninfo_no_deadlock, sizeof f->conninfo_no_deadlock,
	    "%s options='-c lock_timeout=5s -c deadlock_timeout=60s'", f->conninfo);
	PGconn *c = PQconnectdb(root);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", root, PQerrorMessage(c));
	sql_ok(c, "SET client_min_messages = warning", 0, NULL);
	sql_ok(c, "DROP DATABASE IF EXISTS " TEST_DB, 0, NULL);
	sql_ok(c, "CREATE DATABASE " TEST_DB, 0, NULL);
	PQfinish(c);
	assert_int_equal(pkit_migrate(&toy_service, f->conninfo, 5000), 0);
	assert_int_equal(pkit_migrate(&notes_service, f->conninfo, 5000), 0);
	f->admin = PQconnectdb(f->conninfo);
	if (PQstatus(f->admin) != CONNECTION_OK)
		fail_msg("connect %s: %s", f->conninfo, PQerrorMessage(f->admin));
	*state = f;
	return 0;
}

int fixture_teardown(void **state)
{
	fixture *f = *state;
	PQfinish(f->admin);
	free(f);
	return 0;
}

/* every test leaves no fault armed, even when it failed midway */
int fault_teardown(void **state)
{
	(void)state;
	if (fault_any())
		fault_clear();
	return 0;
}

/* ---- commands and outcomes ---- */

/* make_id writes a canonical saga id for (test, i): distinct for distinct
 * pairs, and in an order unrelated to i (the kit locks records in key
 * order and must still decide in arrival order). */
void make_id(saga_id_t out, unsigned test, unsigned i)
{
	uint32_t h = (test * 2654435761u) ^ (i * 2246822519u);
	h ^= h >> 15;
	h *= 2654435761u;
	h ^= h >> 13;
	snprintf(out, sizeof(saga_id_t), "%08x-%04x-4%03x-8%03x-%012x", h, test & 0xffffu,
	    i & 0xfffu, (h >> 20) & 0xfffu, i);
}

pkit_cmd toy_cmd(const char *saga_id, int op, const char *key, int64_t n)
{
	return (pkit_cmd) {.saga_id = saga_id, .args = {.op = op, .text = {key}, .num = {n}}};
}

pkit_cmd note_cmd(const char *saga_id, const char *who, const char *what)
{
	return (pkit_cmd) {.saga_id = saga_id, .args = {.op = NOTE_OP, .text = {who, what}}};
}

/* expect_out fails unless command `c` (named `what`) had this outcome:
 * code, reason, reply status, whether it wrote its record, and the row's
 * value after it. */
void expect_out(const char *what, const pkit_cmd *c, int code, const char *reason, int reply_status,
    bool wrote, int64_t value)
{
	const pkit_outcome *o = &c->out;
	if (o->code != code || strcmp(o->reason, reason) != 0 || o->reply_status != reply_status
	    || o->write_record != wrote || c->value != value)
		fail_msg("%s: got code=%d reason=\"%s\" status=%d wrote=%d value=%" PRId64
		         "; want code=%d reason=\"%s\" status=%d wrote=%d value=%" PRId64,
		    what, o->code, o->reason, o->reply_status, o->write_record, c->value, code,
		    reason, reply_status, wrote, value);
}

void apply_ok(pkit_store *s, pkit_cmd *cmds, size_t n)
{
	assert_int_equal(pkit_store_apply(s, cmds, n), 0);
}

pkit_store *open_store(fixture *f, const pkit_service *svc, valcache *cache)
{
	pkit_store *s = NULL;
	assert_int_equal(pkit_store_open(&s, svc, f->conninfo, 5000, cache), 0);
	assert_int_equal(pkit_store_ready(s), 0);
	return s;
}

void expect_counts(const pkit_store *s, uint64_t fast, uint64_t fell_back)
{
	uint64_t got_fast = 0, got_fell = 0;
	pkit_store_fast_counts(s, &got_fast, &got_fell);
	if (got_fast != fast || got_fell != fell_back)
		fail_msg("one-round-trip path: %" PRIu64 " committed and %" PRIu64
		         " fell back; want %" PRIu64 " and %" PRIu64,
		    got_fast, got_fell, fast, fell_back);
}

void expect_all(const char *what, const pkit_cmd *cmds, const want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s, command %zu", what, i);
		expect_out(
		    name, &cmds[i], w[i].code, w[i].reason, w[i].status, w[i].wrote, w[i].value);
	}
}

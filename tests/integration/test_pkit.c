/* The participant kit's own tests (services/kit/pkit.h, pkit_store.c, pkit_rpc.c)
 * on real PostgreSQL (with_stack.sh exports PG_PORT), with two toy services
 * described here and nowhere else:
 *   - toy: records toy_records(saga_id, status, key, n) and rows
 *     toy_rows(key, value); op 1 Take n units of a row (refused with a
 *     record when the row has too few or is missing), op 2 GiveBack (the
 *     compensation: a TAKEN record becomes RETURNED and gives the units
 *     back; with no record it leaves a TOMBSTONE and succeeds; a Take after
 *     a TOMBSTONE is ABORTED);
 *   - notes: records toy_notes(saga_id, status, who, what), no rows and no
 *     number column (the shape of shippingd, with one column fewer).
 * Each declares the summary of its retired records (<records>_retired) and
 * the created_at index that retention reads by (pkit.h, "Retention").
 * Every test reads back what the database holds (row values, records and
 * their count) besides the outcomes (code, reason, reply status, value).
 * The toys' decide functions are written from saga-semantics.md rules 2, 5
 * and 6, not copied from a service, so a test fails when the kit breaks a
 * rule, not only when the toy does. */
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
#include "retention.h"
#include "rpc.h"
#include "sagas/v1/shipping.pb-c.h"
#include "sagas/v1/stock.pb-c.h"
#include "status.h"
#include "valcache.h"
#include "valid.h"

/* ---- the toy service (rows) ---- */

enum { TOY_OP_TAKE = 1, TOY_OP_GIVEBACK = 2 };
enum { TOY_NONE, TOY_TAKEN, TOY_SHORT, TOY_NO_ROW, TOY_RETURNED, TOY_TOMBSTONE };
static const char *const toy_names[]
    = {"NONE", "TAKEN", "SHORT", "NO_ROW", "RETURNED", "TOMBSTONE"};

/* The kit serves the methods of the table (common/authz/methods.h): the
 * toy's Take and GiveBack are Stock's rows (whose messages it borrows), so
 * its fault points and metrics name them ReserveStock and ReleaseStock. */
#define TOY_TAKE_ID         METHOD_Stock_ReserveStock
#define TOY_GIVEBACK_ID     METHOD_Stock_ReleaseStock
#define TOY_TAKE_METHOD     METHOD_PATH(TOY_TAKE_ID)
#define TOY_GIVEBACK_METHOD METHOD_PATH(TOY_GIVEBACK_ID)

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

static const pkit_method toy_methods[] = {
    {TOY_TAKE_ID, TOY_OP_TAKE, "take units", "take", &sagas__v1__reserve_stock_request__descriptor,
        TOY_FIELDS, &sagas__v1__reserve_stock_reply__descriptor, "on_hand", NULL},
    {TOY_GIVEBACK_ID, TOY_OP_GIVEBACK, "give units back", "give back",
        &sagas__v1__release_stock_request__descriptor, TOY_FIELDS,
        &sagas__v1__release_stock_reply__descriptor, NULL, NULL},
};

static pkit_sql toy_sql;

static const pkit_service toy_service = {
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

enum { NOTE_OP = 1 };
enum { NOTE_NONE, NOTE_NOTED };
/* Note is Shipping's ShipOrder row (whose messages it borrows). */
#define NOTE_ID     METHOD_Shipping_ShipOrder
#define NOTE_METHOD METHOD_PATH(NOTE_ID)

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
static int notes_rows_seen;

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

static const pkit_service notes_service = {
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

typedef struct fixture {
	char conninfo[256];
	/* the same database for the lock-order test: a lock wait past 5 s
	 * fails its statement (lock_not_available, not retried by the kit),
	 * and PostgreSQL looks for deadlocks only after 60 s, so a deadlock
	 * is an error of pkit_store_apply instead of a retried lost race */
	char conninfo_no_deadlock[320];
	PGconn *admin; /* for seeding and reading the tables */
} fixture;

static void sql_ok(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

/* db_text runs `sql` (one parameter, may be NULL) and copies the first
 * column of its only row into out, or "" when it has no row. */
static void db_text(PGconn *c, const char *sql, const char *p1, char *out, size_t len)
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
static int64_t db_int(PGconn *c, const char *sql, const char *p1)
{
	char buf[64];
	db_text(c, sql, p1, buf, sizeof buf);
	return *buf ? strtoll(buf, NULL, 10) : -1;
}

/* row_value: the toy row's value, -1 when the row does not exist. */
static int64_t row_value(fixture *f, const char *key)
{
	return db_int(f->admin, "SELECT value FROM toy_rows WHERE key = $1", key);
}

/* the toy record of a saga id as "STATUS key n", "" when there is none */
static const char *record_of(fixture *f, const char *saga_id)
{
	static char buf[256];
	db_text(f->admin,
	    "SELECT status || ' ' || key || ' ' || n FROM toy_records WHERE saga_id = $1", saga_id,
	    buf, sizeof buf);
	return buf;
}

static int64_t record_count(fixture *f)
{
	return db_int(f->admin, "SELECT count(*) FROM toy_records", NULL);
}

/* toy_reset empties every toy table and seeds the rows "KEY=value ...". */
static void toy_reset(fixture *f, const char *rows)
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

static void set_row(fixture *f, const char *key, int64_t value)
{
	char v[32];
	snprintf(v, sizeof v, "%" PRId64, value);
	const char *p[] = {key, v};
	sql_ok(f->admin,
	    "INSERT INTO toy_rows (key, value) VALUES ($1, $2::bigint)"
	    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
	    2, p);
}

static int fixture_setup(void **state)
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

static int fixture_teardown(void **state)
{
	fixture *f = *state;
	PQfinish(f->admin);
	free(f);
	return 0;
}

/* every test leaves no fault armed, even when it failed midway */
static int fault_teardown(void **state)
{
	(void)state;
	if (fault_any())
		fault_clear();
	return 0;
}

/* ---- commands and outcomes ---- */

typedef char saga_id_t[VALID_UUID_LEN + 1];

/* make_id writes a canonical saga id for (test, i): distinct for distinct
 * pairs, and in an order unrelated to i (the kit locks records in key
 * order and must still decide in arrival order). */
static void make_id(saga_id_t out, unsigned test, unsigned i)
{
	uint32_t h = (test * 2654435761u) ^ (i * 2246822519u);
	h ^= h >> 15;
	h *= 2654435761u;
	h ^= h >> 13;
	snprintf(out, sizeof(saga_id_t), "%08x-%04x-4%03x-8%03x-%012x", h, test & 0xffffu,
	    i & 0xfffu, (h >> 20) & 0xfffu, i);
}

static pkit_cmd toy_cmd(const char *saga_id, int op, const char *key, int64_t n)
{
	return (pkit_cmd) {.saga_id = saga_id, .args = {.op = op, .text = {key}, .num = {n}}};
}

static pkit_cmd note_cmd(const char *saga_id, const char *who, const char *what)
{
	return (pkit_cmd) {.saga_id = saga_id, .args = {.op = NOTE_OP, .text = {who, what}}};
}

/* expect_out fails unless command `c` (named `what`) had this outcome:
 * code, reason, reply status, whether it wrote its record, and the row's
 * value after it. */
static void expect_out(const char *what, const pkit_cmd *c, int code, const char *reason,
    int reply_status, bool wrote, int64_t value)
{
	const pkit_outcome *o = &c->out;
	if (o->code != code || strcmp(o->reason, reason) != 0 || o->reply_status != reply_status
	    || o->write_record != wrote || c->value != value)
		fail_msg("%s: got code=%d reason=\"%s\" status=%d wrote=%d value=%" PRId64
		         "; want code=%d reason=\"%s\" status=%d wrote=%d value=%" PRId64,
		    what, o->code, o->reason, o->reply_status, o->write_record, c->value, code,
		    reason, reply_status, wrote, value);
}

static void apply_ok(pkit_store *s, pkit_cmd *cmds, size_t n)
{
	assert_int_equal(pkit_store_apply(s, cmds, n), 0);
}

static pkit_store *open_store(fixture *f, const pkit_service *svc, valcache *cache)
{
	pkit_store *s = NULL;
	assert_int_equal(pkit_store_open(&s, svc, f->conninfo, 5000, cache), 0);
	assert_int_equal(pkit_store_ready(s), 0);
	return s;
}

static void expect_counts(const pkit_store *s, uint64_t fast, uint64_t fell_back)
{
	uint64_t got_fast = 0, got_fell = 0;
	pkit_store_fast_counts(s, &got_fast, &got_fell);
	if (got_fast != fast || got_fell != fell_back)
		fail_msg("one-round-trip path: %" PRIu64 " committed and %" PRIu64
		         " fell back; want %" PRIu64 " and %" PRIu64,
		    got_fast, got_fell, fast, fell_back);
}

/* ---- 1. one record per saga id; duplicates answered from it ---- */

static void test_duplicates(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t a, b, c;
	make_id(a, 1, 1);
	make_id(b, 1, 2);
	make_id(c, 1, 3);
	pkit_store *s = open_store(f, &toy_service, NULL);

	pkit_cmd x = toy_cmd(a, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take a", &x, RPC_OK, "", TOY_TAKEN, true, 8);
	x = toy_cmd(a, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take a again", &x, RPC_OK, "", TOY_TAKEN, false, 8);
	assert_int_equal(row_value(f, "K"), 8); /* changed once */
	assert_string_equal(record_of(f, a), "TAKEN K 2");

	/* a refusal is recorded, and its duplicate refused from the record
	 * even when the row has since grown */
	x = toy_cmd(b, TOY_OP_TAKE, "K", 100);
	apply_ok(s, &x, 1);
	expect_out("take b", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 8);
	set_row(f, "K", 200);
	x = toy_cmd(b, TOY_OP_TAKE, "K", 100);
	apply_ok(s, &x, 1);
	expect_out("take b again", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT,
	    false, 200);
	assert_int_equal(row_value(f, "K"), 200);
	assert_string_equal(record_of(f, b), "SHORT K 100");

	/* the same for a missing row, which then appears */
	x = toy_cmd(c, TOY_OP_TAKE, "Z", 1);
	apply_ok(s, &x, 1);
	expect_out("take c", &x, RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, true, 0);
	set_row(f, "Z", 5);
	x = toy_cmd(c, TOY_OP_TAKE, "Z", 1);
	apply_ok(s, &x, 1);
	expect_out("take c again", &x, RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, false, 5);
	assert_int_equal(row_value(f, "Z"), 5);
	assert_string_equal(record_of(f, c), "NO_ROW Z 1");

	assert_int_equal(record_count(f), 3);
	pkit_store_close(s);
}

/* ---- 2. a compensation that comes first leaves a tombstone ---- */

static void test_tombstone(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t t, u, v;
	make_id(t, 2, 1);
	make_id(u, 2, 2);
	make_id(v, 2, 3);
	pkit_store *s = open_store(f, &toy_service, NULL);

	pkit_cmd x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("give back t first", &x, RPC_OK, "", TOY_TOMBSTONE, true, 10);
	assert_string_equal(record_of(f, t), "TOMBSTONE K 3");
	x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("take t late", &x, RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, 10);
	x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	apply_ok(s, &x, 1);
	expect_out("give back t again", &x, RPC_OK, "", TOY_TOMBSTONE, false, 10);
	assert_int_equal(row_value(f, "K"), 10);
	assert_string_equal(record_of(f, t), "TOMBSTONE K 3");

	/* the compensation proper gives back once */
	x = toy_cmd(u, TOY_OP_TAKE, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("take u", &x, RPC_OK, "", TOY_TAKEN, true, 6);
	x = toy_cmd(u, TOY_OP_GIVEBACK, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("give back u", &x, RPC_OK, "", TOY_RETURNED, true, 10);
	x = toy_cmd(u, TOY_OP_GIVEBACK, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("give back u again", &x, RPC_OK, "", TOY_RETURNED, false, 10);
	x = toy_cmd(u, TOY_OP_TAKE, "K", 4);
	apply_ok(s, &x, 1);
	expect_out("take u after its give back", &x, RPC_OK, "", TOY_TAKEN, false, 10);
	assert_int_equal(row_value(f, "K"), 10);
	assert_string_equal(record_of(f, u), "RETURNED K 4");

	/* a tombstone needs no row */
	x = toy_cmd(v, TOY_OP_GIVEBACK, "NOPE", 1);
	apply_ok(s, &x, 1);
	expect_out("give back v, no row", &x, RPC_OK, "", TOY_TOMBSTONE, true, 0);
	assert_string_equal(record_of(f, v), "TOMBSTONE NOPE 1");
	assert_int_equal(row_value(f, "NOPE"), -1);
	assert_int_equal(record_count(f), 3);
	pkit_store_close(s);
}

/* ---- 3. the same saga id with other arguments ---- */

/* Rule R5 on real PostgreSQL: a record keeps its saga's start (the
 * one-round-trip path's insert and the locking path's alike); a command of
 * another start with the same saga id is refused saga_id_reused, alone or
 * in a batch beside commands that apply, and changes nothing. */
static void test_saga_identity(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t t, u;
	make_id(t, 9, 1);
	make_id(u, 9, 2);
	pkit_store *s = open_store(f, &toy_service, NULL);
	const int64_t S1 = 1700000000000, S2 = 1700700000000;
	pkit_cmd x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	x.args.started = S1;
	apply_ok(s, &x, 1);
	expect_out("take t", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	assert_int_equal(
	    db_int(f->admin, "SELECT saga_started_ms FROM toy_records WHERE saga_id = $1", t), S1);
	/* another saga with t's id: its step and its compensation refused */
	pkit_cmd y[2] = {toy_cmd(t, TOY_OP_GIVEBACK, "K", 3), toy_cmd(u, TOY_OP_TAKE, "K", 2)};
	y[0].args.started = S2;
	y[1].args.started = S2;
	apply_ok(s, y, 2);
	expect_out("give back t as another saga", &y[0], RPC_FAILED_PRECONDITION,
	    REASON_SAGA_ID_REUSED, TOY_TAKEN, false, 7);
	expect_out("take u beside it", &y[1], RPC_OK, "", TOY_TAKEN, true, 5);
	x = toy_cmd(t, TOY_OP_TAKE, "K", 3);
	x.args.started = S2;
	apply_ok(s, &x, 1);
	expect_out("take t as another saga", &x, RPC_FAILED_PRECONDITION, REASON_SAGA_ID_REUSED,
	    TOY_TAKEN, false, 5);
	assert_string_equal(record_of(f, t), "TAKEN K 3");
	assert_int_equal(row_value(f, "K"), 5);
	/* its own saga's compensation still gives back */
	x = toy_cmd(t, TOY_OP_GIVEBACK, "K", 3);
	x.args.started = S1;
	apply_ok(s, &x, 1);
	expect_out("give back t", &x, RPC_OK, "", TOY_RETURNED, true, 8);
	assert_int_equal(
	    db_int(f->admin, "SELECT saga_started_ms FROM toy_records WHERE saga_id = $1", t), S1);
	pkit_store_close(s);
}

static void test_key_mismatch(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10 L=10");
	saga_id_t m;
	make_id(m, 3, 1);
	pkit_store *s = open_store(f, &toy_service, NULL);
	pkit_cmd x = toy_cmd(m, TOY_OP_TAKE, "K", 2);
	apply_ok(s, &x, 1);
	expect_out("take m", &x, RPC_OK, "", TOY_TAKEN, true, 8);
	char before[64], after[64];
	db_text(f->admin, "SELECT updated_at FROM toy_records WHERE saga_id = $1", m, before,
	    sizeof before);

	const struct {
		int op;
		const char *key;
		int64_t n, value;
	} other[] = {
	    {TOY_OP_TAKE, "K", 3, 8},
	    {TOY_OP_TAKE, "L", 2, 10},
	    {TOY_OP_GIVEBACK, "K", 5, 8},
	    {TOY_OP_GIVEBACK, "L", 2, 10},
	};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		x = toy_cmd(m, other[i].op, other[i].key, other[i].n);
		apply_ok(s, &x, 1);
		char what[64];
		snprintf(what, sizeof what, "other arguments %zu", i);
		expect_out(what, &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, TOY_TAKEN, false,
		    other[i].value);
	}
	assert_int_equal(row_value(f, "K"), 8);
	assert_int_equal(row_value(f, "L"), 10);
	assert_string_equal(record_of(f, m), "TAKEN K 2");
	db_text(f->admin, "SELECT updated_at FROM toy_records WHERE saga_id = $1", m, after,
	    sizeof after);
	assert_string_equal(before, after);
	assert_int_equal(record_count(f), 1);
	pkit_store_close(s);
}

/* ---- 4. batches: locked in key order, decided in arrival order ---- */

typedef struct want {
	int code;
	const char *reason;
	int status;
	bool wrote;
	int64_t value;
} want;

static void expect_all(const char *what, const pkit_cmd *cmds, const want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s, command %zu", what, i);
		expect_out(
		    name, &cmds[i], w[i].code, w[i].reason, w[i].status, w[i].wrote, w[i].value);
	}
}

static void test_batch_order(void **state)
{
	fixture *f = *state;
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 4, i);
	pkit_store *s = open_store(f, &toy_service, NULL);

	/* [a, b] on 5: a first; [b, a]: b first. One of the two orders is not
	 * the saga ids' order. */
	for (int rev = 0; rev < 2; rev++) {
		toy_reset(f, "X=5");
		const char *first = rev ? id[1] : id[0], *second = rev ? id[0] : id[1];
		pkit_cmd b[2]
		    = {toy_cmd(first, TOY_OP_TAKE, "X", 3), toy_cmd(second, TOY_OP_TAKE, "X", 3)};
		apply_ok(s, b, 2);
		const want w[] = {{RPC_OK, "", TOY_TAKEN, true, 2},
		    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 2}};
		expect_all(rev ? "[b, a]" : "[a, b]", b, w, 2);
		assert_int_equal(row_value(f, "X"), 2);
		assert_string_equal(record_of(f, first), "TAKEN X 3");
		assert_string_equal(record_of(f, second), "SHORT X 3");
	}

	/* mixed ops, saga ids repeated inside the batch, two rows and a
	 * missing one */
	const char *c = id[2], *d = id[3], *e = id[4], *g = id[5], *h = id[6];
	pkit_cmd mixed[] = {
	    toy_cmd(c, TOY_OP_TAKE, "X", 2),
	    toy_cmd(c, TOY_OP_GIVEBACK, "X", 2),
	    toy_cmd(c, TOY_OP_TAKE, "X", 2),
	    toy_cmd(d, TOY_OP_GIVEBACK, "X", 1),
	    toy_cmd(d, TOY_OP_TAKE, "X", 1),
	    toy_cmd(e, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(g, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(e, TOY_OP_GIVEBACK, "Y", 1),
	    toy_cmd(g, TOY_OP_TAKE, "Y", 1),
	    toy_cmd(h, TOY_OP_TAKE, "NOPE", 1),
	    toy_cmd(c, TOY_OP_TAKE, "X", 3),
	};
	const size_t n = sizeof mixed / sizeof mixed[0];
	const want w[] = {
	    {RPC_OK, "", TOY_TAKEN, true, 3},
	    {RPC_OK, "", TOY_RETURNED, true, 5},
	    {RPC_OK, "", TOY_TAKEN, false, 5},
	    {RPC_OK, "", TOY_TOMBSTONE, true, 5},
	    {RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, 5},
	    {RPC_OK, "", TOY_TAKEN, true, 0},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 0},
	    {RPC_OK, "", TOY_RETURNED, true, 1},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, false, 1},
	    {RPC_NOT_FOUND, REASON_UNKNOWN_SKU, TOY_NO_ROW, true, 0},
	    {RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, TOY_RETURNED, false, 5},
	};
	toy_reset(f, "X=5 Y=1");
	apply_ok(s, mixed, n);
	expect_all("mixed batch", mixed, w, n);
	const char *tables
	    = "SELECT string_agg(status || ' ' || key || ' ' || n, ',' ORDER BY saga_id)"
	      " || ';' || (SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM toy_rows)"
	      " FROM toy_records";
	char batch_tables[512], single_tables[512];
	db_text(f->admin, tables, NULL, batch_tables, sizeof batch_tables);
	assert_int_equal(row_value(f, "X"), 5);
	assert_int_equal(row_value(f, "Y"), 1);
	assert_string_equal(record_of(f, c), "RETURNED X 2");
	assert_string_equal(record_of(f, d), "TOMBSTONE X 1");
	assert_string_equal(record_of(f, e), "RETURNED Y 1");
	assert_string_equal(record_of(f, g), "SHORT Y 1");
	assert_string_equal(record_of(f, h), "NO_ROW NOPE 1");
	assert_int_equal(record_count(f), 5);

	/* as if each ran alone: the same commands one at a time */
	toy_reset(f, "X=5 Y=1");
	for (size_t i = 0; i < n; i++) {
		mixed[i].out = (pkit_outcome) {0};
		mixed[i].value = -1;
		apply_ok(s, &mixed[i], 1);
	}
	expect_all("the same alone", mixed, w, n);
	db_text(f->admin, tables, NULL, single_tables, sizeof single_tables);
	assert_string_equal(batch_tables, single_tables);

	/* a full batch on one row: the first 100 in arrival order take it */
	toy_reset(f, "W=100");
	static saga_id_t many_ids[RPC_BATCH_MAX];
	static pkit_cmd many[RPC_BATCH_MAX + 1];
	for (unsigned i = 0; i < RPC_BATCH_MAX; i++) {
		make_id(many_ids[i], 40, i);
		many[i] = toy_cmd(many_ids[i], TOY_OP_TAKE, "W", 1);
	}
	many[RPC_BATCH_MAX] = toy_cmd(id[7], TOY_OP_TAKE, "W", 1);
	assert_int_equal(pkit_store_apply(s, many, 0), -EINVAL);
	assert_int_equal(pkit_store_apply(s, many, RPC_BATCH_MAX + 1), -EINVAL);
	assert_int_equal(record_count(f), 0);
	apply_ok(s, many, RPC_BATCH_MAX);
	for (unsigned i = 0; i < RPC_BATCH_MAX; i++) {
		char name[32];
		snprintf(name, sizeof name, "full batch %u", i);
		if (i < 100)
			expect_out(
			    name, &many[i], RPC_OK, "", TOY_TAKEN, true, 100 - 1 - (int64_t)i);
		else
			expect_out(name, &many[i], RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK,
			    TOY_SHORT, true, 0);
	}
	assert_int_equal(row_value(f, "W"), 0);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'TAKEN'", NULL), 100);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'SHORT'", NULL), 28);
	pkit_store_close(s);
}

/* ---- 5. the one-round-trip path ---- */

static void test_fast_path(void **state)
{
	fixture *f = *state;
	toy_reset(f, "F=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 5, i);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pkit_store *s = open_store(f, &toy_service, cache);

	/* the cache knows nothing yet: the locking path, which teaches it */
	pkit_cmd x = toy_cmd(id[0], TOY_OP_TAKE, "F", 1);
	apply_ok(s, &x, 1);
	expect_out("take 0", &x, RPC_OK, "", TOY_TAKEN, true, 9);
	expect_counts(s, 0, 0);

	x = toy_cmd(id[1], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 1", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	expect_counts(s, 1, 0);
	assert_int_equal(row_value(f, "F"), 7);
	assert_string_equal(record_of(f, id[1]), "TAKEN F 2");

	/* a batch by the one-round-trip path, decided in arrival order */
	pkit_cmd b[2] = {toy_cmd(id[2], TOY_OP_TAKE, "F", 3), toy_cmd(id[3], TOY_OP_TAKE, "F", 5)};
	apply_ok(s, b, 2);
	const want w[] = {{RPC_OK, "", TOY_TAKEN, true, 4},
	    {RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, TOY_SHORT, true, 4}};
	expect_all("fast batch", b, w, 2);
	expect_counts(s, 2, 0);
	assert_int_equal(row_value(f, "F"), 4);
	assert_string_equal(record_of(f, id[3]), "SHORT F 5");

	/* the row changed behind the cache (4 -> 2): the cached guess would
	 * take 3, the truth refuses it */
	set_row(f, "F", 2);
	x = toy_cmd(id[4], TOY_OP_TAKE, "F", 3);
	apply_ok(s, &x, 1);
	expect_out("take 4, stale cache", &x, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK,
	    TOY_SHORT, true, 2);
	expect_counts(s, 2, 1);
	assert_int_equal(row_value(f, "F"), 2);
	assert_string_equal(record_of(f, id[4]), "SHORT F 3");

	/* the locking path taught the cache the true value */
	x = toy_cmd(id[5], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 5", &x, RPC_OK, "", TOY_TAKEN, true, 0);
	expect_counts(s, 3, 1);
	assert_int_equal(row_value(f, "F"), 0);

	/* a duplicate of a command the fast path committed: tried, falls
	 * back, answered from the record, the row unchanged */
	x = toy_cmd(id[1], TOY_OP_TAKE, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("take 1 again", &x, RPC_OK, "", TOY_TAKEN, false, 0);
	expect_counts(s, 3, 2);
	assert_int_equal(row_value(f, "F"), 0);

	/* not its op: the locking path, not counted */
	x = toy_cmd(id[1], TOY_OP_GIVEBACK, "F", 2);
	apply_ok(s, &x, 1);
	expect_out("give back 1", &x, RPC_OK, "", TOY_RETURNED, true, 2);
	expect_counts(s, 3, 2);
	assert_int_equal(row_value(f, "F"), 2);
	assert_int_equal(record_count(f), 6);

	/* without a cache, never */
	pkit_store_close(s);
	s = open_store(f, &toy_service, NULL);
	x = toy_cmd(id[6], TOY_OP_TAKE, "F", 1);
	apply_ok(s, &x, 1);
	expect_out("take 6, no cache", &x, RPC_OK, "", TOY_TAKEN, true, 1);
	expect_counts(s, 0, 0);
	assert_int_equal(row_value(f, "F"), 1);
	pkit_store_close(s);
	valcache_free(cache);
}

/* ---- 6. the fault point fail_before_commit ---- */

static void test_fault(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 6, i);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pkit_store *s = open_store(f, &toy_service, cache);
	pkit_cmd x = toy_cmd(id[0], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	x = toy_cmd(id[1], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	expect_counts(s, 1, 0); /* the one-round-trip path serves K */
	assert_int_equal(row_value(f, "K"), 8);

	/* armed, the op name is the method's last part: the fast path steps
	 * aside so that the fault point is met */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock"), 0);
	x = toy_cmd(id[2], TOY_OP_TAKE, "K", 1);
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	expect_counts(s, 1, 0);
	pkit_cmd b[2]
	    = {toy_cmd(id[3], TOY_OP_GIVEBACK, "K", 1), toy_cmd(id[4], TOY_OP_TAKE, "K", 1)};
	assert_int_equal(pkit_store_apply(s, b, 2), PG_ERR_INJECTED);
	assert_int_equal(row_value(f, "K"), 8);
	assert_string_equal(record_of(f, id[2]), "");
	assert_string_equal(record_of(f, id[3]), "");
	assert_string_equal(record_of(f, id[4]), "");
	assert_int_equal(record_count(f), 2);

	/* another op is not failed */
	x = toy_cmd(id[3], TOY_OP_GIVEBACK, "K", 1);
	apply_ok(s, &x, 1);
	expect_out("give back 3", &x, RPC_OK, "", TOY_TOMBSTONE, true, 8);
	assert_string_equal(record_of(f, id[3]), "TOMBSTONE K 1");

	/* cleared, the same command commits */
	fault_clear();
	x = toy_cmd(id[2], TOY_OP_TAKE, "K", 1);
	apply_ok(s, &x, 1);
	expect_out("take 2 after the fault", &x, RPC_OK, "", TOY_TAKEN, true, 7);
	assert_int_equal(row_value(f, "K"), 7);

	/* count=1: one failure, then the same command commits */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock:count=1"), 0);
	x = toy_cmd(id[5], TOY_OP_TAKE, "K", 1);
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	assert_string_equal(record_of(f, id[5]), "");
	apply_ok(s, &x, 1);
	expect_out("take 5", &x, RPC_OK, "", TOY_TAKEN, true, 6);
	fault_clear();
	assert_int_equal(row_value(f, "K"), 6);
	assert_int_equal(record_count(f), 5);
	pkit_store_close(s);
	valcache_free(cache);
}

/* ---- 7. lost races ---- */

#define RACE_SAME 200 /* rounds where both threads take */
#define RACE_MIXED                                                                                 \
	100 /* rounds where one takes and the other gives back,                                    \
	       each thread in turn */
#define RACE_ROUNDS (RACE_SAME + RACE_MIXED)
#define RACE_START  10000

typedef struct racer {
	const char *conninfo;
	valcache *cache; /* its own: two daemons */
	pthread_barrier_t *bar;
	int who;
	saga_id_t *ids;
	pkit_cmd out[RACE_ROUNDS];
	int rc[RACE_ROUNDS];
	int open_rc;
	uint64_t fast, fell_back;
} racer;

static void *race_main(void *arg)
{
	racer *r = arg;
	pkit_store *s = NULL;
	r->open_rc = pkit_store_open(&s, &toy_service, r->conninfo, 5000, r->cache);
	for (size_t i = 0; i < RACE_ROUNDS; i++) {
		int op = i < RACE_SAME || r->who != (int)(i & 1) ? TOY_OP_TAKE : TOY_OP_GIVEBACK;
		r->out[i] = toy_cmd(r->ids[i], op, "R", 1);
		pthread_barrier_wait(r->bar);
		r->rc[i] = s != NULL ? pkit_store_apply(s, &r->out[i], 1) : -1;
	}
	if (s != NULL)
		pkit_store_fast_counts(s, &r->fast, &r->fell_back);
	pkit_store_close(s);
	return NULL;
}

static void test_lost_races(void **state)
{
	fixture *f = *state;
	char start[32];
	snprintf(start, sizeof start, "R=%d", RACE_START);
	toy_reset(f, start);
	static saga_id_t ids[RACE_ROUNDS];
	for (unsigned i = 0; i < RACE_ROUNDS; i++)
		make_id(ids[i], 7, i);
	pthread_barrier_t bar;
	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	static racer r[2];
	pthread_t t[2];
	for (int k = 0; k < 2; k++) {
		memset(&r[k], 0, sizeof r[k]);
		r[k] = (racer) {.conninfo = f->conninfo, .bar = &bar, .who = k, .ids = ids};
		assert_int_equal(valcache_new(&r[k].cache, 100), 0);
		assert_int_equal(pthread_create(&t[k], NULL, race_main, &r[k]), 0);
	}
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(r[k].open_rc, 0);
	}
	pthread_barrier_destroy(&bar);
	int tombstones = 0;
	for (size_t i = 0; i < RACE_ROUNDS; i++) {
		const pkit_cmd *x = &r[0].out[i], *y = &r[1].out[i];
		if (i >= RACE_SAME && (i & 1) == 0) { /* x the take, y its compensation */
			x = &r[1].out[i];
			y = &r[0].out[i];
		}
		if (r[0].rc[i] != 0 || r[1].rc[i] != 0)
			fail_msg("round %zu: rc %d and %d", i, r[0].rc[i], r[1].rc[i]);
		char what[64];
		if (i < RACE_SAME) {
			/* one wrote, the other was answered from its record */
			int64_t v = RACE_START - 1 - (int64_t)i;
			snprintf(what, sizeof what, "round %zu, thread 0", i);
			expect_out(what, x, RPC_OK, "", TOY_TAKEN, x->out.write_record, v);
			snprintf(what, sizeof what, "round %zu, thread 1", i);
			expect_out(what, y, RPC_OK, "", TOY_TAKEN, y->out.write_record, v);
			if (x->out.write_record == y->out.write_record)
				fail_msg("round %zu: %s wrote the record", i,
				    x->out.write_record ? "both" : "neither");
			assert_string_equal(record_of(f, ids[i]), "TAKEN R 1");
			continue;
		}
		/* a take against its compensation: either order, never both */
		int64_t v = RACE_START - RACE_SAME;
		snprintf(what, sizeof what, "round %zu", i);
		if (y->out.reply_status == TOY_TOMBSTONE) {
			tombstones++;
			expect_out(what, y, RPC_OK, "", TOY_TOMBSTONE, true, v);
			expect_out(what, x, RPC_ABORTED, REASON_TOMBSTONE, TOY_TOMBSTONE, false, v);
			assert_string_equal(record_of(f, ids[i]), "TOMBSTONE R 1");
		} else {
			expect_out(what, x, RPC_OK, "", TOY_TAKEN, true, v - 1);
			expect_out(what, y, RPC_OK, "", TOY_RETURNED, true, v);
			assert_string_equal(record_of(f, ids[i]), "RETURNED R 1");
		}
	}
	assert_int_equal(row_value(f, "R"), RACE_START - RACE_SAME);
	assert_int_equal(record_count(f), RACE_ROUNDS);
	print_message("lost races: %d of %d compensations came first (tombstones); one-round-trip "
	              "path %" PRIu64 "+%" PRIu64 " committed, %" PRIu64 "+%" PRIu64 " fell back\n",
	    tombstones, RACE_MIXED, r[0].fast, r[1].fast, r[0].fell_back, r[1].fell_back);
	for (int k = 0; k < 2; k++)
		valcache_free(r[k].cache);
}

/* ---- 8. lock order ---- */

#define ORDER_ROUNDS 300
#define ORDER_KEYS   4
#define ORDER_START  1000
static const char *const order_keys[ORDER_KEYS] = {"K0", "K1", "K2", "K3"};

typedef struct orderer {
	const char *conninfo;
	valcache *cache; /* shared: two workers of one daemon */
	pthread_barrier_t *bar;
	int who;
	saga_id_t (*ids)[ORDER_KEYS];
	int rc; /* the first error */
	size_t bad_round;
	int open_rc;
	uint64_t fast, fell_back;
} orderer;

static void *order_main(void *arg)
{
	orderer *o = arg;
	pkit_store *s = NULL;
	o->open_rc = pkit_store_open(&s, &toy_service, o->conninfo, 5000, o->cache);
	for (size_t r = 0; r < ORDER_ROUNDS; r++) {
		/* the same commands, thread 1 in the reverse order of thread 0:
		 * a step of each key, then their compensations */
		pkit_cmd take[ORDER_KEYS], back[ORDER_KEYS];
		for (int k = 0; k < ORDER_KEYS; k++) {
			int j = o->who == 0 ? k : ORDER_KEYS - 1 - k;
			take[k] = toy_cmd(o->ids[r][j], TOY_OP_TAKE, order_keys[j], 1 + j);
			back[k] = toy_cmd(o->ids[r][j], TOY_OP_GIVEBACK, order_keys[j], 1 + j);
		}
		pthread_barrier_wait(o->bar);
		int rc = s != NULL ? pkit_store_apply(s, take, ORDER_KEYS) : -1;
		if (rc == 0)
			rc = pkit_store_apply(s, back, ORDER_KEYS);
		if (rc != 0 && o->rc == 0) {
			o->rc = rc;
			o->bad_round = r;
		}
	}
	if (s != NULL)
		pkit_store_fast_counts(s, &o->fast, &o->fell_back);
	pkit_store_close(s);
	return NULL;
}

static void test_lock_order(void **state)
{
	fixture *f = *state;
	char start[128];
	snprintf(start, sizeof start, "K0=%d K1=%d K2=%d K3=%d", ORDER_START, ORDER_START,
	    ORDER_START, ORDER_START);
	toy_reset(f, start);
	static saga_id_t ids[ORDER_ROUNDS][ORDER_KEYS];
	for (unsigned r = 0; r < ORDER_ROUNDS; r++)
		for (unsigned k = 0; k < ORDER_KEYS; k++)
			make_id(ids[r][k], 8, r * ORDER_KEYS + k);
	valcache *cache = NULL;
	assert_int_equal(valcache_new(&cache, 100), 0);
	pthread_barrier_t bar;
	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	orderer o[2];
	pthread_t t[2];
	for (int k = 0; k < 2; k++) {
		o[k] = (orderer) {.conninfo = f->conninfo_no_deadlock,
		    .cache = cache,
		    .bar = &bar,
		    .who = k,
		    .ids = ids};
		assert_int_equal(pthread_create(&t[k], NULL, order_main, &o[k]), 0);
	}
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	pthread_barrier_destroy(&bar);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(o[k].open_rc, 0);
		if (o[k].rc != 0)
			fail_msg("thread %d, round %zu: %s (%d)", k, o[k].bad_round,
			    pg_err_name(o[k].rc), o[k].rc);
	}
	/* each saga's take came before its compensations: all given back */
	for (int k = 0; k < ORDER_KEYS; k++)
		assert_int_equal(row_value(f, order_keys[k]), ORDER_START);
	assert_int_equal(record_count(f), ORDER_ROUNDS * ORDER_KEYS);
	assert_int_equal(
	    db_int(f->admin, "SELECT count(*) FROM toy_records WHERE status = 'RETURNED'", NULL),
	    ORDER_ROUNDS * ORDER_KEYS);
	print_message("lock order: %d rounds; one-round-trip path %" PRIu64 "+%" PRIu64
	              " committed, %" PRIu64 "+%" PRIu64 " fell back\n",
	    ORDER_ROUNDS, o[0].fast, o[1].fast, o[0].fell_back, o[1].fell_back);
	valcache_free(cache);
}

/* ---- 9. replies only after commit, through the RPC side ---- */

typedef struct call {
	uint8_t payload[256];
	rpc_request req;
} call;

/* make_call packs a toy request (ReserveStockRequest for Take, the same
 * fields as ReleaseStockRequest for GiveBack) into c. */
static void make_call(call *c, const char *method, const char *saga_id, const char *key, int32_t n)
{
	size_t len;
	if (strcmp(method, TOY_GIVEBACK_METHOD) == 0) {
		Sagas__V1__ReleaseStockRequest q = SAGAS__V1__RELEASE_STOCK_REQUEST__INIT;
		q.saga_id = (char *)saga_id;
		q.sku = (char *)key;
		q.qty = n;
		assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof c->payload);
		len = protobuf_c_message_pack(&q.base, c->payload);
	} else {
		Sagas__V1__ReserveStockRequest q = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		q.saga_id = (char *)saga_id;
		q.sku = (char *)key;
		q.qty = n;
		assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof c->payload);
		len = protobuf_c_message_pack(&q.base, c->payload);
	}
	c->req = (rpc_request) {.method = method,
	    .request_id = "test",
	    .payload = c->payload,
	    .payload_len = len,
	    .roles = ~0u};
}

/* expect_reply fails unless `r` is code/reason and, when OK, a reply of
 * `method` with this status (and on_hand for Take); frees its payload. */
static void expect_reply(const char *what, rpc_reply *r, const char *method, int code,
    const char *reason, int status, int64_t on_hand)
{
	if (r->code != code || strcmp(r->reason, reason) != 0)
		fail_msg("%s: got code=%d reason=\"%s\" (%s); want code=%d reason=\"%s\"", what,
		    r->code, r->reason, r->message, code, reason);
	if (code != RPC_OK) {
		assert_null(r->payload);
		return;
	}
	int got_status;
	int64_t got_on_hand = on_hand;
	if (strcmp(method, TOY_GIVEBACK_METHOD) == 0) {
		Sagas__V1__ReleaseStockReply *m
		    = sagas__v1__release_stock_reply__unpack(NULL, r->payload_len, r->payload);
		assert_non_null(m);
		got_status = (int)m->status;
		sagas__v1__release_stock_reply__free_unpacked(m, NULL);
	} else {
		Sagas__V1__ReserveStockReply *m
		    = sagas__v1__reserve_stock_reply__unpack(NULL, r->payload_len, r->payload);
		assert_non_null(m);
		got_status = (int)m->status;
		got_on_hand = m->on_hand;
		sagas__v1__reserve_stock_reply__free_unpacked(m, NULL);
	}
	if (got_status != status || got_on_hand != on_hand)
		fail_msg("%s: got status=%d on_hand=%" PRId64 "; want status=%d on_hand=%" PRId64,
		    what, got_status, got_on_hand, status, on_hand);
	free(r->payload);
	r->payload = NULL;
}

static void test_reply_after_commit(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 9, i);
	participant_app app = {
	    .conninfo = f->conninfo, .connect_wait_ms = 5000, .cache = NULL, .kit = &toy_service};
	void *worker = NULL;
	assert_int_equal(pkit_worker_init(&app, &worker), 0);

	/* OK: committed when the handler returns, seen from another
	 * connection */
	call c;
	rpc_reply r = {0};
	make_call(&c, TOY_TAKE_METHOD, id[0], "K", 3);
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("take 0", &r, TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 7);
	assert_int_equal(row_value(f, "K"), 7);
	assert_string_equal(record_of(f, id[0]), "TAKEN K 3");

	/* armed: UNAVAILABLE and nothing to see; GiveBack is another op */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock"), 0);
	make_call(&c, TOY_TAKE_METHOD, id[1], "K", 3);
	r = (rpc_reply) {0};
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("take 1, fault", &r, TOY_TAKE_METHOD, RPC_UNAVAILABLE, "fault_injected", 0, 0);
	assert_int_equal(row_value(f, "K"), 7);
	assert_string_equal(record_of(f, id[1]), "");
	make_call(&c, TOY_GIVEBACK_METHOD, id[2], "K", 1);
	r = (rpc_reply) {0};
	pkit_handle(&app, worker, &c.req, &r);
	expect_reply("give back 2, fault on ReserveStock", &r, TOY_GIVEBACK_METHOD, RPC_OK, "",
	    TOY_TOMBSTONE, 0);
	assert_string_equal(record_of(f, id[2]), "TOMBSTONE K 1");

	/* a batch under the fault: every call UNAVAILABLE, nothing written */
	call cs[8];
	rpc_request reqs[8];
	rpc_reply rs[8];
	make_call(&cs[0], TOY_TAKE_METHOD, id[3], "K", 1);
	make_call(&cs[1], TOY_TAKE_METHOD, id[4], "K", 1);
	for (int i = 0; i < 2; i++)
		reqs[i] = cs[i].req;
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 2);
	for (int i = 0; i < 2; i++)
		expect_reply("batch under the fault", &rs[i], TOY_TAKE_METHOD, RPC_UNAVAILABLE,
		    "fault_injected", 0, 0);
	assert_string_equal(record_of(f, id[3]), "");
	assert_string_equal(record_of(f, id[4]), "");
	assert_int_equal(row_value(f, "K"), 7);
	fault_clear();

	/* one failure: the batch fails, then each call alone commits */
	assert_int_equal(fault_parse("fail_before_commit:ReserveStock:count=1"), 0);
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 2);
	fault_clear();
	expect_reply("batch, count=1, 3", &rs[0], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 6);
	expect_reply("batch, count=1, 4", &rs[1], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 5);
	assert_int_equal(row_value(f, "K"), 5);
	assert_string_equal(record_of(f, id[3]), "TAKEN K 1");
	assert_string_equal(record_of(f, id[4]), "TAKEN K 1");

	/* a mixed batch: saga commands in arrival order in one transaction,
	 * bad calls answered alone */
	make_call(&cs[0], TOY_TAKE_METHOD, id[5], "K", 2);
	make_call(&cs[1], TOY_GIVEBACK_METHOD, id[5], "K", 2);
	make_call(&cs[2], TOY_TAKE_METHOD, id[6], "K", 1);
	cs[2].req.payload_len = 2;
	memcpy(cs[2].payload, "\xff\xff", 2);
	make_call(&cs[3], TOY_TAKE_METHOD, "not-a-uuid", "K", 1);
	make_call(&cs[4], "/toy.v1.Toy/Nope", id[6], "K", 1);
	make_call(&cs[5], TOY_TAKE_METHOD, id[0], "K", 3);
	make_call(&cs[6], TOY_TAKE_METHOD, id[7], "K", 6);
	for (int i = 0; i < 7; i++)
		reqs[i] = cs[i].req;
	memset(rs, 0, sizeof rs);
	pkit_handle_batch(&app, worker, reqs, rs, 7);
	expect_reply("mixed 0", &rs[0], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 3);
	expect_reply("mixed 1", &rs[1], TOY_GIVEBACK_METHOD, RPC_OK, "", TOY_RETURNED, 0);
	expect_reply(
	    "mixed 2", &rs[2], TOY_TAKE_METHOD, RPC_INVALID_ARGUMENT, "malformed_payload", 0, 0);
	expect_reply("mixed 3", &rs[3], TOY_TAKE_METHOD, RPC_INVALID_ARGUMENT, "bad_field", 0, 0);
	expect_reply("mixed 4", &rs[4], TOY_TAKE_METHOD, RPC_UNIMPLEMENTED, "unknown_method", 0, 0);
	expect_reply("mixed 5", &rs[5], TOY_TAKE_METHOD, RPC_OK, "", TOY_TAKEN, 5);
	expect_reply(
	    "mixed 6", &rs[6], TOY_TAKE_METHOD, RPC_FAILED_PRECONDITION, REASON_OUT_OF_STOCK, 0, 0);
	assert_int_equal(row_value(f, "K"), 5);
	assert_string_equal(record_of(f, id[5]), "RETURNED K 2");
	assert_string_equal(record_of(f, id[6]), "");
	assert_string_equal(record_of(f, id[7]), "SHORT K 6");
	assert_int_equal(record_count(f), 6);
	pkit_worker_fini(&app, worker);
}

/* ---- 10. a service without rows ---- */

static void test_no_rows(void **state)
{
	fixture *f = *state;
	toy_reset(f, "");
	notes_rows_seen = 0;
	saga_id_t id[8];
	for (unsigned i = 0; i < 8; i++)
		make_id(id[i], 10, i);
	pkit_store *s = open_store(f, &notes_service, NULL);
	const char *note_of = "SELECT status || ' ' || who || ' ' || what FROM toy_notes"
	                      " WHERE saga_id = $1";
	char got[256];

	/* new saga ids need no cache: the one-round-trip path */
	pkit_cmd x = note_cmd(id[0], "ann", "box");
	apply_ok(s, &x, 1);
	expect_out("note 0", &x, RPC_OK, "", NOTE_NOTED, true, 0);
	expect_counts(s, 1, 0);
	x = note_cmd(id[0], "ann", "box");
	apply_ok(s, &x, 1);
	expect_out("note 0 again", &x, RPC_OK, "", NOTE_NOTED, false, 0);
	expect_counts(s, 1, 1);
	x = note_cmd(id[0], "ann", "bag");
	apply_ok(s, &x, 1);
	expect_out("note 0, other what", &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED,
	    false, 0);
	x = note_cmd(id[0], "bob", "box");
	apply_ok(s, &x, 1);
	expect_out(
	    "note 0, other who", &x, RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED, false, 0);
	db_text(f->admin, note_of, id[0], got, sizeof got);
	assert_string_equal(got, "NOTED ann box");

	pkit_cmd b[3] = {note_cmd(id[1], "a", "b"), note_cmd(id[2], "c", "d")};
	apply_ok(s, b, 2);
	expect_out("batch 1", &b[0], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_out("batch 2", &b[1], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_counts(s, 2, 3); /* the two refused above tried it too */
	b[0] = note_cmd(id[3], "a", "b");
	b[1] = note_cmd(id[3], "a", "b");
	b[2] = note_cmd(id[3], "a", "c");
	apply_ok(s, b, 3); /* a repeated saga id: the locking path */
	expect_out("repeated 0", &b[0], RPC_OK, "", NOTE_NOTED, true, 0);
	expect_out("repeated 1", &b[1], RPC_OK, "", NOTE_NOTED, false, 0);
	expect_out(
	    "repeated 2", &b[2], RPC_ALREADY_EXISTS, REASON_KEY_MISMATCH, NOTE_NOTED, false, 0);
	expect_counts(s, 2, 3);
	db_text(f->admin, note_of, id[3], got, sizeof got);
	assert_string_equal(got, "NOTED a b");

	/* the fault point is met here too (the fast path steps aside) */
	assert_int_equal(fault_parse("fail_before_commit:ShipOrder"), 0);
	x = note_cmd(id[4], "x", "y");
	assert_int_equal(pkit_store_apply(s, &x, 1), PG_ERR_INJECTED);
	fault_clear();
	db_text(f->admin, note_of, id[4], got, sizeof got);
	assert_string_equal(got, "");
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_notes", NULL), 4);
	pkit_store_close(s);

	/* through the RPC side: created once */
	participant_app app
	    = {.conninfo = f->conninfo, .connect_wait_ms = 5000, .kit = &notes_service};
	void *worker = NULL;
	assert_int_equal(pkit_worker_init(&app, &worker), 0);
	Sagas__V1__ShipOrderRequest q = SAGAS__V1__SHIP_ORDER_REQUEST__INIT;
	q.saga_id = id[5];
	q.customer = (char *)"cy";
	q.sku = (char *)"pen";
	q.qty = 1;
	uint8_t buf[256];
	assert_true(protobuf_c_message_get_packed_size(&q.base) <= sizeof buf);
	rpc_request req = {.method = NOTE_METHOD,
	    .request_id = "test",
	    .payload = buf,
	    .payload_len = protobuf_c_message_pack(&q.base, buf),
	    .roles = ~0u};
	for (int k = 0; k < 2; k++) {
		rpc_reply r = {0};
		pkit_handle(&app, worker, &req, &r);
		assert_int_equal(r.code, RPC_OK);
		Sagas__V1__ShipOrderReply *m
		    = sagas__v1__ship_order_reply__unpack(NULL, r.payload_len, r.payload);
		assert_non_null(m);
		assert_int_equal(m->status, NOTE_NOTED);
		assert_int_equal(m->created, k == 0);
		sagas__v1__ship_order_reply__free_unpacked(m, NULL);
		free(r.payload);
	}
	pkit_worker_fini(&app, worker);
	db_text(f->admin, note_of, id[5], got, sizeof got);
	assert_string_equal(got, "NOTED cy pen");
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_notes", NULL), 5);
	assert_int_equal(notes_rows_seen, 0);
}

/* ---- 12. retention: expired records deleted and folded, exactly ---- */

/* db_now_ms: the database's clock, ms since the epoch */
static int64_t db_now_ms(fixture *f)
{
	return db_int(
	    f->admin, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint", NULL);
}

/* put_record inserts a toy record created at `at_ms` (ms since the epoch) */
static void put_record(
    fixture *f, const char *id, const char *status, const char *key, int64_t n, int64_t at_ms)
{
	char nb[32], at[32];
	snprintf(nb, sizeof nb, "%" PRId64, n);
	snprintf(at, sizeof at, "%" PRId64, at_ms);
	const char *p[] = {id, status, key, nb, at};
	sql_ok(f->admin,
	    "INSERT INTO toy_records (saga_id, status, key, n, created_at)"
	    " VALUES ($1, $2, $3, $4::bigint, to_timestamp($5::bigint / 1000.0))",
	    5, p);
}

/* summary_of: a summary table as "key status records total" entries in
 * (key, status) order, joined by ", "; "" when empty */
static const char *summary_of(fixture *f, const char *table)
{
	static char buf[4096];
	char sql[256];
	snprintf(sql, sizeof sql,
	    "SELECT coalesce(string_agg(key || ' ' || status || ' ' || records || ' ' || total,"
	    " ', ' ORDER BY key, status), '') FROM %s",
	    table);
	db_text(f->admin, sql, NULL, buf, sizeof buf);
	return buf;
}

static PGconn *connect_or_fail(fixture *f)
{
	PGconn *c = PQconnectdb(f->conninfo);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", f->conninfo, PQerrorMessage(c));
	return c;
}

/* batch_deletes runs one batch and fails unless it deleted `expect` */
static void batch_deletes(const char *what, pkit_retention *arg, PGconn *c, int64_t now_ms,
    int limit, bool dry, int64_t expect)
{
	retention_counts n = {{-1, -1}};
	int rc = pkit_retention_batch(arg, c, now_ms, limit, dry, &n);
	if (rc != 0 || n.n[0] != expect || n.n[1] != 0)
		fail_msg("%s: rc %d, %" PRId64 " and %" PRId64 "; want rc 0, %" PRId64 " and 0",
		    what, rc, n.n[0], n.n[1], expect);
}

/* A record of every status, older than the cutoff (now - retention - 2 x
 * skew) or not, down to the millisecond: a dry run counts exactly the
 * expired ones; batches delete exactly them, oldest first, and fold them
 * into toy_records_retired by (key, status), adding to what an earlier
 * pass left; the newer ones and the rows stay; a second pass deletes 0. A
 * record that a transaction holds is skipped, and taken by the next pass. */
static void test_retention(void **state)
{
	fixture *f = *state;
	toy_reset(f, "K=10");
	const horizon_policy hp = {.retention_ms = 3600000, .skew_ms = 60000};
	pkit_retention arg = {.svc = &toy_service, .horizon = &hp};
	const int64_t now = db_now_ms(f);
	const int64_t cut = horizon_record_cutoff_ms(&hp, now);
	assert_int_equal(cut, now - 3600000 - 2 * 60000);
	static const struct {
		const char *status, *key;
		int64_t n;
		int64_t at;       /* from the cutoff, ms; INT64_MAX: now */
		const char *kept; /* its record after the passes, or NULL */
	} recs[] = {
	    {"TAKEN", "A", 4, -86400000, NULL}, /* the oldest */
	    {"NO_ROW", "C", 1, -5000, NULL},
	    {"SHORT", "B", 9, -4000, NULL},
	    {"TAKEN", "B", 7, -3000, NULL},
	    {"TOMBSTONE", "A", 5, -2000, NULL},
	    {"RETURNED", "A", 2, -1000, NULL},
	    {"TAKEN", "A", 3, -1, NULL},       /* 1 ms before the cutoff */
	    {"TAKEN", "A", 6, 0, "TAKEN A 6"}, /* at the cutoff: kept */
	    {"TAKEN", "B", 8, 1, "TAKEN B 8"}, /* 1 ms after it */
	    {"NO_ROW", "C", 3, 3000000, "NO_ROW C 3"},
	    {"TOMBSTONE", "A", 2, INT64_MAX, "TOMBSTONE A 2"},
	};
	enum { N_RECS = sizeof recs / sizeof recs[0] };
	saga_id_t id[N_RECS];
	for (unsigned i = 0; i < N_RECS; i++) {
		make_id(id[i], 12, i);
		put_record(f, id[i], recs[i].status, recs[i].key, recs[i].n,
		    recs[i].at == INT64_MAX ? now : cut + recs[i].at);
	}
	/* an earlier pass's summary, which this one adds to */
	sql_ok(f->admin, "INSERT INTO toy_records_retired VALUES ('A', 'TAKEN', 10, 100)", 0, NULL);
	PGconn *c = connect_or_fail(f);

	/* the dry run counts, and deletes nothing */
	batch_deletes("dry run", &arg, c, now, 0, true, 7);
	assert_int_equal(record_count(f), N_RECS);
	assert_string_equal(summary_of(f, "toy_records_retired"), "A TAKEN 10 100");

	/* batches of 3, the oldest first */
	batch_deletes("batch 1", &arg, c, now, 3, false, 3);
	for (unsigned i = 0; i < N_RECS; i++)
		if ((*record_of(f, id[i]) == '\0') != (i < 3))
			fail_msg("after batch 1, record %u (%s %s): \"%s\"", i, recs[i].status,
			    recs[i].key, record_of(f, id[i]));
	assert_string_equal(
	    summary_of(f, "toy_records_retired"), "A TAKEN 11 104, B SHORT 1 9, C NO_ROW 1 1");
	batch_deletes("batch 2", &arg, c, now, 3, false, 3);
	batch_deletes("batch 3", &arg, c, now, 3, false, 1);
	batch_deletes("batch 4", &arg, c, now, 3, false, 0);
	assert_string_equal(summary_of(f, "toy_records_retired"),
	    "A RETURNED 1 2, A TAKEN 12 107, A TOMBSTONE 1 5, B SHORT 1 9, B TAKEN 1 7, C NO_ROW 1 "
	    "1");
	assert_int_equal(record_count(f), 4);
	for (unsigned i = 0; i < N_RECS; i++)
		assert_string_equal(record_of(f, id[i]), recs[i].kept ? recs[i].kept : "");
	assert_int_equal(row_value(f, "K"), 10);
	batch_deletes("second dry run", &arg, c, now, 0, true, 0);
	batch_deletes("second pass", &arg, c, now, 1000, false, 0);
	assert_int_equal(record_count(f), 4);

	/* 10 s later the two at and after the old cutoff expire; one is held
	 * by another transaction (a command being answered): skipped, not
	 * waited for, and taken by the next pass once it ends */
	PGconn *holder = connect_or_fail(f);
	sql_ok(holder, "BEGIN", 0, NULL);
	const char *held[] = {id[7]};
	sql_ok(holder, "SELECT 1 FROM toy_records WHERE saga_id = $1 FOR UPDATE", 1, held);
	batch_deletes("dry run, later", &arg, c, now + 10000, 0, true, 2);
	batch_deletes("a pass with one held", &arg, c, now + 10000, 1000, false, 1);
	assert_string_equal(record_of(f, id[7]), "TAKEN A 6");
	assert_string_equal(record_of(f, id[8]), "");
	sql_ok(holder, "COMMIT", 0, NULL);
	PQfinish(holder);
	batch_deletes("the next pass", &arg, c, now + 10000, 1000, false, 1);
	assert_string_equal(summary_of(f, "toy_records_retired"),
	    "A RETURNED 1 2, A TAKEN 13 113, A TOMBSTONE 1 5, B SHORT 1 9, B TAKEN 2 15, C NO_ROW "
	    "1 1");
	assert_int_equal(record_count(f), 2);

	/* without a horizon nothing expires; a batch of nothing is a bug */
	const horizon_policy none = {.retention_ms = 0, .skew_ms = 0};
	pkit_retention no_arg = {.svc = &toy_service, .horizon = &none};
	batch_deletes("no horizon", &no_arg, c, now + 86400000LL * 365, 1000, false, 0);
	assert_int_equal(record_count(f), 2);
	retention_counts n = {{0, 0}};
	assert_int_equal(pkit_retention_batch(&arg, c, now, 0, false, &n), -EINVAL);

	/* the loop's pass (retention_run_pass, by the database's clock) on
	 * the notes: the key is the first text column (who), and the total 0
	 * (no number column) */
	const horizon_policy day = {.retention_ms = 86400000, .skew_ms = 300000};
	pkit_retention notes_arg = {.svc = &notes_service, .horizon = &day};
	sql_ok(f->admin,
	    "INSERT INTO toy_notes (saga_id, status, who, what, created_at) VALUES"
	    " ('00000000-0000-4000-8000-000000000001', 'NOTED', 'ann', 'box', now() - interval '2 "
	    "days'),"
	    " ('00000000-0000-4000-8000-000000000002', 'NOTED', 'ann', 'bag', now() - interval '25 "
	    "hours'),"
	    " ('00000000-0000-4000-8000-000000000003', 'NOTED', 'bob', 'box', now() - interval '3 "
	    "days'),"
	    " ('00000000-0000-4000-8000-000000000004', 'NOTED', 'bob', 'pen', now() - interval '23 "
	    "hours')",
	    0, NULL);
	retention_config cfg = {.conninfo = f->conninfo,
	    .what = "the retention of the notes",
	    .elect_key = ELECT_KEY_RETENTION,
	    .interval_ms = 1000,
	    .tables = {"toy_notes", NULL},
	    .batch = pkit_retention_batch,
	    .arg = &notes_arg};
	retention_counts total = {{0, 0}};
	assert_int_equal(retention_run_pass(&cfg, c, true, &total), 0);
	assert_int_equal(total.n[0], 3);
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_notes", NULL), 4);
	total = (retention_counts) {{0, 0}};
	assert_int_equal(retention_run_pass(&cfg, c, false, &total), 0);
	assert_int_equal(total.n[0], 3);
	assert_int_equal(total.n[1], 0);
	assert_string_equal(summary_of(f, "toy_notes_retired"), "ann NOTED 2 0, bob NOTED 1 0");
	char left[64];
	db_text(f->admin, "SELECT who || ' ' || what FROM toy_notes", NULL, left, sizeof left);
	assert_string_equal(left, "bob pen");
	total = (retention_counts) {{0, 0}};
	assert_int_equal(retention_run_pass(&cfg, c, false, &total), 0);
	assert_int_equal(total.n[0], 0);
	PQfinish(c);
}

/* One of the two batch loops of test_retention_concurrent. */
typedef struct ret_worker {
	const char *conninfo;
	pkit_retention *arg;
	int64_t now_ms;
	int64_t deleted;
	int failures; /* batches that failed (a deadlock would be one) */
} ret_worker;

static void *ret_worker_main(void *p)
{
	ret_worker *w = p;
	PGconn *c = PQconnectdb(w->conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		w->failures++;
		PQfinish(c);
		return NULL;
	}
	for (int i = 0; i < 1000; i++) {
		retention_counts n = {{0, 0}};
		if (pkit_retention_batch(w->arg, c, w->now_ms, 50, false, &n) != 0) {
			w->failures++;
			continue;
		}
		w->deleted += n.n[0];
		if (n.n[0] == 0)
			break;
	}
	PQfinish(c);
	return NULL;
}

/* Two batch loops at once (the elected job and an admin's pass) over 3,000
 * expired records of 40 keys and every status: they never take the same
 * record (the deletions add up to exactly 3,000), never deadlock on the
 * summaries (no batch fails), and the summaries hold exactly the records'
 * counts and sums. */
static void test_retention_concurrent(void **state)
{
	fixture *f = *state;
	toy_reset(f, "");
	sql_ok(f->admin,
	    "INSERT INTO toy_records (saga_id, status, key, n, created_at)"
	    " SELECT gen_random_uuid(),"
	    " (ARRAY['TAKEN','SHORT','NO_ROW','RETURNED','TOMBSTONE'])[1 + i % 5],"
	    " 'K' || (i % 40), 1 + i % 9, now() - interval '2 days' - i * interval '1 second'"
	    " FROM generate_series(1, 3000) i",
	    0, NULL);
	const horizon_policy hp = {.retention_ms = 86400000, .skew_ms = 300000};
	pkit_retention arg = {.svc = &toy_service, .horizon = &hp};
	/* the summary the records make, per (key, status) */
	static char made[4096];
	db_text(f->admin,
	    "SELECT string_agg(key || ' ' || status || ' ' || c || ' ' || s, ', '"
	    " ORDER BY key, status) FROM (SELECT key, status, count(*) AS c, sum(n) AS s"
	    " FROM toy_records GROUP BY 1, 2) g",
	    NULL, made, sizeof made);
	ret_worker w[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		w[i] = (ret_worker) {.conninfo = f->conninfo, .arg = &arg, .now_ms = db_now_ms(f)};
		assert_int_equal(pthread_create(&th[i], NULL, ret_worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(w[0].failures + w[1].failures, 0);
	assert_int_equal(w[0].deleted + w[1].deleted, 3000);
	assert_int_equal(record_count(f), 0);
	assert_string_equal(summary_of(f, "toy_records_retired"), made);
	assert_int_equal(db_int(f->admin, "SELECT count(*) FROM toy_records_retired", NULL), 40);
}

/* the plan PostgreSQL logged (auto_explain at NOTICE) */
static char plan_text[16384];

static void keep_notice(void *arg, const char *message)
{
	(void)arg;
	size_t at = strlen(plan_text);
	snprintf(plan_text + at, sizeof plan_text - at, "%s", message);
}

/* The batch's plan on a table of 20,000 records, half of them expired:
 * the expired records are found by the created_at index, oldest first,
 * and deleted by their primary key, never by reading the whole table. */
static void test_retention_plan(void **state)
{
	fixture *f = *state;
	toy_reset(f, "");
	sql_ok(f->admin,
	    "INSERT INTO toy_records (saga_id, status, key, n, created_at)"
	    " SELECT gen_random_uuid(), 'TAKEN', 'K' || (i % 50), 1 + i % 7,"
	    " now() - i * interval '1 minute' FROM generate_series(1, 20000) i",
	    0, NULL);
	sql_ok(f->admin, "ANALYZE toy_records", 0, NULL);
	const horizon_policy hp = {.retention_ms = 10000LL * 60000, .skew_ms = 0};
	pkit_retention arg = {.svc = &toy_service, .horizon = &hp};
	PGconn *c = connect_or_fail(f);
	sql_ok(c, "LOAD 'auto_explain'", 0, NULL);
	sql_ok(c, "SET auto_explain.log_min_duration = 0", 0, NULL);
	sql_ok(c, "SET auto_explain.log_level = notice", 0, NULL);
	plan_text[0] = '\0';
	PQsetNoticeProcessor(c, keep_notice, NULL);
	batch_deletes("a batch of 1000", &arg, c, db_now_ms(f), 1000, false, 1000);
	PQfinish(c);
	if (strstr(plan_text, "Index Scan Backward using toy_records_newest on toy_records") == NULL
	    || (strstr(plan_text, "Index Scan using toy_records_pkey on toy_records") == NULL
	        && strstr(plan_text, "Bitmap Index Scan on toy_records_pkey") == NULL)
	    || strstr(plan_text, "Seq Scan on toy_records ") != NULL) {
		fputs(plan_text, stderr); /* longer than cmocka's messages */
		fail_msg("the batch's plan reads the table otherwise than by its indexes");
	}
	assert_int_equal(record_count(f), 19000);
	assert_int_equal(
	    db_int(f->admin, "SELECT sum(records) FROM toy_records_retired", NULL), 1000);
}

/* 11. the descriptors are checked against their messages: the toys pass;
 * a field the request lacks, a reply field of the wrong type, or more texts
 * than the kit holds are refused (a daemon then refuses to start) */
static void test_service_check(void **state)
{
	(void)state;
	assert_true(pkit_service_check(&toy_service));
	assert_true(pkit_service_check(&notes_service));
	pkit_method m = toy_methods[0];
	pkit_service v = toy_service;
	v.methods = &m;
	v.n_methods = 1;
	m.fields[0].name = "nope";
	assert_false(pkit_service_check(&v));
	m = toy_methods[0];
	m.reply_value = "status"; /* an enum: a number, allowed */
	assert_true(pkit_service_check(&v));
	m.reply_created = "on_hand"; /* not a bool */
	assert_false(pkit_service_check(&v));
	m = toy_methods[0];
	m.fields[1] = (pkit_field) {"sku", true, 0, 0, NULL};
	m.fields[2] = (pkit_field) {"sku", true, 0, 0, NULL};
	m.n_fields = 3; /* three texts */
	assert_false(pkit_service_check(&v));
}

int main(void)
{
	/* warnings only: the injected faults and lost races log at WARNING */
	log_init("test_pkit", LOG_LEVEL_WARN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_duplicates, fault_teardown),
	    cmocka_unit_test_teardown(test_tombstone, fault_teardown),
	    cmocka_unit_test_teardown(test_key_mismatch, fault_teardown),
	    cmocka_unit_test_teardown(test_saga_identity, fault_teardown),
	    cmocka_unit_test_teardown(test_batch_order, fault_teardown),
	    cmocka_unit_test_teardown(test_fast_path, fault_teardown),
	    cmocka_unit_test_teardown(test_fault, fault_teardown),
	    cmocka_unit_test_teardown(test_lost_races, fault_teardown),
	    cmocka_unit_test_teardown(test_lock_order, fault_teardown),
	    cmocka_unit_test_teardown(test_reply_after_commit, fault_teardown),
	    cmocka_unit_test_teardown(test_no_rows, fault_teardown),
	    cmocka_unit_test(test_service_check),
	    cmocka_unit_test_teardown(test_retention, fault_teardown),
	    cmocka_unit_test_teardown(test_retention_concurrent, fault_teardown),
	    cmocka_unit_test_teardown(test_retention_plan, fault_teardown),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}

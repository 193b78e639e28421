/* The participant kit's retention tests (services/kit/pkit.h, "Retention")
 * on real PostgreSQL, with the toy services of pkit_toy.h: expired records
 * deleted and folded into <records>_retired exactly, two batch loops at
 * once, and the plan of a batch. */
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

int main(void)
{
	/* warnings only: the injected faults and lost races log at WARNING */
	log_init("test_pkit_retention", LOG_LEVEL_WARN);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_retention, fault_teardown),
	    cmocka_unit_test_teardown(test_retention_concurrent, fault_teardown),
	    cmocka_unit_test_teardown(test_retention_plan, fault_teardown),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}

/* The NOTIFY of the waits across orchestrators (issue 20; store.c,
 * STORE_NOTIFY_IF) against a real PostgreSQL (with_stack.sh exports
 * PG_PORT): the write that ends a saga NOTIFYs channel saga_finished with
 * its id exactly when sagas.waiter is set and is not the writer's name, on
 * each of the three paths of store_apply (one update, a batch, and the
 * statement-per-update path of a batch with a saga twice), never for a
 * transition that does not end the saga, and only at commit. Also
 * store_mark_waiter (this instance's name, or '*' once several instances
 * wait) and the waiter column written by both inserts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "pg.h"
#include "pgtest.h"
#include "saga.h"
#include "store.h"

#define DB_NAME "wait_notify_check"

typedef struct fixture {
	PGconn *c;   /* writes */
	PGconn *lis; /* LISTENs */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	f->c = pgtest_fresh_db(DB_NAME);
	assert_int_equal(store_apply_schema(f->c), 0);
	f->lis = pgtest_connect(DB_NAME);
	pgtest_exec(f->lis, "LISTEN " STORE_NOTIFY_CHANNEL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	PQfinish(f->c);
	PQfinish(f->lis);
	free(f);
	return 0;
}

/* notes reads every notification committed so far (a statement on the
 * listening session makes its backend deliver them) into ids (room for
 * `max`, each VALID_UUID_LEN + 1) and returns how many there were. */
static int notes(fixture *f, char (*ids)[VALID_UUID_LEN + 1], int max)
{
	pgtest_exec(f->lis, "SELECT 1");
	assert_int_equal(PQconsumeInput(f->lis), 1);
	int n = 0;
	PGnotify *nt;
	while ((nt = PQnotifies(f->lis)) != NULL) {
		assert_string_equal(nt->relname, STORE_NOTIFY_CHANNEL);
		if (n < max)
			snprintf(ids[n], VALID_UUID_LEN + 1, "%s", nt->extra);
		n++;
		PQfreemem(nt);
	}
	return n;
}

/* new_saga stores a new saga in RESERVING with sagas.waiter `waiter`. */
static void new_saga(fixture *f, saga_row *row, const char *waiter)
{
	memset(row, 0, sizeof *row);
	saga_id_new(row->saga_id);
	snprintf(row->customer, sizeof row->customer, "c1");
	snprintf(row->sku, sizeof row->sku, "X");
	row->qty = 1;
	row->amount = 100;
	saga_policy p = {.step_timeout_ms = 60000};
	row->s = saga_start(1700000000000, &p);
	snprintf(row->type, sizeof row->type, "order");
	snprintf(row->state, sizeof row->state, "%s", saga_state_name(row->s.state));
	bool created = false;
	saga_row stored;
	assert_int_equal(store_insert_saga(f->c, row, "A", waiter, &created, &stored), 0);
	assert_true(created);
	*row = stored;
}

/* end_of fills `u` to move `row` to `to` (CANCELLED ends it). */
static void end_of(store_update *u, const saga_row *row, saga_state to)
{
	memset(u, 0, sizeof *u);
	u->before = row;
	u->next = row->s;
	u->next.state = to;
	u->state = saga_state_name(to);
	u->finished = saga_is_terminal(to);
	u->compensating = to == SAGA_STATE_CANCELLED || saga_is_compensating(to);
	snprintf(u->next.reason, sizeof u->next.reason, "test");
	u->next.next_attempt_ms = 0;
	u->next.step_deadline_ms = 0;
	u->state_changed = true;
	u->event = "test";
}

static const char *waiter_of(fixture *f, const char *saga_id)
{
	static char out[128];
	const char *p[1] = {saga_id};
	PGresult *r
	    = PQexecParams(f->c, "SELECT coalesce(waiter, 'NULL') FROM sagas WHERE saga_id = $1", 1,
	        NULL, p, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_int_equal(PQntuples(r), 1);
	snprintf(out, sizeof out, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}

/* row_version_of is the saga row's xmin: it changes with every UPDATE
 * that writes the row. */
static long long row_version_of(fixture *f, const char *saga_id)
{
	const char *p[1] = {saga_id};
	PGresult *r = PQexecParams(f->c, "SELECT xmin::text::bigint FROM sagas WHERE saga_id = $1",
	    1, NULL, p, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_int_equal(PQntuples(r), 1);
	long long x = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return x;
}

/* A mark that changes nothing writes nothing (a client sending WaitSaga
 * again and again must not make one UPDATE per call), and still reads the
 * row as it is now: an end committed since is seen. */
static void test_mark_idempotent(void **state)
{
	fixture *f = *state;
	saga_row s, marked;
	new_saga(f, &s, NULL);
	assert_int_equal(store_mark_waiter(f->c, s.saga_id, "A", &marked), 0);
	long long x = row_version_of(f, s.saga_id);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(store_mark_waiter(f->c, s.saga_id, "A", &marked), 0);
		assert_string_equal(marked.saga_id, s.saga_id);
		assert_int_equal(marked.version, s.version);
	}
	assert_true(row_version_of(f, s.saga_id) == x);
	assert_string_equal(waiter_of(f, s.saga_id), "A");
	/* another instance: '*', written once */
	assert_int_equal(store_mark_waiter(f->c, s.saga_id, "B", &marked), 0);
	assert_string_equal(waiter_of(f, s.saga_id), "*");
	x = row_version_of(f, s.saga_id);
	assert_int_equal(store_mark_waiter(f->c, s.saga_id, "A", &marked), 0);
	assert_int_equal(store_mark_waiter(f->c, s.saga_id, NULL, &marked), 0);
	assert_true(row_version_of(f, s.saga_id) == x);
	/* ended since: the read shows it */
	store_update u;
	end_of(&u, &s, SAGA_STATE_CANCELLED);
	assert_int_equal(store_apply(f->c, &u, 1, "B"), 0);
	assert_true(u.applied);
	assert_int_equal(store_mark_waiter(f->c, s.saga_id, "A", &marked), 0);
	assert_int_equal(marked.s.state, SAGA_STATE_CANCELLED);
	assert_int_equal(marked.version, s.version + 1);
	char ids[8][VALID_UUID_LEN + 1];
	(void)notes(f, ids, 8); /* the end's NOTIFY ('*'), for the next test */
}

/* One update (STORE_APPLY_ONE): only a waiter that is not the writer. */
static void test_single(void **state)
{
	fixture *f = *state;
	char ids[8][VALID_UUID_LEN + 1];
	(void)notes(f, ids, 8);
	saga_row none, mine, other, any;
	new_saga(f, &none, NULL);
	new_saga(f, &mine, "A");
	new_saga(f, &other, "B");
	new_saga(f, &any, NULL);
	saga_row marked, waited_here;
	/* a WaitSaga on A, then one on C: several instances, '*' */
	assert_int_equal(store_mark_waiter(f->c, any.saga_id, "A", &marked), 0);
	assert_string_equal(waiter_of(f, any.saga_id), "A");
	assert_int_equal(store_mark_waiter(f->c, any.saga_id, "A", &marked), 0);
	assert_string_equal(waiter_of(f, any.saga_id), "A");
	assert_int_equal(store_mark_waiter(f->c, any.saga_id, "C", &marked), 0);
	assert_string_equal(marked.saga_id, any.saga_id);
	assert_int_equal(marked.version, any.version);
	assert_string_equal(waiter_of(f, any.saga_id), "*");
	/* a WaitSaga on A, the writer: answered in-process, no NOTIFY */
	new_saga(f, &waited_here, NULL);
	assert_int_equal(store_mark_waiter(f->c, waited_here.saga_id, "A", &marked), 0);
	assert_string_equal(waiter_of(f, waited_here.saga_id), "A");
	saga_row *rows[5] = {&none, &mine, &other, &any, &waited_here};
	for (int i = 0; i < 5; i++) {
		store_update u;
		end_of(&u, rows[i], SAGA_STATE_CANCELLED);
		assert_int_equal(store_apply(f->c, &u, 1, "A"), 0);
		assert_true(u.applied);
	}
	assert_int_equal(notes(f, ids, 8), 2);
	assert_string_equal(ids[0], other.saga_id);
	assert_string_equal(ids[1], any.saga_id);
}

/* A batch (STORE_APPLY_BATCH): the same rule per row; a transition that
 * does not end the saga sends nothing even with a waiter. */
static void test_batch(void **state)
{
	fixture *f = *state;
	char ids[8][VALID_UUID_LEN + 1];
	(void)notes(f, ids, 8);
	saga_row r[5];
	new_saga(f, &r[0], NULL);
	new_saga(f, &r[1], "A");
	new_saga(f, &r[2], "B");
	new_saga(f, &r[3], "*");
	new_saga(f, &r[4], "*");
	store_update u[5];
	for (int i = 0; i < 4; i++)
		end_of(&u[i], &r[i], SAGA_STATE_CANCELLED);
	end_of(&u[4], &r[4], SAGA_STATE_CHARGING); /* not an end */
	assert_int_equal(store_apply(f->c, u, 5, "A"), 0);
	for (int i = 0; i < 5; i++)
		assert_true(u[i].applied);
	int n = notes(f, ids, 8);
	assert_int_equal(n, 2);
	bool seen2 = false, seen3 = false;
	for (int i = 0; i < n; i++) {
		seen2 = seen2 || strcmp(ids[i], r[2].saga_id) == 0;
		seen3 = seen3 || strcmp(ids[i], r[3].saga_id) == 0;
	}
	assert_true(seen2 && seen3);
}

/* A batch with a saga twice (store_apply_one in one transaction): the
 * first update ends it and NOTIFYs once, the second loses the version
 * check and sends nothing; the writer's own waiter gets nothing. */
static void test_duplicates(void **state)
{
	fixture *f = *state;
	char ids[8][VALID_UUID_LEN + 1];
	(void)notes(f, ids, 8);
	saga_row other, mine;
	new_saga(f, &other, "B");
	new_saga(f, &mine, "A");
	store_update u[4];
	end_of(&u[0], &other, SAGA_STATE_CANCELLED);
	end_of(&u[1], &other, SAGA_STATE_CANCELLED);
	end_of(&u[2], &mine, SAGA_STATE_CANCELLED);
	end_of(&u[3], &mine, SAGA_STATE_CANCELLED);
	assert_int_equal(store_apply(f->c, u, 4, "A"), 0);
	assert_true(u[0].applied);
	assert_false(u[1].applied);
	assert_true(u[2].applied);
	assert_false(u[3].applied);
	assert_int_equal(notes(f, ids, 8), 1);
	assert_string_equal(ids[0], other.saga_id);
}

/* Nothing is delivered before the commit, and nothing at all after a
 * rollback. */
static void test_commit_only(void **state)
{
	fixture *f = *state;
	char ids[8][VALID_UUID_LEN + 1];
	(void)notes(f, ids, 8);
	saga_row a, b;
	new_saga(f, &a, "*");
	new_saga(f, &b, "*");
	pgtest_exec(f->c, "BEGIN");
	store_update u;
	end_of(&u, &a, SAGA_STATE_CANCELLED);
	assert_int_equal(store_apply(f->c, &u, 1, "A"), 0);
	assert_int_equal(notes(f, ids, 8), 0);
	pgtest_exec(f->c, "ROLLBACK");
	assert_int_equal(notes(f, ids, 8), 0);
	pgtest_exec(f->c, "BEGIN");
	end_of(&u, &b, SAGA_STATE_CANCELLED);
	assert_int_equal(store_apply(f->c, &u, 1, "A"), 0);
	assert_int_equal(notes(f, ids, 8), 0);
	pgtest_exec(f->c, "COMMIT");
	assert_int_equal(notes(f, ids, 8), 1);
	assert_string_equal(ids[0], b.saga_id);
}

/* store_insert_sagas writes each row's waiter (NULL for none), and
 * store_mark_waiter refuses an unknown saga. */
static void test_inserts(void **state)
{
	fixture *f = *state;
	saga_row rows[3], stored[3];
	bool created[3];
	for (int i = 0; i < 3; i++) {
		new_saga(f, &rows[i], NULL); /* a template: a fresh id below */
		saga_id_new(rows[i].saga_id);
	}
	const char *w[3] = {NULL, "A", NULL};
	assert_int_equal(store_insert_sagas(f->c, rows, w, 3, "A", created, stored), 0);
	assert_string_equal(waiter_of(f, rows[0].saga_id), "NULL");
	assert_string_equal(waiter_of(f, rows[1].saga_id), "A");
	assert_string_equal(waiter_of(f, rows[2].saga_id), "NULL");
	for (int i = 0; i < 3; i++)
		saga_id_new(rows[i].saga_id);
	assert_int_equal(store_insert_sagas(f->c, rows, NULL, 3, "A", created, stored), 0);
	for (int i = 0; i < 3; i++) {
		assert_true(created[i]);
		assert_string_equal(waiter_of(f, rows[i].saga_id), "NULL");
	}
	saga_row out;
	assert_int_equal(
	    store_mark_waiter(f->c, "99999999-9999-4999-8999-999999999999", "A", &out), -ENOENT);
	/* unnamed: anyone */
	assert_int_equal(store_mark_waiter(f->c, rows[0].saga_id, NULL, &out), 0);
	assert_string_equal(waiter_of(f, rows[0].saga_id), "*");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_single),
	    cmocka_unit_test(test_batch),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_commit_only),
	    cmocka_unit_test(test_inserts),
	    cmocka_unit_test(test_mark_idempotent),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

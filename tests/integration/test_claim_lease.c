/* The sweep's claim computes each row's lease in SQL (store.c,
 * STORE_LEASE); saga_lease_until_ms (saga.c) is the rule (saga-semantics.md,
 * rule T5). Against a real PostgreSQL (with_stack.sh exports PG_PORT): sagas
 * in every unfinished state, with 0 to 12 failed tries, deadlines far, near
 * and passed, are claimed by store_claim_due, and each row's new
 * next_attempt_at must be what the C function gives for the row as it was,
 * to the millisecond, under several policies. Also dbclock (rule T1): after
 * dbclock_sync, dbclock_now_ms agrees with clock_timestamp() within the
 * round trip of the read. And the fencing epoch (rule 10): a claim raises
 * it and names its owner, and a transition decided under an earlier claim
 * is refused (applied false, fenced true) with nothing written, through
 * each of store_apply's three paths (one update, a batch, a batch with a
 * saga twice). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "clock.h"
#include "dbclock.h"
#include "pg.h"
#include "pgtest.h"
#include "saga.h"
#include "store.h"

#define DB_NAME "claim_lease_check"

static int setup(void **state)
{
	PGconn *c = pgtest_fresh_db(DB_NAME);
	assert_int_equal(store_apply_schema(c), 0);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(*state);
	return 0;
}

/* A saga due now in `st` with `attempts` failed tries and a step deadline
 * `deadline_in` ms from `now` (0: none), written straight into the row. */
static void put_saga(
    PGconn *c, saga_row *row, saga_state st, int32_t attempts, int64_t deadline_in, int64_t now)
{
	memset(row, 0, sizeof *row);
	saga_id_new(row->saga_id);
	snprintf(row->customer, sizeof row->customer, "c1");
	snprintf(row->sku, sizeof row->sku, "X");
	row->qty = 1;
	row->amount = 100;
	saga_policy p = {.step_timeout_ms = 1000};
	row->s = saga_start(now - 60000, &p);
	snprintf(row->type, sizeof row->type, "order");
	snprintf(row->state, sizeof row->state, "%s", saga_state_name(row->s.state));
	bool created = false;
	saga_row existing;
	assert_int_equal(store_insert_saga(c, row, "A", NULL, &created, &existing), 0);
	assert_true(created);
	char sql[512];
	snprintf(sql, sizeof sql,
	    "UPDATE sagas SET state = '%s', attempts = %d, created_at = created_at - "
	    "interval '1 hour', next_attempt_at = to_timestamp(%" PRId64 " / 1000.0), "
	    "retry_at = CASE WHEN %d > 0 THEN to_timestamp(%" PRId64 " / 1000.0) END, "
	    "step_deadline = CASE WHEN %" PRId64 " = 0 THEN NULL ELSE to_timestamp(%" PRId64
	    " / 1000.0) END WHERE saga_id = '%s'",
	    saga_state_name(st), attempts, now - 10, attempts, now - 10, deadline_in,
	    now + deadline_in, row->saga_id);
	pgtest_exec(c, sql);
	row->s.state = st;
	snprintf(row->state, sizeof row->state, "%s", saga_state_name(st));
	row->s.attempts = attempts;
	row->s.step_deadline_ms = deadline_in == 0 ? 0 : now + deadline_in;
}

static void test_claim_lease_matches_rule(void **state)
{
	PGconn *c = *state;
	const saga_policy policies[] = {
	    {.request_timeout_ms = 2000, .request_timeout_max_ms = 30000, .lease_grace_ms = 1000},
	    {.request_timeout_ms = 1000, .request_timeout_max_ms = 6000, .lease_grace_ms = 1000},
	    {.request_timeout_ms = 5000, .request_timeout_max_ms = 0, .lease_grace_ms = 1000},
	    {.request_timeout_ms = 7, .request_timeout_max_ms = 3600000, .lease_grace_ms = 0},
	};
	const saga_state states[] = {
	    SAGA_STATE_RESERVING, SAGA_STATE_CHARGING, SAGA_STATE_REFUNDING, SAGA_STATE_RELEASING};
	const int32_t tries[] = {0, 1, 2, 3, 5, 12};
	const int64_t deadlines[] = {600000, 2500, 1, -500};
	size_t checked = 0, cut = 0;
	for (size_t pi = 0; pi < sizeof policies / sizeof policies[0]; pi++) {
		const saga_policy *pol = &policies[pi];
		int64_t now = clock_wall_ms();
		enum { N = 4 * 6 * 4 };
		saga_row rows[N];
		size_t n = 0;
		for (size_t si = 0; si < 4; si++)
			for (size_t ti = 0; ti < 6; ti++)
				for (size_t di = 0; di < 4; di++) {
					bool step = states[si] == SAGA_STATE_RESERVING
					    || states[si] == SAGA_STATE_CHARGING;
					if (!step && di > 0)
						continue; /* compensations have no deadline */
					put_saga(c, &rows[n++], states[si], tries[ti],
					    step ? deadlines[di] : 0, now);
				}
		saga_row claimed[N];
		size_t got = 0;
		assert_int_equal(store_claim_due(c, now, pol, now, N, "B", claimed, &got), 0);
		assert_int_equal(got, n);
		for (size_t k = 0; k < got; k++) {
			const saga_row *before = NULL;
			for (size_t j = 0; j < n; j++)
				if (strcmp(rows[j].saga_id, claimed[k].saga_id) == 0)
					before = &rows[j];
			assert_non_null(before);
			int64_t want = saga_lease_until_ms(&before->s, now, pol);
			if (claimed[k].s.next_attempt_ms != want)
				fail_msg("policy %zu, %s, %d tries, deadline %+" PRId64
				         ": claim leased until %" PRId64 ", the rule says %" PRId64,
				    pi, saga_state_name(before->s.state), before->s.attempts,
				    before->s.step_deadline_ms ? before->s.step_deadline_ms - now
				                               : 0,
				    claimed[k].s.next_attempt_ms, want);
			if (before->s.step_deadline_ms > 0 && want == before->s.step_deadline_ms)
				cut++;
			checked++;
		}
		pgtest_exec(c, "DELETE FROM sagas");
	}
	printf("claim_lease: %zu claimed rows leased as saga_lease_until_ms says (%zu cut at "
	       "their step deadline)\n",
	    checked, cut);
	assert_true(cut > 0);
}

static void test_dbclock_agrees(void **state)
{
	PGconn *c = *state;
	assert_int_equal(dbclock_sync(c), 0);
	assert_true(dbclock_synced());
	for (int i = 0; i < 5; i++) {
		int64_t before = dbclock_now_ms();
		PGresult *r
		    = PQexec(c, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
		assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
		int64_t db = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
		int64_t after = dbclock_now_ms();
		/* the database's reading lies between ours, up to the error of the
		 * offset (half the sync's round trip) and a ms of rounding each */
		int64_t err = dbclock_rtt_ms() / 2 + 2;
		if (db < before - err || db > after + err)
			fail_msg("database clock %" PRId64 " outside [%" PRId64 ", %" PRId64
			         "] +- %" PRId64,
			    db, before, after, err);
	}
}

/* fenced_write: two sagas started by "A" (epoch 1) and claimed by "B" (epoch
 * 2); A's transitions, decided on the rows it read at epoch 1, are refused
 * and flagged fenced through the path `n_ups` and `dup` pick; B's, on the
 * claimed rows, apply. The rows and their history say exactly that. */
static void fenced_write(PGconn *c, int n_ups, bool dup)
{
	pgtest_exec(c, "DELETE FROM sagas");
	int64_t now = clock_wall_ms();
	saga_row a_rows[2], claimed[4];
	for (int i = 0; i < 2; i++) {
		put_saga(c, &a_rows[i], SAGA_STATE_RESERVING, 0, 60000, now);
		a_rows[i].epoch = 1;
		a_rows[i].version = 1;
		a_rows[i].s.step_deadline_ms = now + 60000;
	}
	assert_string_equal(pgtest_text(c,
	                        "SELECT string_agg(DISTINCT lease_owner || '/' || epoch, ',') "
	                        "FROM sagas"),
	    "A/1");
	saga_policy pol = {.step_timeout_ms = 60000,
	    .request_timeout_ms = 1000,
	    .request_timeout_max_ms = 1000,
	    .lease_grace_ms = 1000};
	size_t got = 0;
	assert_int_equal(store_claim_due(c, now, &pol, now, 4, "B", claimed, &got), 0);
	assert_int_equal(got, 2);
	for (size_t k = 0; k < got; k++)
		assert_int_equal(claimed[k].epoch, 2);
	assert_string_equal(pgtest_text(c,
	                        "SELECT string_agg(DISTINCT lease_owner || '/' || epoch, ',') "
	                        "FROM sagas"),
	    "B/2");
	/* A wakes up with a reply for each: RESERVED, so CHARGING */
	store_update ups[3];
	memset(ups, 0, sizeof ups);
	int n = 0;
	for (int i = 0; i < n_ups; i++) {
		ups[n].before = &a_rows[i];
		ups[n].next = a_rows[i].s;
		ups[n].next.state = SAGA_STATE_CHARGING;
		ups[n].state = "CHARGING";
		ups[n].state_changed = true;
		ups[n].event = "stock_reserved";
		n++;
	}
	if (dup) { /* a duplicated reply in the same batch: the transaction path */
		ups[n] = ups[0];
		n++;
	}
	assert_int_equal(store_apply(c, ups, (size_t)n, "A"), 0);
	for (int i = 0; i < n; i++) {
		assert_false(ups[i].applied);
		assert_true(ups[i].fenced);
	}
	assert_string_equal(pgtest_text(c,
	                        "SELECT count(*) FILTER (WHERE state = 'RESERVING' AND "
	                        "version = 1) || '/' || count(*) FROM sagas"),
	    "2/2");
	assert_string_equal(pgtest_text(c,
	                        "SELECT count(*) FROM saga_history WHERE version > 1 AND saga_id "
	                        "IN (SELECT saga_id FROM sagas)"),
	    "0");
	/* B's transitions, on the rows it claimed, apply */
	for (int i = 0; i < (int)got; i++) {
		memset(&ups[i], 0, sizeof ups[i]);
		ups[i].before = &claimed[i];
		ups[i].next = claimed[i].s;
		ups[i].next.state = SAGA_STATE_CHARGING;
		ups[i].state = "CHARGING";
		ups[i].state_changed = true;
		ups[i].event = "stock_reserved";
	}
	assert_int_equal(store_apply(c, ups, got, "B"), 0);
	for (size_t i = 0; i < got; i++) {
		assert_true(ups[i].applied);
		assert_false(ups[i].fenced);
	}
	assert_string_equal(pgtest_text(c,
	                        "SELECT count(*) FILTER (WHERE state = 'CHARGING' AND "
	                        "version = 2 AND epoch = 2) FROM sagas"),
	    "2");
	/* a lost version race with the same epoch is refused, not fenced */
	memset(&ups[0], 0, sizeof ups[0]);
	ups[0].before = &claimed[0];
	ups[0].next = claimed[0].s;
	ups[0].next.state = SAGA_STATE_RELEASING;
	ups[0].state = "RELEASING";
	ups[0].compensating = true;
	ups[0].state_changed = true;
	ups[0].event = "stock_out";
	assert_int_equal(store_apply(c, ups, 1, "B"), 0);
	assert_false(ups[0].applied);
	assert_false(ups[0].fenced);
	pgtest_exec(c, "DELETE FROM sagas");
}

static void test_fencing_epoch(void **state)
{
	PGconn *c = *state;
	fenced_write(c, 1, false); /* one update: STORE_APPLY_ONE */
	fenced_write(c, 2, false); /* a batch: STORE_APPLY_BATCH */
	fenced_write(c, 1, true);  /* a saga twice: one statement per update */
	printf("fencing: transitions decided under an earlier claim were refused and flagged, "
	       "on all three write paths\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_claim_lease_matches_rule),
	    cmocka_unit_test(test_fencing_epoch),
	    cmocka_unit_test(test_dbclock_agrees),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* A batch of participant commands applied in one transaction
 * (stock_store_apply_batch, payment_store_apply_batch) gives exactly what
 * the same commands give applied one at a time in the same order
 * (stock_store_apply, payment_store_apply): the same reply (code, reason,
 * status) and on-hand units / balance after each command, and the same
 * final tables. Against a real PostgreSQL (run by with_stack.sh, which
 * exports PG_PORT): database A takes the batches, database B the single
 * commands, both seeded alike before each sequence. A's stores have a value
 * cache, so its batches take the one-round-trip path whenever the cache
 * serves them (stock_store_try_fast, payment_store_try_fast) and the locking
 * path otherwise, stale cached values included (the seeding changes the
 * rows behind the cache); B's have none: the locking path, one command at a
 * time, is the reference. Hand-written sequences
 * cover every rule with their expected outcomes written out (so A and B
 * cannot agree on a wrong answer); random sequences from fixed seeds, cut
 * into batches of random sizes, cover the combinations. */
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
#include <pthread.h>

#include "eq_stores.h"
#include "rpc.h"
#include "status.h"

/* ---- databases ---- */

enum { DB_STOCK_A, DB_STOCK_B, DB_PAY_A, DB_PAY_B, DB_COUNT };
static const char *const db_names[DB_COUNT] = {"eq_stock_a", "eq_stock_b", "eq_pay_a", "eq_pay_b"};

typedef struct fixture {
	char conninfo[DB_COUNT][256];
	PGconn *admin[DB_COUNT]; /* for seeding and reading the tables */
	/* the value caches of A's stores (the one-round-trip path), kept from
	 * one sequence to the next: the seeding of each sequence changes the
	 * rows behind them, so stale values and the fallback to the locking
	 * path are covered too */
	valcache *cache[DB_COUNT];
} fixture;

/* what the test covered, printed at the end */
static size_t n_stock_cmds, n_stock_batches, n_pay_cmds, n_pay_batches, n_sequences;
/* what A's one-round-trip path did: committed, and tried and failed over to
 * the locking path (stock_store_fast_counts, payment_store_fast_counts) */
static uint64_t stock_fast, stock_fast_failed, pay_fast, pay_fast_failed;

/* outcomes seen (in A), by reply status and by reason, so the random
 * sequences can be shown to reach every rule */
static const char *const reasons[] = {"", "out_of_stock", "unknown_sku", "payment_declined",
    "unknown_account", "tombstone", "key_mismatch"};
#define N_REASONS 7
static size_t seen_status[6], seen_reason[N_REASONS];

static void tally(int status, const char *reason)
{
	if (status >= 0 && status < 6)
		seen_status[status]++;
	for (int i = 0; i < N_REASONS; i++)
		if (strcmp(reason, reasons[i]) == 0)
			seen_reason[i]++;
}

static void tally_reset(void)
{
	memset(seen_status, 0, sizeof seen_status);
	memset(seen_reason, 0, sizeof seen_reason);
}

/* expect_seen asserts that every reason in `want` and every reply status
 * 1..5 came up since tally_reset. */
static void expect_seen(const char *what, const char *const *want, int n_want)
{
	print_message("%s: statuses 1..5 seen %zu %zu %zu %zu %zu times; reasons:", what,
	    seen_status[1], seen_status[2], seen_status[3], seen_status[4], seen_status[5]);
	for (int i = 0; i < N_REASONS; i++)
		print_message(" \"%s\" %zu", reasons[i], seen_reason[i]);
	print_message("\n");
	for (int s = 1; s < 6; s++)
		assert_true(seen_status[s] > 0);
	for (int k = 0; k < n_want; k++)
		for (int i = 0; i < N_REASONS; i++)
			if (strcmp(want[k], reasons[i]) == 0)
				assert_true(seen_reason[i] > 0);
}

static void conninfo_of(char *buf, size_t len, const char *db)
{
	const char *port = getenv("PG_PORT");
	assert_non_null(port);
	snprintf(buf, len, "host=127.0.0.1 port=%s user=postgres dbname=%s", port, db);
}

static void sql_ok(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

/* db_rows runs `sql` and returns every row as "v1|v2|...\n" (malloc'd). */
static char *db_rows(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	size_t len = 1;
	for (int i = 0; i < PQntuples(r); i++)
		for (int j = 0; j < PQnfields(r); j++)
			len += (size_t)PQgetlength(r, i, j) + 1;
	char *out = malloc(len);
	assert_non_null(out);
	size_t k = 0;
	for (int i = 0; i < PQntuples(r); i++)
		for (int j = 0; j < PQnfields(r); j++) {
			size_t l = (size_t)PQgetlength(r, i, j);
			memcpy(out + k, PQgetvalue(r, i, j), l);
			k += l;
			out[k++] = j + 1 == PQnfields(r) ? '\n' : '|';
		}
	out[k] = '\0';
	PQclear(r);
	return out;
}

static int fixture_setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	assert_non_null(f);
	char root[256];
	conninfo_of(root, sizeof root, "postgres");
	PGconn *c = PQconnectdb(root);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", root, PQerrorMessage(c));
	sql_ok(c, "SET client_min_messages = warning", 0, NULL);
	for (int i = 0; i < DB_COUNT; i++) {
		char sql[128];
		snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db_names[i]);
		sql_ok(c, sql, 0, NULL);
		snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_names[i]);
		sql_ok(c, sql, 0, NULL);
		conninfo_of(f->conninfo[i], sizeof f->conninfo[i], db_names[i]);
	}
	PQfinish(c);
	assert_int_equal(valcache_new(&f->cache[DB_STOCK_A], 1000), 0);
	assert_int_equal(valcache_new(&f->cache[DB_PAY_A], 1000), 0);
	assert_int_equal(stock_store_migrate(f->conninfo[DB_STOCK_A], 5000), 0);
	assert_int_equal(stock_store_migrate(f->conninfo[DB_STOCK_B], 5000), 0);
	assert_int_equal(payment_store_migrate(f->conninfo[DB_PAY_A], 5000), 0);
	assert_int_equal(payment_store_migrate(f->conninfo[DB_PAY_B], 5000), 0);
	for (int i = 0; i < DB_COUNT; i++) {
		f->admin[i] = PQconnectdb(f->conninfo[i]);
		if (PQstatus(f->admin[i]) != CONNECTION_OK)
			fail_msg("connect %s: %s", f->conninfo[i], PQerrorMessage(f->admin[i]));
	}
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	fixture *f = *state;
	for (int i = 0; i < DB_COUNT; i++) {
		PQfinish(f->admin[i]);
		valcache_free(f->cache[i]);
	}
	free(f);
	print_message("covered: %zu sequences; stock %zu commands in %zu batches; "
	              "payment %zu commands in %zu batches\n",
	    n_sequences, n_stock_cmds, n_stock_batches, n_pay_cmds, n_pay_batches);
	return 0;
}

/* ---- saga ids: canonical lowercase UUIDs whose key order is not the
 * order they are used in (the batch locks records in key order) ---- */

#define N_IDS 128
static char saga_ids[N_IDS][VALID_UUID_LEN + 1];

static void make_ids(void)
{
	uint32_t h = 2166136261u;
	for (int k = 0; k < N_IDS; k++) {
		h = (h ^ (uint32_t)k) * 16777619u;
		h ^= h >> 13;
		snprintf(saga_ids[k], sizeof saga_ids[k], "%08x-%04x-4%03x-8%03x-%012x", h,
		    (unsigned)k, (unsigned)(k * 7) & 0xfff, (unsigned)(h >> 20), (unsigned)k);
	}
}

/* ---- deterministic random numbers (xorshift64*) ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 33) % n;
}

/* random batch sizes 1..max covering n commands; returns how many */
static size_t random_cuts(size_t *sizes, size_t n, uint32_t max)
{
	size_t k = 0;
	for (size_t done = 0; done < n; k++) {
		sizes[k] = 1 + rnd(max);
		if (sizes[k] > n - done)
			sizes[k] = n - done;
		done += sizes[k];
	}
	return k;
}

/* ---- workers ----
 * pg_exec_stmt remembers per thread which statements the session of the
 * thread's one connection has prepared (pg.h), and a daemon gives each
 * worker thread its own store. So each pass over a sequence runs like
 * that: on a thread of its own, with a store (a connection) of its own,
 * opened and closed on that thread. */

typedef struct job {
	const char *conninfo;
	void *cmds; /* stock_batch_cmd[] or payment_batch_cmd[] */
	size_t n;
	const size_t *sizes; /* batch sizes, or NULL: one command at a time */
	void *outs;          /* one at a time: stock_outcome[] / payment_outcome[] */
	int64_t *after;      /* one at a time: on_hand / balance after each */
	int rc;              /* 0, or the error of the call at `at` */
	size_t at;
	valcache *cache; /* the store's value cache, or NULL */
} job;

static void *stock_worker(void *arg)
{
	job *j = arg;
	stock_batch_cmd *cmds = j->cmds;
	stock_outcome *outs = j->outs;
	stock_store *s = NULL;
	j->rc = stock_store_open(&s, j->conninfo, 5000, j->cache);
	for (size_t i = 0, b = 0; j->rc == 0 && i < j->n; i += j->sizes ? j->sizes[b++] : 1) {
		j->at = i;
		if (j->sizes == NULL)
			j->rc = stock_store_apply(
			    s, cmds[i].saga_id, &cmds[i].cmd, &outs[i], &j->after[i]);
		else
			j->rc = stock_store_apply_batch(s, cmds + i, j->sizes[b]);
	}
	if (s != NULL) {
		uint64_t ok, failed;
		stock_store_fast_counts(s, &ok, &failed);
		stock_fast += ok;
		stock_fast_failed += failed;
	}
	stock_store_close(s);
	return NULL;
}

static void *pay_worker(void *arg)
{
	job *j = arg;
	payment_batch_cmd *cmds = j->cmds;
	payment_outcome *outs = j->outs;
	payment_store *s = NULL;
	j->rc = payment_store_open(&s, j->conninfo, 5000, j->cache);
	for (size_t i = 0, b = 0; j->rc == 0 && i < j->n; i += j->sizes ? j->sizes[b++] : 1) {
		j->at = i;
		if (j->sizes == NULL)
			j->rc = payment_store_apply(
			    s, cmds[i].saga_id, &cmds[i].cmd, &outs[i], &j->after[i]);
		else
			j->rc = payment_store_apply_batch(s, cmds + i, j->sizes[b]);
	}
	if (s != NULL) {
		uint64_t ok, failed;
		payment_store_fast_counts(s, &ok, &failed);
		pay_fast += ok;
		pay_fast_failed += failed;
	}
	payment_store_close(s);
	return NULL;
}

/* run_job runs `j` on a thread of its own and fails on an error. */
static void run_job(void *(*worker)(void *), job *j, const char *name, const char *what)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, worker, j), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (j->rc != 0)
		fail_msg("%s: %s failed at command %zu: %d", name, what, j->at, j->rc);
}

/* check_sizes asserts that sizes[] cuts n commands into valid batches and
 * returns how many batches. */
static size_t check_sizes(const size_t *sizes, size_t n)
{
	size_t nb = 0;
	for (size_t done = 0; done < n; done += sizes[nb++])
		assert_true(sizes[nb] >= 1 && sizes[nb] <= RPC_BATCH_MAX && sizes[nb] <= n - done);
	return nb;
}

/* ---- stock ---- */

/* The skus: little stock, a name that needs quoting in an array literal,
 * one for many commands; "NOPE" is never seeded. */
#define SKU_ODD "Q\"\\{x, y} NULL"
static const char *const stock_skus[] = {"A1", "B2", SKU_ODD, "C3", "M"};
static const int64_t stock_seed[] = {5, 2, 3, 1, 50};
#define N_STOCK_SKUS 5
#define SKU_UNKNOWN  "NOPE"

static void stock_reset(fixture *f)
{
	for (int d = DB_STOCK_A; d <= DB_STOCK_B; d++) {
		sql_ok(f->admin[d], "TRUNCATE reservations, stock", 0, NULL);
		for (int i = 0; i < N_STOCK_SKUS; i++) {
			char v[24];
			snprintf(v, sizeof v, "%lld", (long long)stock_seed[i]);
			const char *p[] = {stock_skus[i], v};
			sql_ok(
			    f->admin[d], "INSERT INTO stock (sku, on_hand) VALUES ($1, $2)", 2, p);
		}
	}
}

static void stock_describe(
    char *buf, size_t len, const stock_batch_cmd *c, const stock_outcome *o, int64_t on_hand)
{
	snprintf(buf, len,
	    "%s %s sku=\"%s\" qty=%d -> code=%d reason=\"%s\" status=%s on_hand=%lld "
	    "[record %d %s \"%s\" %d, row %d %lld]",
	    c->cmd.op == STOCK_OP_RESERVE ? "reserve" : "release", c->saga_id, c->cmd.sku,
	    c->cmd.qty, o->code, o->reason, stock_status_name(o->reply_status), (long long)on_hand,
	    o->write_record, stock_status_name(o->record.status), o->record.sku, o->record.qty,
	    o->write_row, (long long)o->on_hand);
}

static bool stock_outcome_equal(
    const stock_outcome *x, int64_t hx, const stock_outcome *y, int64_t hy)
{
	return x->code == y->code && strcmp(x->reason, y->reason) == 0
	    && x->reply_status == y->reply_status && hx == hy && x->write_record == y->write_record
	    && (!x->write_record
	        || (x->record.status == y->record.status
	            && strcmp(x->record.sku, y->record.sku) == 0 && x->record.qty == y->record.qty))
	    && x->write_row == y->write_row && (!x->write_row || x->on_hand == y->on_hand);
}

/* print_lines prints text line by line (cmocka cuts long messages). */
static void print_lines(const char *text)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		print_error("   %.*s\n", len, p);
		p += len + (nl ? 1 : 0);
	}
}

static bool same_tables(PGconn *a, PGconn *b, const char *sql, const char *what)
{
	char *ta = db_rows(a, sql, 0, NULL), *tb = db_rows(b, sql, 0, NULL);
	bool same = strcmp(ta, tb) == 0;
	if (!same) {
		print_error("%s differ:\n-- batch (A):\n", what);
		print_lines(ta);
		print_error("-- single (B):\n");
		print_lines(tb);
	}
	free(ta);
	free(tb);
	return same;
}

/* stock_run applies cmds[0..n) to A in batches of sizes[0..] and to B one by
 * one, and fails on any difference (printing every differing command). */
static void stock_run(
    fixture *f, const char *name, stock_batch_cmd *cmds, size_t n, const size_t *sizes)
{
	stock_outcome *ob = calloc(n, sizeof *ob);
	int64_t *hb = calloc(n, sizeof *hb);
	assert_non_null(ob);
	assert_non_null(hb);
	size_t nb = check_sizes(sizes, n);
	job single = {f->conninfo[DB_STOCK_B], cmds, n, NULL, ob, hb, 0, 0, NULL};
	run_job(stock_worker, &single, name, "stock_store_apply");
	job batch
	    = {f->conninfo[DB_STOCK_A], cmds, n, sizes, NULL, NULL, 0, 0, f->cache[DB_STOCK_A]};
	run_job(stock_worker, &batch, name, "stock_store_apply_batch");
	n_stock_cmds += n;
	n_stock_batches += nb;
	n_sequences++;

	int diffs = 0;
	size_t batch_start = 0, b = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == batch_start + sizes[b]) {
			batch_start = i;
			b++;
		}
		tally(cmds[i].out.reply_status, cmds[i].out.reason);
		if (stock_outcome_equal(&cmds[i].out, cmds[i].on_hand, &ob[i], hb[i]))
			continue;
		char da[512], db[512];
		stock_describe(da, sizeof da, &cmds[i], &cmds[i].out, cmds[i].on_hand);
		stock_describe(db, sizeof db, &cmds[i], &ob[i], hb[i]);
		print_error("%s: command %zu (batch %zu, position %zu of %zu) differs:\n"
		            "  batch:  %s\n  single: %s\n",
		    name, i, b, i - batch_start, sizes[b], da, db);
		diffs++;
	}
	free(ob);
	free(hb);
	bool same_recs = same_tables(f->admin[DB_STOCK_A], f->admin[DB_STOCK_B],
	    "SELECT saga_id, sku, qty, status FROM reservations ORDER BY saga_id", "reservations");
	bool same_rows = same_tables(f->admin[DB_STOCK_A], f->admin[DB_STOCK_B],
	    "SELECT sku, on_hand FROM stock ORDER BY sku", "stock");
	bool same = same_recs && same_rows;
	if (diffs > 0 || !same) {
		print_error("%s: the whole sequence (%zu commands, %zu batches):\n", name, n, nb);
		for (size_t i = 0; i < n; i++)
			print_error("  %3zu %s %s \"%s\" %d\n", i,
			    cmds[i].cmd.op == STOCK_OP_RESERVE ? "reserve" : "release",
			    cmds[i].saga_id, cmds[i].cmd.sku, cmds[i].cmd.qty);
		fail_msg(
		    "%s: %d commands differ, tables %s", name, diffs, same ? "equal" : "differ");
	}
}

/* Units are conserved: for every seeded sku, on hand plus what RESERVED
 * records hold is the seed (checked on A; B equals A). */
static void stock_check_conserved(fixture *f)
{
	for (int i = 0; i < N_STOCK_SKUS; i++) {
		const char *p[] = {stock_skus[i]};
		char *v = db_rows(f->admin[DB_STOCK_A],
		    "SELECT s.on_hand + coalesce((SELECT sum(qty) FROM reservations r "
		    "WHERE r.sku = s.sku AND r.status = 'RESERVED'), 0) FROM stock s WHERE s.sku = "
		    "$1",
		    1, p);
		char want[32];
		snprintf(want, sizeof want, "%lld\n", (long long)stock_seed[i]);
		assert_string_equal(v, want);
		free(v);
	}
}

static int64_t stock_on_hand(fixture *f, int db, const char *sku)
{
	const char *p[] = {sku};
	char *v = db_rows(f->admin[db], "SELECT on_hand FROM stock WHERE sku = $1", 1, p);
	int64_t n = strtoll(v, NULL, 10);
	free(v);
	return n;
}

static char *record_status(fixture *f, int db, const char *sql, const char *saga_id)
{
	const char *p[] = {saga_id};
	return db_rows(f->admin[db], sql, 1, p);
}

/* One hand-written command with its expected outcome. */
typedef struct stock_case {
	stock_op op;
	int saga; /* index into saga_ids */
	const char *sku;
	int32_t qty;
	int code;
	const char *reason;
	stock_status status;
	int64_t on_hand;
} stock_case;

#define RES STOCK_OP_RESERVE
#define REL STOCK_OP_RELEASE

/* Every rule in one batch, starting from the seed (A1 5, B2 2, ODD 3). */
static const stock_case stock_rules[] = {
    /* plain reserve, its duplicate, the release after it, a late duplicate */
    {RES, 1, "A1", 2, RPC_OK, "", STOCK_RESERVED, 3},
    {RES, 1, "A1", 2, RPC_OK, "", STOCK_RESERVED, 3},
    {REL, 1, "A1", 2, RPC_OK, "", STOCK_RELEASED, 5},
    {REL, 1, "A1", 2, RPC_OK, "", STOCK_RELEASED, 5},
    {RES, 1, "A1", 2, RPC_OK, "", STOCK_RESERVED, 5},
    /* release before the step: tombstone, the step refused */
    {REL, 2, "B2", 1, RPC_OK, "", STOCK_TOMBSTONE, 2},
    {RES, 2, "B2", 1, RPC_ABORTED, "tombstone", STOCK_TOMBSTONE, 2},
    {REL, 2, "B2", 1, RPC_OK, "", STOCK_TOMBSTONE, 2},
    /* same saga id, other qty / other sku */
    {RES, 3, "A1", 3, RPC_OK, "", STOCK_RESERVED, 2},
    {RES, 3, "A1", 4, RPC_ALREADY_EXISTS, "key_mismatch", STOCK_RESERVED, 2},
    {RES, 3, "B2", 3, RPC_ALREADY_EXISTS, "key_mismatch", STOCK_RESERVED, 2},
    {REL, 3, "A1", 1, RPC_ALREADY_EXISTS, "key_mismatch", STOCK_RESERVED, 2},
    /* a tombstone with other arguments: a step is still refused as tombstone */
    {RES, 2, "A1", 1, RPC_ABORTED, "tombstone", STOCK_TOMBSTONE, 2},
    {REL, 2, "A1", 1, RPC_ALREADY_EXISTS, "key_mismatch", STOCK_TOMBSTONE, 2},
    /* drained by earlier commands of this batch */
    {RES, 4, "B2", 2, RPC_OK, "", STOCK_RESERVED, 0},
    {RES, 5, "B2", 1, RPC_FAILED_PRECONDITION, "out_of_stock", STOCK_OUT_OF_STOCK, 0},
    {RES, 6, "A1", 3, RPC_FAILED_PRECONDITION, "out_of_stock", STOCK_OUT_OF_STOCK, 2},
    /* unknown sku, and its release */
    {RES, 7, SKU_UNKNOWN, 1, RPC_NOT_FOUND, "unknown_sku", STOCK_UNKNOWN_SKU, 0},
    {RES, 7, SKU_UNKNOWN, 1, RPC_NOT_FOUND, "unknown_sku", STOCK_UNKNOWN_SKU, 0},
    {REL, 7, SKU_UNKNOWN, 1, RPC_OK, "", STOCK_UNKNOWN_SKU, 0},
    /* release of a saga that never reserved (a tombstone on a known sku) */
    {REL, 8, "A1", 1, RPC_OK, "", STOCK_TOMBSTONE, 2},
    /* out of stock is final: stock given back does not change the answer */
    {REL, 5, "B2", 1, RPC_OK, "", STOCK_OUT_OF_STOCK, 0},
    {REL, 4, "B2", 2, RPC_OK, "", STOCK_RELEASED, 2},
    {RES, 5, "B2", 1, RPC_FAILED_PRECONDITION, "out_of_stock", STOCK_OUT_OF_STOCK, 2},
    {RES, 9, "B2", 2, RPC_OK, "", STOCK_RESERVED, 0},
    /* a sku whose name needs quoting */
    {RES, 10, SKU_ODD, 3, RPC_OK, "", STOCK_RESERVED, 0},
    {RES, 11, SKU_ODD, 1, RPC_FAILED_PRECONDITION, "out_of_stock", STOCK_OUT_OF_STOCK, 0},
    {REL, 10, SKU_ODD, 3, RPC_OK, "", STOCK_RELEASED, 3},
    {RES, 12, SKU_ODD, 3, RPC_OK, "", STOCK_RESERVED, 0},
    /* the last of A1, then give it all back */
    {RES, 13, "A1", 2, RPC_OK, "", STOCK_RESERVED, 0},
    {RES, 14, "A1", 1, RPC_FAILED_PRECONDITION, "out_of_stock", STOCK_OUT_OF_STOCK, 0},
    {REL, 3, "A1", 3, RPC_OK, "", STOCK_RELEASED, 3},
    {REL, 13, "A1", 2, RPC_OK, "", STOCK_RELEASED, 5},
    {RES, 3, "A1", 3, RPC_OK, "", STOCK_RESERVED, 5},
};
#define N_STOCK_RULES (sizeof stock_rules / sizeof stock_rules[0])

static void stock_check_cases(
    const char *name, const stock_case *cases, const stock_batch_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const stock_outcome *o = &cmds[i].out;
		if (o->code == cases[i].code && strcmp(o->reason, cases[i].reason) == 0
		    && o->reply_status == cases[i].status && cmds[i].on_hand == cases[i].on_hand)
			continue;
		char d[512];
		stock_describe(d, sizeof d, &cmds[i], o, cmds[i].on_hand);
		fail_msg("%s: command %zu: got %s; expected code=%d reason=\"%s\" status=%s "
		         "on_hand=%lld",
		    name, i, d, cases[i].code, cases[i].reason, stock_status_name(cases[i].status),
		    (long long)cases[i].on_hand);
	}
}

static void stock_from_cases(stock_batch_cmd *cmds, const stock_case *cases, size_t n)
{
	memset(cmds, 0, n * sizeof *cmds);
	for (size_t i = 0; i < n; i++) {
		cmds[i].saga_id = saga_ids[cases[i].saga];
		cmds[i].cmd.op = cases[i].op;
		cmds[i].cmd.sku = cases[i].sku;
		cmds[i].cmd.qty = cases[i].qty;
	}
}

static void test_stock_rules(void **state)
{
	fixture *f = *state;
	stock_batch_cmd cmds[N_STOCK_RULES];
	/* all in one batch */
	stock_reset(f);
	stock_from_cases(cmds, stock_rules, N_STOCK_RULES);
	size_t one[] = {N_STOCK_RULES};
	stock_run(f, "stock rules, one batch", cmds, N_STOCK_RULES, one);
	stock_check_cases("stock rules, one batch", stock_rules, cmds, N_STOCK_RULES);
	assert_int_equal(stock_on_hand(f, DB_STOCK_A, "A1"), 5);
	assert_int_equal(stock_on_hand(f, DB_STOCK_A, "B2"), 0);
	assert_int_equal(stock_on_hand(f, DB_STOCK_A, SKU_ODD), 0);
	const char *rec_sql = "SELECT status || ' ' || sku || ' ' || qty FROM reservations "
	                      "WHERE saga_id = $1::uuid";
	const char *want[][2] = {{saga_ids[1], "RELEASED A1 2\n"},
	    {saga_ids[2], "TOMBSTONE B2 1\n"}, {saga_ids[3], "RELEASED A1 3\n"},
	    {saga_ids[5], "OUT_OF_STOCK B2 1\n"}, {saga_ids[7], "UNKNOWN_SKU NOPE 1\n"},
	    {saga_ids[8], "TOMBSTONE A1 1\n"}, {saga_ids[10], "RELEASED " SKU_ODD " 3\n"},
	    {saga_ids[13], "RELEASED A1 2\n"}, {saga_ids[14], "OUT_OF_STOCK A1 1\n"}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *v = record_status(f, DB_STOCK_A, rec_sql, want[i][0]);
		assert_string_equal(v, want[i][1]);
		free(v);
	}
	char *n = db_rows(f->admin[DB_STOCK_A], "SELECT count(*) FROM reservations", 0, NULL);
	assert_string_equal(n, "14\n");
	free(n);
	stock_check_conserved(f);

	/* the same commands cut every way: one by one in batches of 1, in
	 * pairs, in threes, and at random */
	size_t sizes[N_STOCK_RULES];
	for (size_t w = 1; w <= 4; w++) {
		stock_reset(f);
		stock_from_cases(cmds, stock_rules, N_STOCK_RULES);
		size_t k = 0;
		if (w == 4) {
			rng_state = 0x5eed;
			k = random_cuts(sizes, N_STOCK_RULES, 8);
		} else {
			for (size_t done = 0; done < N_STOCK_RULES; done += sizes[k++])
				sizes[k] = done + w <= N_STOCK_RULES ? w : N_STOCK_RULES - done;
		}
		(void)k;
		char name[64];
		snprintf(name, sizeof name, "stock rules, batches of %zu%s", w,
		    w == 4 ? " (random)" : "");
		stock_run(f, name, cmds, N_STOCK_RULES, sizes);
		stock_check_cases(name, stock_rules, cmds, N_STOCK_RULES);
		stock_check_conserved(f);
	}
}

/* RPC_BATCH_MAX commands on one sku in one batch: 64 sagas each reserve one
 * of the 50 units (the last 14 find none), then all release. */
static void test_stock_one_sku(void **state)
{
	fixture *f = *state;
	stock_reset(f);
	stock_batch_cmd cmds[RPC_BATCH_MAX];
	memset(cmds, 0, sizeof cmds);
	for (int i = 0; i < 64; i++) {
		cmds[i].saga_id = saga_ids[i];
		cmds[i].cmd = (stock_cmd) {STOCK_OP_RESERVE, "M", 1};
		cmds[64 + i].saga_id = saga_ids[63 - i];
		cmds[64 + i].cmd = (stock_cmd) {STOCK_OP_RELEASE, "M", 1};
	}
	size_t one[] = {RPC_BATCH_MAX};
	stock_run(f, "stock one sku", cmds, RPC_BATCH_MAX, one);
	for (int i = 0; i < 64; i++) {
		if (i < 50) {
			assert_int_equal(cmds[i].out.code, RPC_OK);
			assert_int_equal(cmds[i].on_hand, 49 - i);
		} else {
			assert_int_equal(cmds[i].out.code, RPC_FAILED_PRECONDITION);
			assert_string_equal(cmds[i].out.reason, "out_of_stock");
			assert_int_equal(cmds[i].on_hand, 0);
		}
		/* releases run from saga 63 down: 14 out-of-stock records first */
		const stock_batch_cmd *r = &cmds[64 + i];
		assert_int_equal(r->out.code, RPC_OK);
		assert_int_equal(r->out.reply_status, i < 14 ? STOCK_OUT_OF_STOCK : STOCK_RELEASED);
		assert_int_equal(r->on_hand, i < 14 ? 0 : i - 13);
	}
	assert_int_equal(stock_on_hand(f, DB_STOCK_A, "M"), 50);
	/* and the same again, now all answered from the records */
	stock_run(f, "stock one sku, again", cmds, RPC_BATCH_MAX, one);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(cmds[i].out.code, i < 50 ? RPC_OK : RPC_FAILED_PRECONDITION);
		assert_int_equal(cmds[i].on_hand, 50);
	}
	assert_int_equal(stock_on_hand(f, DB_STOCK_A, "M"), 50);
	stock_check_conserved(f);
}

/* Random sequences: n commands over n_ids saga ids and the four small skus
 * (and now and then the unknown one), each saga with its own sku and qty
 * but sometimes others (key_mismatch), reserve or release. */
static void stock_random(fixture *f, uint64_t seed, size_t n, int n_ids, uint32_t max_batch)
{
	static stock_batch_cmd cmds[1000];
	static size_t sizes[1000];
	assert_true(n <= 1000 && n_ids <= N_IDS);
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	stock_reset(f);
	memset(cmds, 0, sizeof cmds);
	for (size_t i = 0; i < n; i++) {
		int k = (int)rnd((uint32_t)n_ids);
		const char *sku = stock_skus[k % 4];
		int32_t qty = 1 + k % 3;
		uint32_t r = rnd(100);
		if (r < 8)
			sku = rnd(4) == 0 ? SKU_UNKNOWN : stock_skus[rnd(4)];
		else if (r < 16)
			qty = 1 + (int32_t)rnd(4);
		cmds[i].saga_id = saga_ids[k];
		cmds[i].cmd.op = rnd(100) < 55 ? STOCK_OP_RESERVE : STOCK_OP_RELEASE;
		cmds[i].cmd.sku = sku;
		cmds[i].cmd.qty = qty;
	}
	random_cuts(sizes, n, max_batch);
	char name[96];
	snprintf(name, sizeof name, "stock random seed %llu (%zu commands, %d ids, batches 1..%u)",
	    (unsigned long long)seed, n, n_ids, max_batch);
	stock_run(f, name, cmds, n, sizes);
	stock_check_conserved(f);
}

static void test_stock_random(void **state)
{
	fixture *f = *state;
	tally_reset();
	for (uint64_t seed = 1; seed <= 8; seed++)
		stock_random(f, seed, 200, 20, RPC_BATCH_MAX);
	for (uint64_t seed = 101; seed <= 104; seed++)
		stock_random(f, seed, 200, 20, 12);
	for (uint64_t seed = 201; seed <= 202; seed++)
		stock_random(f, seed, 1000, 120, RPC_BATCH_MAX);
	static const char *const want[]
	    = {"", "out_of_stock", "unknown_sku", "tombstone", "key_mismatch"};
	expect_seen("stock random", want, 5);
}

/* ---- payment ---- */

#define CUSTOMER_ODD "Zoë \"the\" \\{payer}, NULL"
static const char *const pay_customers[] = {"ali", "sara", CUSTOMER_ODD, "bob", "many"};
static const int64_t pay_seed[] = {50000, 2000, 3000, 100, 5000};
#define N_PAY_CUSTOMERS  5
#define CUSTOMER_UNKNOWN "ghost"

static void pay_reset(fixture *f)
{
	for (int d = DB_PAY_A; d <= DB_PAY_B; d++) {
		sql_ok(f->admin[d], "TRUNCATE charges, accounts", 0, NULL);
		for (int i = 0; i < N_PAY_CUSTOMERS; i++) {
			char v[24];
			snprintf(v, sizeof v, "%lld", (long long)pay_seed[i]);
			const char *p[] = {pay_customers[i], v};
			sql_ok(f->admin[d],
			    "INSERT INTO accounts (customer, balance) VALUES ($1, $2)", 2, p);
		}
	}
}

static void pay_describe(
    char *buf, size_t len, const payment_batch_cmd *c, const payment_outcome *o, int64_t balance)
{
	snprintf(buf, len,
	    "%s %s customer=\"%s\" amount=%lld -> code=%d reason=\"%s\" status=%s balance=%lld "
	    "[record %d %s \"%s\" %lld, account %d %lld]",
	    c->cmd.op == PAYMENT_OP_CHARGE ? "charge" : "refund", c->saga_id, c->cmd.customer,
	    (long long)c->cmd.amount, o->code, o->reason, payment_status_name(o->reply_status),
	    (long long)balance, o->write_record, payment_status_name(o->record.status),
	    o->record.customer, (long long)o->record.amount, o->write_account,
	    (long long)o->balance);
}

static bool pay_outcome_equal(
    const payment_outcome *x, int64_t bx, const payment_outcome *y, int64_t by)
{
	return x->code == y->code && strcmp(x->reason, y->reason) == 0
	    && x->reply_status == y->reply_status && bx == by && x->write_record == y->write_record
	    && (!x->write_record
	        || (x->record.status == y->record.status
	            && strcmp(x->record.customer, y->record.customer) == 0
	            && x->record.amount == y->record.amount))
	    && x->write_account == y->write_account
	    && (!x->write_account || x->balance == y->balance);
}

static void pay_run(
    fixture *f, const char *name, payment_batch_cmd *cmds, size_t n, const size_t *sizes)
{
	payment_outcome *ob = calloc(n, sizeof *ob);
	int64_t *bb = calloc(n, sizeof *bb);
	assert_non_null(ob);
	assert_non_null(bb);
	size_t nb = check_sizes(sizes, n);
	job single = {f->conninfo[DB_PAY_B], cmds, n, NULL, ob, bb, 0, 0, NULL};
	run_job(pay_worker, &single, name, "payment_store_apply");
	job batch = {f->conninfo[DB_PAY_A], cmds, n, sizes, NULL, NULL, 0, 0, f->cache[DB_PAY_A]};
	run_job(pay_worker, &batch, name, "payment_store_apply_batch");
	n_pay_cmds += n;
	n_pay_batches += nb;
	n_sequences++;

	int diffs = 0;
	size_t batch_start = 0, b = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == batch_start + sizes[b]) {
			batch_start = i;
			b++;
		}
		tally(cmds[i].out.reply_status, cmds[i].out.reason);
		if (pay_outcome_equal(&cmds[i].out, cmds[i].balance, &ob[i], bb[i]))
			continue;
		char da[512], db[512];
		pay_describe(da, sizeof da, &cmds[i], &cmds[i].out, cmds[i].balance);
		pay_describe(db, sizeof db, &cmds[i], &ob[i], bb[i]);
		print_error("%s: command %zu (batch %zu, position %zu of %zu) differs:\n"
		            "  batch:  %s\n  single: %s\n",
		    name, i, b, i - batch_start, sizes[b], da, db);
		diffs++;
	}
	free(ob);
	free(bb);
	bool same_recs = same_tables(f->admin[DB_PAY_A], f->admin[DB_PAY_B],
	    "SELECT saga_id, customer, amount, status FROM charges ORDER BY saga_id", "charges");
	bool same_rows = same_tables(f->admin[DB_PAY_A], f->admin[DB_PAY_B],
	    "SELECT customer, balance FROM accounts ORDER BY customer", "accounts");
	bool same = same_recs && same_rows;
	if (diffs > 0 || !same) {
		print_error("%s: the whole sequence (%zu commands, %zu batches):\n", name, n, nb);
		for (size_t i = 0; i < n; i++)
			print_error("  %3zu %s %s \"%s\" %lld\n", i,
			    cmds[i].cmd.op == PAYMENT_OP_CHARGE ? "charge" : "refund",
			    cmds[i].saga_id, cmds[i].cmd.customer, (long long)cmds[i].cmd.amount);
		fail_msg(
		    "%s: %d commands differ, tables %s", name, diffs, same ? "equal" : "differ");
	}
}

/* Money is conserved: balance plus CHARGED records is the seed (on A). */
static void pay_check_conserved(fixture *f)
{
	for (int i = 0; i < N_PAY_CUSTOMERS; i++) {
		const char *p[] = {pay_customers[i]};
		char *v = db_rows(f->admin[DB_PAY_A],
		    "SELECT a.balance + coalesce((SELECT sum(amount) FROM charges c "
		    "WHERE c.customer = a.customer AND c.status = 'CHARGED'), 0) FROM accounts a "
		    "WHERE a.customer = $1",
		    1, p);
		char want[32];
		snprintf(want, sizeof want, "%lld\n", (long long)pay_seed[i]);
		assert_string_equal(v, want);
		free(v);
	}
}

static int64_t pay_balance(fixture *f, int db, const char *customer)
{
	const char *p[] = {customer};
	char *v = db_rows(f->admin[db], "SELECT balance FROM accounts WHERE customer = $1", 1, p);
	int64_t n = strtoll(v, NULL, 10);
	free(v);
	return n;
}

typedef struct pay_case {
	payment_op op;
	int saga;
	const char *customer;
	int64_t amount;
	int code;
	const char *reason;
	payment_status status;
	int64_t balance;
} pay_case;

#define CHG PAYMENT_OP_CHARGE
#define REF PAYMENT_OP_REFUND

/* Every rule in one batch, from the seed (sara 20.00, bob 1.00, ODD 30.00). */
static const pay_case pay_rules[] = {
    /* plain charge, its duplicate, the refund after it, a late duplicate */
    {CHG, 1, "sara", 1500, RPC_OK, "", PAYMENT_CHARGED, 500},
    {CHG, 1, "sara", 1500, RPC_OK, "", PAYMENT_CHARGED, 500},
    {REF, 1, "sara", 1500, RPC_OK, "", PAYMENT_REFUNDED, 2000},
    {REF, 1, "sara", 1500, RPC_OK, "", PAYMENT_REFUNDED, 2000},
    {CHG, 1, "sara", 1500, RPC_OK, "", PAYMENT_CHARGED, 2000},
    /* refund before the charge: tombstone, the charge refused */
    {REF, 2, "bob", 100, RPC_OK, "", PAYMENT_TOMBSTONE, 100},
    {CHG, 2, "bob", 100, RPC_ABORTED, "tombstone", PAYMENT_TOMBSTONE, 100},
    {REF, 2, "bob", 100, RPC_OK, "", PAYMENT_TOMBSTONE, 100},
    /* same saga id, other amount / other customer */
    {CHG, 3, "sara", 1200, RPC_OK, "", PAYMENT_CHARGED, 800},
    {CHG, 3, "sara", 1300, RPC_ALREADY_EXISTS, "key_mismatch", PAYMENT_CHARGED, 800},
    {CHG, 3, "bob", 1200, RPC_ALREADY_EXISTS, "key_mismatch", PAYMENT_CHARGED, 100},
    {REF, 3, "sara", 1, RPC_ALREADY_EXISTS, "key_mismatch", PAYMENT_CHARGED, 800},
    {CHG, 2, "sara", 5, RPC_ABORTED, "tombstone", PAYMENT_TOMBSTONE, 800},
    {REF, 2, "sara", 5, RPC_ALREADY_EXISTS, "key_mismatch", PAYMENT_TOMBSTONE, 800},
    /* drained by earlier commands of this batch */
    {CHG, 4, "sara", 800, RPC_OK, "", PAYMENT_CHARGED, 0},
    {CHG, 5, "sara", 1, RPC_FAILED_PRECONDITION, "payment_declined", PAYMENT_DECLINED, 0},
    {CHG, 6, "bob", 101, RPC_FAILED_PRECONDITION, "payment_declined", PAYMENT_DECLINED, 100},
    /* unknown account, and its refund */
    {CHG, 7, CUSTOMER_UNKNOWN, 10, RPC_NOT_FOUND, "unknown_account", PAYMENT_UNKNOWN_ACCOUNT, 0},
    {CHG, 7, CUSTOMER_UNKNOWN, 10, RPC_NOT_FOUND, "unknown_account", PAYMENT_UNKNOWN_ACCOUNT, 0},
    {REF, 7, CUSTOMER_UNKNOWN, 10, RPC_OK, "", PAYMENT_UNKNOWN_ACCOUNT, 0},
    /* refund of a saga that never charged */
    {REF, 8, "sara", 10, RPC_OK, "", PAYMENT_TOMBSTONE, 0},
    /* declined is final */
    {REF, 5, "sara", 1, RPC_OK, "", PAYMENT_DECLINED, 0},
    {REF, 4, "sara", 800, RPC_OK, "", PAYMENT_REFUNDED, 800},
    {CHG, 5, "sara", 1, RPC_FAILED_PRECONDITION, "payment_declined", PAYMENT_DECLINED, 800},
    {CHG, 9, "sara", 800, RPC_OK, "", PAYMENT_CHARGED, 0},
    /* a customer whose name needs quoting */
    {CHG, 10, CUSTOMER_ODD, 3000, RPC_OK, "", PAYMENT_CHARGED, 0},
    {CHG, 11, CUSTOMER_ODD, 1, RPC_FAILED_PRECONDITION, "payment_declined", PAYMENT_DECLINED, 0},
    {REF, 10, CUSTOMER_ODD, 3000, RPC_OK, "", PAYMENT_REFUNDED, 3000},
    {CHG, 12, CUSTOMER_ODD, 2999, RPC_OK, "", PAYMENT_CHARGED, 1},
    /* give back, charge again */
    {REF, 3, "sara", 1200, RPC_OK, "", PAYMENT_REFUNDED, 1200},
    {REF, 9, "sara", 800, RPC_OK, "", PAYMENT_REFUNDED, 2000},
    {CHG, 13, "sara", 2000, RPC_OK, "", PAYMENT_CHARGED, 0},
    {CHG, 14, "sara", 1, RPC_FAILED_PRECONDITION, "payment_declined", PAYMENT_DECLINED, 0},
};
#define N_PAY_RULES (sizeof pay_rules / sizeof pay_rules[0])

static void pay_check_cases(
    const char *name, const pay_case *cases, const payment_batch_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const payment_outcome *o = &cmds[i].out;
		if (o->code == cases[i].code && strcmp(o->reason, cases[i].reason) == 0
		    && o->reply_status == cases[i].status && cmds[i].balance == cases[i].balance)
			continue;
		char d[512];
		pay_describe(d, sizeof d, &cmds[i], o, cmds[i].balance);
		fail_msg("%s: command %zu: got %s; expected code=%d reason=\"%s\" status=%s "
		         "balance=%lld",
		    name, i, d, cases[i].code, cases[i].reason,
		    payment_status_name(cases[i].status), (long long)cases[i].balance);
	}
}

static void pay_from_cases(payment_batch_cmd *cmds, const pay_case *cases, size_t n)
{
	memset(cmds, 0, n * sizeof *cmds);
	for (size_t i = 0; i < n; i++) {
		cmds[i].saga_id = saga_ids[cases[i].saga];
		cmds[i].cmd.op = cases[i].op;
		cmds[i].cmd.customer = cases[i].customer;
		cmds[i].cmd.amount = cases[i].amount;
	}
}

static void test_payment_rules(void **state)
{
	fixture *f = *state;
	payment_batch_cmd cmds[N_PAY_RULES];
	pay_reset(f);
	pay_from_cases(cmds, pay_rules, N_PAY_RULES);
	size_t one[] = {N_PAY_RULES};
	pay_run(f, "payment rules, one batch", cmds, N_PAY_RULES, one);
	pay_check_cases("payment rules, one batch", pay_rules, cmds, N_PAY_RULES);
	assert_int_equal(pay_balance(f, DB_PAY_A, "sara"), 0);
	assert_int_equal(pay_balance(f, DB_PAY_A, "bob"), 100);
	assert_int_equal(pay_balance(f, DB_PAY_A, CUSTOMER_ODD), 1);
	assert_int_equal(pay_balance(f, DB_PAY_A, "ali"), 50000);
	const char *rec_sql = "SELECT status || ' ' || customer || ' ' || amount FROM charges "
	                      "WHERE saga_id = $1::uuid";
	const char *want[][2]
	    = {{saga_ids[1], "REFUNDED sara 1500\n"}, {saga_ids[2], "TOMBSTONE bob 100\n"},
	        {saga_ids[3], "REFUNDED sara 1200\n"}, {saga_ids[5], "DECLINED sara 1\n"},
	        {saga_ids[7], "UNKNOWN_ACCOUNT ghost 10\n"}, {saga_ids[8], "TOMBSTONE sara 10\n"},
	        {saga_ids[10], "REFUNDED " CUSTOMER_ODD " 3000\n"},
	        {saga_ids[13], "CHARGED sara 2000\n"}, {saga_ids[14], "DECLINED sara 1\n"}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char *v = record_status(f, DB_PAY_A, rec_sql, want[i][0]);
		assert_string_equal(v, want[i][1]);
		free(v);
	}
	char *n = db_rows(f->admin[DB_PAY_A], "SELECT count(*) FROM charges", 0, NULL);
	assert_string_equal(n, "14\n");
	free(n);
	pay_check_conserved(f);

	size_t sizes[N_PAY_RULES];
	for (size_t w = 1; w <= 4; w++) {
		pay_reset(f);
		pay_from_cases(cmds, pay_rules, N_PAY_RULES);
		if (w == 4) {
			rng_state = 0x5eed;
			(void)random_cuts(sizes, N_PAY_RULES, 8);
		} else {
			size_t k = 0;
			for (size_t done = 0; done < N_PAY_RULES; done += sizes[k++])
				sizes[k] = done + w <= N_PAY_RULES ? w : N_PAY_RULES - done;
		}
		char name[64];
		snprintf(name, sizeof name, "payment rules, batches of %zu%s", w,
		    w == 4 ? " (random)" : "");
		pay_run(f, name, cmds, N_PAY_RULES, sizes);
		pay_check_cases(name, pay_rules, cmds, N_PAY_RULES);
		pay_check_conserved(f);
	}
}

/* RPC_BATCH_MAX commands on one account: 64 charges of 1.00 against 50.00,
 * then every refund, in reverse. */
static void test_payment_one_account(void **state)
{
	fixture *f = *state;
	pay_reset(f);
	payment_batch_cmd cmds[RPC_BATCH_MAX];
	memset(cmds, 0, sizeof cmds);
	for (int i = 0; i < 64; i++) {
		cmds[i].saga_id = saga_ids[i];
		cmds[i].cmd = (payment_cmd) {PAYMENT_OP_CHARGE, "many", 100};
		cmds[64 + i].saga_id = saga_ids[63 - i];
		cmds[64 + i].cmd = (payment_cmd) {PAYMENT_OP_REFUND, "many", 100};
	}
	size_t one[] = {RPC_BATCH_MAX};
	pay_run(f, "payment one account", cmds, RPC_BATCH_MAX, one);
	for (int i = 0; i < 64; i++) {
		if (i < 50) {
			assert_int_equal(cmds[i].out.code, RPC_OK);
			assert_int_equal(cmds[i].balance, (49 - i) * 100);
		} else {
			assert_int_equal(cmds[i].out.code, RPC_FAILED_PRECONDITION);
			assert_string_equal(cmds[i].out.reason, "payment_declined");
			assert_int_equal(cmds[i].balance, 0);
		}
		const payment_batch_cmd *r = &cmds[64 + i];
		assert_int_equal(r->out.code, RPC_OK);
		assert_int_equal(r->out.reply_status, i < 14 ? PAYMENT_DECLINED : PAYMENT_REFUNDED);
		assert_int_equal(r->balance, i < 14 ? 0 : (i - 13) * 100);
	}
	assert_int_equal(pay_balance(f, DB_PAY_A, "many"), 5000);
	pay_run(f, "payment one account, again", cmds, RPC_BATCH_MAX, one);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(cmds[i].out.code, i < 50 ? RPC_OK : RPC_FAILED_PRECONDITION);
		assert_int_equal(cmds[i].balance, 5000);
	}
	assert_int_equal(pay_balance(f, DB_PAY_A, "many"), 5000);
	pay_check_conserved(f);
}

static void pay_random(fixture *f, uint64_t seed, size_t n, int n_ids, uint32_t max_batch)
{
	static payment_batch_cmd cmds[1000];
	static size_t sizes[1000];
	static const int64_t amounts[] = {100, 700, 1500, 2500};
	assert_true(n <= 1000 && n_ids <= N_IDS);
	rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
	pay_reset(f);
	memset(cmds, 0, sizeof cmds);
	for (size_t i = 0; i < n; i++) {
		int k = (int)rnd((uint32_t)n_ids);
		/* sara, ODD and bob have little money; ali plenty */
		const char *customer = pay_customers[k % 4];
		int64_t amount = amounts[k % 4];
		uint32_t r = rnd(100);
		if (r < 8)
			customer = rnd(4) == 0 ? CUSTOMER_UNKNOWN : pay_customers[rnd(4)];
		else if (r < 16)
			amount = amounts[rnd(4)] + (int64_t)rnd(2);
		cmds[i].saga_id = saga_ids[k];
		cmds[i].cmd.op = rnd(100) < 55 ? PAYMENT_OP_CHARGE : PAYMENT_OP_REFUND;
		cmds[i].cmd.customer = customer;
		cmds[i].cmd.amount = amount;
	}
	random_cuts(sizes, n, max_batch);
	char name[96];
	snprintf(name, sizeof name,
	    "payment random seed %llu (%zu commands, %d ids, batches 1..%u)",
	    (unsigned long long)seed, n, n_ids, max_batch);
	pay_run(f, name, cmds, n, sizes);
	pay_check_conserved(f);
}

static void test_payment_random(void **state)
{
	fixture *f = *state;
	tally_reset();
	for (uint64_t seed = 1; seed <= 8; seed++)
		pay_random(f, seed, 200, 20, RPC_BATCH_MAX);
	for (uint64_t seed = 101; seed <= 104; seed++)
		pay_random(f, seed, 200, 20, 12);
	for (uint64_t seed = 201; seed <= 202; seed++)
		pay_random(f, seed, 1000, 120, RPC_BATCH_MAX);
	static const char *const want[]
	    = {"", "payment_declined", "unknown_account", "tombstone", "key_mismatch"};
	expect_seen("payment random", want, 5);
}

/* The sequences above took A's one-round-trip path and, with stale cached
 * values or recorded saga ids, its fallback to the locking path: both were
 * compared with B. Runs after them (cmocka runs a group in order). */
static void test_fast_path_covered(void **state)
{
	(void)state;
	print_message("one-round-trip path: stock %" PRIu64 " committed, %" PRIu64
	              " failed over; payment %" PRIu64 " committed, %" PRIu64 " failed over\n",
	    stock_fast, stock_fast_failed, pay_fast, pay_fast_failed);
	assert_true(stock_fast > 0);
	assert_true(stock_fast_failed > 0);
	assert_true(pay_fast > 0);
	assert_true(pay_fast_failed > 0);
}

int main(void)
{
	make_ids();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stock_rules),
	    cmocka_unit_test(test_stock_one_sku),
	    cmocka_unit_test(test_stock_random),
	    cmocka_unit_test(test_payment_rules),
	    cmocka_unit_test(test_payment_one_account),
	    cmocka_unit_test(test_payment_random),
	    cmocka_unit_test(test_fast_path_covered),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}

/* sim_feed: a deterministic simulation of the history feed's rule
 * (orchestrator/core/store_feed.c, docs/protocol.md "The history feed") over a
 * model of PostgreSQL's transaction ids and snapshots:
 *   - a transaction gets its id at its first write, from one counter, and
 *     commits or aborts later, in any order with the others;
 *   - a saga's next version is written by a transaction that begins after
 *     the one that wrote the version before committed (the version check);
 *   - a snapshot is (xmin, xmax, the ids in progress); an id is visible in
 *     it when below xmax and not in progress (pg_visible_in_snapshot);
 *   - a follower reads pages of `limit` rows: the committed rows whose
 *     transaction is visible in a later snapshot and not in its cursor's,
 *     by (xid, saga, version), going on after the last key of a cut page
 *     under the same two snapshots; it restarts from its saved cursor.
 * Checks, once every transaction has ended and the follower caught up:
 * every committed row delivered exactly once, no aborted row, each saga's
 * rows in version order. The follower catches up as clients do: it reads
 * pages while the reply says `more` (feed_page_more, the production rule
 * of orchestrator/core/feed_cursor.h) and stops at the first that does not.
 * `--break max_xid` replaces the snapshots by "after the highest id seen"
 * (the classic bug); `--break chain_end` says `more` false at the end of a
 * run of pages begun under an earlier snapshot, so a client stops short of
 * what committed since (the bug of a WatchHistory that CI's history_feed
 * test caught): the checks must catch both (`--expect-violation`). Usage:
 * sim_feed [--seeds A..B] [--break max_xid|chain_end] [--expect-violation].
 * Exit 0 when the expectation holds. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_cursor.h"

#define MAX_TX   64
#define MAX_ROWS 256
#define SAGAS    6

typedef struct row {
	int tx, saga, version;
	long xid;
	bool delivered_once, delivered_twice;
} row;

typedef struct snap {
	long xmin, xmax;
	bool in_progress[MAX_TX * 2 + 2]; /* by xid */
} snap;

typedef struct world {
	uint64_t rng;
	long next_xid;
	int ntx;
	long xid_of[MAX_TX];  /* 0 until its first write */
	int state_of[MAX_TX]; /* 0 running, 1 committed, 2 aborted */
	int nrows;
	row rows[MAX_ROWS];
	int saga_version[SAGAS]; /* the last committed version */
	int saga_writer[SAGAS];  /* the tx writing its next version, or -1 */
	/* the follower's cursor */
	snap seen, later;
	bool has_later;
	long key_xid;
	int key_saga, key_version;
	long max_xid_seen; /* the broken variant's cursor */
	int last_version[SAGAS];
	bool order_broken;
} world;

/* the broken variants: max_xid (a cursor of ids alone), chain_end (`more`
 * false at the end of a run of pages begun under an earlier snapshot) */
static bool broken, broken_chain_end;

/* the reply's `more`: the production rule, or the broken variant's */
static bool page_more(bool cut, bool from_has_next)
{
	return broken_chain_end ? cut : feed_page_more(cut, from_has_next);
}

static uint32_t rnd(world *w, uint32_t n)
{
	w->rng ^= w->rng << 13, w->rng ^= w->rng >> 7, w->rng ^= w->rng << 17;
	return (uint32_t)(w->rng % n);
}

static void take_snapshot(const world *w, snap *s)
{
	memset(s, 0, sizeof *s);
	s->xmax = w->next_xid;
	s->xmin = w->next_xid;
	for (int t = 0; t < w->ntx; t++)
		if (w->xid_of[t] && w->state_of[t] == 0) {
			s->in_progress[w->xid_of[t]] = true;
			if (w->xid_of[t] < s->xmin)
				s->xmin = w->xid_of[t];
		}
}

static bool visible(const snap *s, long xid)
{
	return xid < s->xmax && !s->in_progress[xid];
}

static int cmp_key(long x1, int s1, int v1, long x2, int s2, int v2)
{
	return x1 != x2 ? (x1 < x2 ? -1 : 1)
	    : s1 != s2  ? (s1 < s2 ? -1 : 1)
	                : (v1 > v2) - (v1 < v2);
}

static void deliver(world *w, row *r)
{
	if (r->delivered_once)
		r->delivered_twice = true;
	r->delivered_once = true;
	if (r->version <= w->last_version[r->saga])
		w->order_broken = true;
	w->last_version[r->saga] = r->version;
}

/* one page of the feed; returns whether more are ready */
static bool poll_page(world *w, int limit)
{
	if (broken) {
		/* the committed rows after the highest id seen, by id */
		int got = 0;
		for (long x = w->max_xid_seen + 1; x < w->next_xid && got < limit; x++)
			for (int i = 0; i < w->nrows; i++)
				if (w->rows[i].xid == x && w->state_of[w->rows[i].tx] == 1) {
					deliver(w, &w->rows[i]);
					w->max_xid_seen = x;
					got++;
				}
		return false;
	}
	bool from_has_next = w->has_later; /* the cursor names a later snapshot */
	if (!w->has_later)
		take_snapshot(w, &w->later); /* the reading statement's own */
	int got = 0;
	row *last = NULL;
	for (;;) {
		row *best = NULL; /* the smallest key after the cursor's */
		for (int i = 0; i < w->nrows; i++) {
			row *r = &w->rows[i];
			if (w->state_of[r->tx] != 1 || !visible(&w->later, r->xid)
			    || visible(&w->seen, r->xid))
				continue;
			if (w->has_later
			    && cmp_key(r->xid, r->saga, r->version, w->key_xid, w->key_saga,
			           w->key_version)
			        <= 0)
				continue;
			if (best == NULL
			    || cmp_key(r->xid, r->saga, r->version, best->xid, best->saga,
			           best->version)
			        < 0)
				best = r;
		}
		if (best == NULL)
			break;
		if (got == limit) {
			/* cut: the cursor names both snapshots and the last key */
			w->has_later = true;
			w->key_xid = last->xid, w->key_saga = last->saga,
			w->key_version = last->version;
			return page_more(true, from_has_next);
		}
		deliver(w, best);
		last = best;
		got++;
		w->has_later = true; /* the key below is set as rows go */
		w->key_xid = best->xid, w->key_saga = best->saga, w->key_version = best->version;
	}
	w->seen = w->later;
	w->has_later = false;
	return page_more(false, from_has_next);
}

/* a step of the world: a transaction begins writing, commits or aborts, or
 * the follower reads (or restarts: its cursor is all it keeps) */
static void step(world *w)
{
	uint32_t what = rnd(w, 10);
	if (what < 3 && w->ntx < MAX_TX && w->nrows < MAX_ROWS - SAGAS) {
		int t = w->ntx++;
		/* it writes the next version of 1..3 free sagas (or of none) */
		int n = 1 + (int)rnd(w, 3);
		for (int k = 0; k < n; k++) {
			int s = (int)rnd(w, SAGAS);
			if (w->saga_writer[s] != -1)
				continue;
			if (w->xid_of[t] == 0)
				w->xid_of[t] = w->next_xid++;
			w->saga_writer[s] = t;
			row *r = &w->rows[w->nrows++];
			memset(r, 0, sizeof *r);
			r->tx = t, r->saga = s, r->version = w->saga_version[s] + 1;
			r->xid = w->xid_of[t];
		}
		/* without a write it never gets an id, and ends at once */
		if (w->xid_of[t] == 0)
			w->state_of[t] = 1;
	} else if (what < 7) {
		/* end a running transaction: commit mostly */
		int t = (int)rnd(w, (uint32_t)(w->ntx ? w->ntx : 1));
		if (t < w->ntx && w->state_of[t] == 0 && w->xid_of[t]) {
			bool commit = rnd(w, 5) != 0;
			w->state_of[t] = commit ? 1 : 2;
			for (int s = 0; s < SAGAS; s++)
				if (w->saga_writer[s] == t) {
					w->saga_writer[s] = -1;
					if (commit)
						w->saga_version[s]++;
				}
		}
	} else {
		poll_page(w, 1 + (int)rnd(w, 4));
	}
}

/* runs seed `seed`; returns true when every check holds */
static bool run(uint64_t seed, bool verbose)
{
	world *w = calloc(1, sizeof *w);
	if (w == NULL)
		return false;
	w->rng = seed * 2654435761u + 1;
	w->next_xid = 1;
	for (int s = 0; s < SAGAS; s++)
		w->saga_writer[s] = -1;
	w->seen.xmin = w->seen.xmax = 1; /* "1:1:": nothing seen */
	/* a random length: the pool of MAX_TX transactions fills in ~200
	 * steps, after which nothing is in progress any more; a run cut short
	 * leaves transactions running and a follower mid-run for the end */
	int steps = 40 + (int)rnd(w, 360);
	for (int i = 0; i < steps; i++)
		step(w);
	/* end every transaction, then catch up */
	for (int t = 0; t < w->ntx; t++)
		if (w->state_of[t] == 0) {
			w->state_of[t] = 1;
			for (int s = 0; s < SAGAS; s++)
				if (w->saga_writer[s] == t)
					w->saga_writer[s] = -1, w->saga_version[s]++;
		}
	/* as a client does: pages while the reply says more (sagactl watch
	 * without --follow), then stops */
	while (poll_page(w, 3))
		;
	bool ok = !w->order_broken;
	for (int i = 0; i < w->nrows; i++) {
		const row *r = &w->rows[i];
		bool committed = w->state_of[r->tx] == 1;
		if (r->delivered_twice || committed != r->delivered_once) {
			if (verbose)
				printf("seed %llu: row of tx %d (xid %ld, saga %d v%d, %s) "
				       "delivered %s\n",
				    (unsigned long long)seed, r->tx, r->xid, r->saga, r->version,
				    committed ? "committed" : "aborted",
				    r->delivered_twice      ? "twice"
				        : r->delivered_once ? "once"
				                            : "never");
			ok = false;
		}
	}
	if (w->order_broken && verbose)
		printf("seed %llu: a saga's rows out of version order\n", (unsigned long long)seed);
	free(w);
	return ok;
}

int main(int argc, char **argv)
{
	unsigned long long a = 1, b = 2000;
	bool expect_violation = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc
		    && sscanf(argv[++i], "%llu..%llu", &a, &b) == 2 && a <= b)
			continue;
		else if (!strcmp(argv[i], "--break") && i + 1 < argc
		    && !strcmp(argv[i + 1], "max_xid"))
			broken = true, i++;
		else if (!strcmp(argv[i], "--break") && i + 1 < argc
		    && !strcmp(argv[i + 1], "chain_end"))
			broken_chain_end = true, i++;
		else if (!strcmp(argv[i], "--expect-violation"))
			expect_violation = true;
		else {
			fprintf(stderr,
			    "usage: sim_feed [--seeds A..B] [--break max_xid|chain_end] "
			    "[--expect-violation]\n");
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	unsigned long long bad = 0;
	for (unsigned long long s = a; s <= b; s++)
		if (!run(s, bad == 0))
			bad++;
	printf("sim_feed%s: %llu seeds, %llu with a violation\n",
	    broken                 ? " (max_xid)"
	        : broken_chain_end ? " (chain_end)"
	                           : "",
	    b - a + 1, bad);
	return expect_violation ? (bad > 0 ? 0 : 1) : (bad == 0 ? 0 : 1);
}

#include "waits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>
#include <uthash.h>

#include "clock.h"
#include "codec.h"
#include "log.h"

/* How often the timer thread looks for calls whose wait ran out: the
 * precision of a wait's end (a long poll, so 50 ms late is harmless). */
#define WAITS_TICK_MS 50

/* One waiting call. */
typedef struct waiter {
	struct waiter *next; /* the saga's other waiting calls */
	rpc_held *held;
	uint32_t pipe; /* the client connection it came on */
	uint64_t ticket;
	waits_as as;
	saga_row row;        /* as read when the wait began */
	int64_t deadline_ms; /* clock_mono_ms */
} waiter;

/* The waiting calls of one saga: a uthash entry keyed by saga id. */
typedef struct waits_saga {
	char saga_id[VALID_UUID_LEN + 1];
	waiter *list;
	UT_hash_handle hh;
} waits_saga;

struct waits {
	nng_mtx *mtx; /* guards everything below */
	nng_cv *cv;
	waits_saga *by_saga; /* uthash head */
	size_t count, max;
	uint64_t next_ticket;
	uint32_t *gone; /* connections closed, to drop the calls of */
	size_t n_gone, cap_gone;
	bool closed;
	nng_thread *timer;
};

void waits_reply(rpc_held *h, const saga_row *row, bool finished, const waits_as *as)
{
	rpc_reply reply = {0};
	if (as->start)
		codec_reply_start(&reply, row, as->created, finished);
	else
		codec_reply_wait(&reply, row, finished);
	rpc_held_reply(h, &reply);
}

/* waits_unlink removes `x` from its saga's list; the caller holds mtx. */
static void waits_unlink(waits *w, waits_saga *s, waiter *x)
{
	for (waiter **p = &s->list; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			break;
		}
	w->count--;
	if (s->list == NULL) {
		HASH_DEL(w->by_saga, s);
		free(s);
	}
}

/* waits_gone is true when `x` came on a connection that closed; the caller
 * holds mtx. */
static bool waits_gone(const waits *w, const waiter *x)
{
	for (size_t i = 0; i < w->n_gone; i++)
		if (w->gone[i] == x->pipe)
			return true;
	return false;
}

/* waits_expire answers the calls whose wait ran out or whose connection
 * closed (all of them when `all`), outside the lock. */
static void waits_expire(waits *w, bool all)
{
	waiter *due = NULL;
	int64_t now = clock_mono_ms();
	nng_mtx_lock(w->mtx);
	waits_saga *s, *tmp;
	HASH_ITER(hh, w->by_saga, s, tmp)
	{
		waiter *x = s->list;
		while (x != NULL) {
			waiter *next = x->next;
			if (all || x->deadline_ms <= now || waits_gone(w, x)) {
				waits_unlink(w, s, x); /* may free s: the loop ends with x */
				x->next = due;
				due = x;
			}
			x = next;
		}
	}
	w->n_gone = 0;
	nng_mtx_unlock(w->mtx);
	while (due != NULL) {
		waiter *x = due;
		due = x->next;
		/* to a closed connection this goes nowhere, and frees the context */
		waits_reply(x->held, &x->row, false, &x->as);
		free(x);
	}
}

static void waits_timer_main(void *arg)
{
	waits *w = arg;
	nng_mtx_lock(w->mtx);
	while (!w->closed) {
		nng_cv_until(w->cv, nng_clock() + WAITS_TICK_MS);
		if (w->closed || (w->count == 0 && w->n_gone == 0))
			continue;
		nng_mtx_unlock(w->mtx);
		waits_expire(w, false);
		nng_mtx_lock(w->mtx);
	}
	nng_mtx_unlock(w->mtx);
}

int waits_open(waits **out, size_t max)
{
	waits *w = calloc(1, sizeof *w);
	if (w == NULL)
		return -ENOMEM;
	w->max = max ? max : 1;
	if (nng_mtx_alloc(&w->mtx) != 0)
		goto out_free;
	if (nng_cv_alloc(&w->cv, w->mtx) != 0)
		goto out_mtx;
	if (nng_thread_create(&w->timer, waits_timer_main, w) != 0)
		goto out_cv;
	*out = w;
	return 0;
out_cv:
	nng_cv_free(w->cv);
out_mtx:
	nng_mtx_free(w->mtx);
out_free:
	free(w);
	return -ENOMEM;
}

int waits_add(waits *w, rpc_held *h, const saga_row *row, int64_t deadline_ms, const waits_as *as,
    uint64_t *ticket)
{
	waiter *x = calloc(1, sizeof *x);
	if (x == NULL)
		return -ENOMEM;
	x->held = h;
	x->pipe = rpc_held_pipe(h);
	x->as = *as;
	x->row = *row;
	x->deadline_ms = deadline_ms;
	nng_mtx_lock(w->mtx);
	int rc = w->closed ? -ESHUTDOWN : w->count >= w->max ? -EBUSY : 0;
	waits_saga *s = NULL;
	if (rc == 0) {
		HASH_FIND_STR(w->by_saga, row->saga_id, s);
		if (s == NULL) {
			s = calloc(1, sizeof *s);
			if (s == NULL) {
				rc = -ENOMEM;
			} else {
				memcpy(s->saga_id, row->saga_id, sizeof s->saga_id);
				HASH_ADD_STR(w->by_saga, saga_id, s);
			}
		}
	}
	if (rc == 0) {
		x->next = s->list;
		s->list = x;
		w->count++;
		x->ticket = *ticket = ++w->next_ticket;
	}
	nng_mtx_unlock(w->mtx);
	if (rc != 0)
		free(x);
	return rc;
}

bool waits_take(waits *w, uint64_t ticket, const char *saga_id)
{
	bool found = false;
	nng_mtx_lock(w->mtx);
	waits_saga *s = NULL;
	HASH_FIND_STR(w->by_saga, saga_id, s);
	for (waiter *x = s ? s->list : NULL; x; x = x->next)
		if (x->ticket == ticket) {
			waits_unlink(w, s, x);
			free(x);
			found = true;
			break;
		}
	nng_mtx_unlock(w->mtx);
	return found;
}

void waits_finished(waits *w, const saga_row *row)
{
	nng_mtx_lock(w->mtx);
	waits_saga *s = NULL;
	HASH_FIND_STR(w->by_saga, row->saga_id, s);
	waiter *list = NULL;
	if (s != NULL) {
		list = s->list;
		for (waiter *x = list; x; x = x->next)
			w->count--;
		HASH_DEL(w->by_saga, s);
		free(s);
	}
	nng_mtx_unlock(w->mtx);
	while (list != NULL) {
		waiter *x = list;
		list = x->next;
		waits_reply(x->held, row, saga_is_terminal(row->s.state), &x->as);
		free(x);
	}
}

bool waits_has(waits *w, const char *saga_id)
{
	nng_mtx_lock(w->mtx);
	waits_saga *s = NULL;
	HASH_FIND_STR(w->by_saga, saga_id, s);
	nng_mtx_unlock(w->mtx);
	return s != NULL;
}

int waits_ids(waits *w, char (**ids)[VALID_UUID_LEN + 1], size_t *n)
{
	*ids = NULL;
	*n = 0;
	nng_mtx_lock(w->mtx);
	size_t count = HASH_COUNT(w->by_saga);
	int rc = 0;
	if (count > 0) {
		*ids = malloc(count * sizeof **ids);
		if (*ids == NULL) {
			rc = -ENOMEM;
		} else {
			waits_saga *s, *tmp;
			HASH_ITER(hh, w->by_saga, s, tmp)
			{
				memcpy((*ids)[*n], s->saga_id, sizeof s->saga_id);
				(*n)++;
			}
		}
	}
	nng_mtx_unlock(w->mtx);
	return rc;
}

void waits_pipe_closed(waits *w, uint32_t pipe)
{
	nng_mtx_lock(w->mtx);
	if (w->n_gone == w->cap_gone) {
		size_t cap = w->cap_gone ? 2 * w->cap_gone : 16;
		uint32_t *g = realloc(w->gone, cap * sizeof *g);
		if (g != NULL) {
			w->gone = g;
			w->cap_gone = cap;
		}
	}
	/* out of memory: its calls wait until their wait runs out instead */
	if (w->n_gone < w->cap_gone)
		w->gone[w->n_gone++] = pipe;
	nng_cv_wake(w->cv);
	nng_mtx_unlock(w->mtx);
}

size_t waits_count(waits *w)
{
	nng_mtx_lock(w->mtx);
	size_t n = w->count;
	nng_mtx_unlock(w->mtx);
	return n;
}

void waits_close(waits *w)
{
	if (w == NULL)
		return;
	nng_mtx_lock(w->mtx);
	w->closed = true;
	nng_cv_wake(w->cv);
	nng_mtx_unlock(w->mtx);
	nng_thread_destroy(w->timer); /* joins */
	w->timer = NULL;
	waits_expire(w, true);
}

void waits_free(waits *w)
{
	if (w == NULL)
		return;
	if (w->timer != NULL)
		waits_close(w);
	nng_cv_free(w->cv);
	nng_mtx_free(w->mtx);
	free(w->gone);
	free(w);
}

/* run: sagabench's clients, its seeding and the run itself. Every call is
 * asynchronous (rpc_call_async: one nng context per call in flight); the
 * callbacks only queue results, one thread (bench_run's) decides. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "tls.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"
#include "valid.h"

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv; /* on CLOCK_MONOTONIC: see bench_init */
static done_item *q_head, *q_tail;
static int calls_in_flight;

static long polls_in_flight;
static int32_t pq_head = -1, pq_tail = -1; /* polls due, in time order */

/* The longest wait of one WaitSaga (ms); the call's timeout adds
 * --call-timeout to it. */
#define BENCH_WAIT_MS 10000

void bench_init(bench *b)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the waits use now_us() */
	pthread_cond_init(&cv, &ca);
	pthread_condattr_destroy(&ca);
	srand((unsigned)(now_us() ^ getpid()));
	b->run_hi = ((uint32_t)rand() << 16) ^ (uint32_t)rand() ^ (uint32_t)getpid();
	snprintf(b->tag, sizeof b->tag, "bench-%08x", b->run_hi);
}

/* bench_open opens a client of `list` (one URL or a comma-separated list
 * of replicas', already checked; connecting now), parsed into *u (the
 * caller frees it with rpc_urls_free after closing the client) with a TLS
 * configuration from the --tls-* files for each tls+tcp:// entry.
 * Returns 0 or a negative errno. */
static int bench_open(rpc_client **out, const char *list, rpc_urls *u)
{
	rpc_client_opts co = {.connect_now = true};
	char err[1024];
	if (rpc_urls_parse(u, list, err, sizeof err) != 0)
		die(2, "invalid URL %s", err);
	tls_files f = {.cert = opt.tls_cert, .key = opt.tls_key, .ca = opt.tls_ca};
	if (rpc_urls_tls_entry(u) != NULL && rpc_urls_tls(u, &f, err, sizeof err) != 0)
		die(2, "%s: %s", list, err);
	return rpc_client_open_urls(out, u, &co);
}

void bench_connect(bench *b)
{
	int rc;
	if ((rc = bench_open(&b->orch, opt.orch, &b->urls[0])) != 0)
		die(3, "cannot reach orchestratord at %s: %s", opt.orch, strerror(-rc));
	if ((rc = bench_open(&b->stock, opt.stock, &b->urls[1])) != 0)
		die(3, "cannot reach stockd at %s: %s", opt.stock, strerror(-rc));
	if ((rc = bench_open(&b->pay, opt.payment, &b->urls[2])) != 0)
		die(3, "cannot reach paymentd at %s: %s", opt.payment, strerror(-rc));
}

void bench_plan(bench *b)
{
	/* the sagas: kinds spread evenly through the run */
	b->slots = calloc((size_t)opt.n, sizeof *b->slots);
	if (!b->slots)
		die(3, "out of memory for %ld sagas", opt.n);
	long n_bad = 0;
	b->sku_need = calloc((size_t)opt.skus, sizeof *b->sku_need);
	b->cust_need = calloc((size_t)opt.customers, sizeof *b->cust_need);
	if (!b->sku_need || !b->cust_need)
		die(3, "out of memory");
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &b->slots[i];
		snprintf(s->id, sizeof s->id, "%08x-%04x-4%03x-8%03x-%012lx", b->run_hi,
		    (unsigned)(rand() & 0xffff), (unsigned)(rand() & 0xfff),
		    (unsigned)(rand() & 0xfff), (unsigned long)i & 0xffffffffffffUL);
		s->next_q = -1;
		/* Bresenham-style: the bad ones are spread evenly */
		long want_bad = (long)floor(opt.mix * (double)(i + 1));
		if (want_bad > n_bad) {
			s->kind = (n_bad % 2 == 0) ? K_OOS : K_DECLINE;
			n_bad++;
		}
		s->sku = s->kind == K_OOS ? -1 : (int)(i % opt.skus);
		s->customer = s->kind == K_DECLINE ? -1 : (int)((i / opt.skus + i) % opt.customers);
		if (s->sku >= 0)
			b->sku_need[s->sku] += opt.qty;
		if (s->customer >= 0)
			b->cust_need[s->customer] += opt.amount;
	}
}

/* ---- synchronous admin calls ---- */

void call_sync(rpc_client *c, const char *what, const char *method, const ProtobufCMessage *req,
    rpc_result *res)
{
	int rc = rpc_call(c, method, req, opt.call_timeout_ms, res);
	if (rc != 0)
		die(3, "%s: could not send (error %d)", what, rc);
	if (res->code != RPC_OK)
		die(3, "%s: %s%s%s: %s", what, rpc_code_name(res->code), res->reason[0] ? " " : "",
		    res->reason, res->message);
}

static void set_stock(rpc_client *c, const char *sku, int64_t on_hand)
{
	Sagas__V1__SetStockRequest m = SAGAS__V1__SET_STOCK_REQUEST__INIT;
	m.sku = (char *)sku;
	m.on_hand = on_hand;
	rpc_result res;
	call_sync(c, "seeding stock (SetStock)", "/sagas.v1.Stock/SetStock", &m.base, &res);
	rpc_result_clear(&res);
}

static void deposit(rpc_client *c, const char *customer, int64_t amount)
{
	Sagas__V1__DepositRequest m = SAGAS__V1__DEPOSIT_REQUEST__INIT;
	m.customer = (char *)customer;
	m.amount = amount;
	char id[VALID_UUID_LEN + 1];
	saga_id_new(id); /* its idempotency key: a duplicate would add nothing */
	m.deposit_id = id;
	rpc_result res;
	call_sync(c, "seeding accounts (Deposit)", "/sagas.v1.Payment/Deposit", &m.base, &res);
	rpc_result_clear(&res);
}

void bench_seed(bench *b)
{
	/* seed: enough for every good saga, plus a margin; the out-of-stock sku
	 * has none, the broke customer less than one order */
	b->sku_init = calloc((size_t)opt.skus, sizeof *b->sku_init);
	b->cust_init = calloc((size_t)opt.customers, sizeof *b->cust_init);
	if (!b->sku_init || !b->cust_init)
		die(3, "out of memory");
	char name[64];
	for (long k = 0; k < opt.skus; k++) {
		b->sku_init[k] = b->sku_need[k] + 10;
		snprintf(name, sizeof name, "%s-sku-%ld", b->tag, k);
		set_stock(b->stock, name, b->sku_init[k]);
	}
	snprintf(name, sizeof name, "%s-oos", b->tag);
	set_stock(b->stock, name, 0);
	for (long k = 0; k < opt.customers; k++) {
		b->cust_init[k] = b->cust_need[k] + 1000;
		snprintf(name, sizeof name, "%s-cust-%ld", b->tag, k);
		deposit(b->pay, name, b->cust_init[k]);
	}
	snprintf(name, sizeof name, "%s-broke", b->tag);
	deposit(b->pay, name, opt.amount > 1 ? opt.amount - 1 : 1);
	b->broke_init = opt.amount > 1 ? opt.amount - 1 : 1;
}

/* ---- the calls in flight ---- */

static void push_done(done_item *d)
{
	d->t_us = now_us();
	pthread_mutex_lock(&mtx);
	d->next = NULL;
	if (q_tail)
		q_tail->next = d;
	else
		q_head = d;
	q_tail = d;
	calls_in_flight--;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mtx);
}

static int saga_state_of(const Sagas__V1__Saga *s, int64_t *updated)
{
	*updated = s ? s->updated_unix_ms : 0;
	return s ? (int)s->state : 0;
}

static void on_start(void *arg, const rpc_result *res)
{
	done_item *d = arg;
	d->code = res->code;
	d->transport = res->transport;
	memcpy(d->reason, res->reason, sizeof d->reason);
	if (res->code == RPC_OK) {
		Sagas__V1__StartSagaReply *r
		    = sagas__v1__start_saga_reply__unpack(NULL, res->payload_len, res->payload);
		if (r) {
			d->state = saga_state_of(r->saga, &d->updated_ms);
			sagas__v1__start_saga_reply__free_unpacked(r, NULL);
		} else {
			d->code = RPC_INTERNAL;
			snprintf(d->reason, sizeof d->reason, "bad_reply");
		}
	}
	push_done(d);
}

static void on_get(void *arg, const rpc_result *res)
{
	done_item *d = arg;
	d->code = res->code;
	d->transport = res->transport;
	memcpy(d->reason, res->reason, sizeof d->reason);
	if (res->code == RPC_OK) {
		if (opt.detect == DETECT_POLL) {
			Sagas__V1__GetSagaReply *r = sagas__v1__get_saga_reply__unpack(
			    NULL, res->payload_len, res->payload);
			if (r) {
				d->state = saga_state_of(r->saga, &d->updated_ms);
				sagas__v1__get_saga_reply__free_unpacked(r, NULL);
			} else {
				d->code = RPC_INTERNAL;
			}
		} else {
			Sagas__V1__WaitSagaReply *r = sagas__v1__wait_saga_reply__unpack(
			    NULL, res->payload_len, res->payload);
			if (r) {
				d->state = saga_state_of(r->saga, &d->updated_ms);
				sagas__v1__wait_saga_reply__free_unpacked(r, NULL);
			} else {
				d->code = RPC_INTERNAL;
			}
		}
	}
	push_done(d);
}

/* send_start sends saga i's StartSaga. `due_us` (monotonic us; 0 = now) is
 * when the load model wanted it sent: in open loop a send that comes late
 * (this thread was not scheduled in time) counts from its due time, so the
 * delay is in the latency and not hidden (coordinated omission). */
static void send_start(bench *b, int32_t i, int64_t due_us)
{
	saga_slot *s = &b->slots[i];
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	char sku[64], cust[64];
	if (s->sku < 0)
		snprintf(sku, sizeof sku, "%s-oos", b->tag);
	else
		snprintf(sku, sizeof sku, "%s-sku-%d", b->tag, s->sku);
	if (s->customer < 0)
		snprintf(cust, sizeof cust, "%s-broke", b->tag);
	else
		snprintf(cust, sizeof cust, "%s-cust-%d", b->tag, s->customer);
	o.customer = cust;
	o.sku = sku;
	o.qty = opt.qty;
	o.amount = opt.amount;
	Sagas__V1__StartSagaRequest m = SAGAS__V1__START_SAGA_REQUEST__INIT;
	m.saga_id = s->id;
	m.order = &o;
	if (opt.detect == DETECT_START)
		m.wait_ms = BENCH_WAIT_MS;
	done_item *d = calloc(1, sizeof *d);
	if (!d)
		die(3, "out of memory");
	d->idx = i;
	d->is_start = true;
	if (s->start_tries == 0) {
		int64_t now = now_us();
		s->t_sent_us = due_us > 0 && due_us < now ? due_us : now;
		s->t_sent_wall = wall_ms();
	}
	s->start_tries++;
	s->phase = P_STARTING;
	pthread_mutex_lock(&mtx);
	calls_in_flight++;
	pthread_mutex_unlock(&mtx);
	int rc = rpc_call_async(b->orch, "/sagas.v1.Orchestrator/StartSaga", &m.base,
	    opt.call_timeout_ms + (m.wait_ms ? BENCH_WAIT_MS : 0), on_start, d);
	if (rc != 0)
		die(3, "StartSaga: could not send (error %d)", rc);
}

static void send_get(bench *b, int32_t i)
{
	Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	Sagas__V1__WaitSagaRequest w = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	m.saga_id = w.saga_id = b->slots[i].id;
	w.wait_ms = BENCH_WAIT_MS;
	done_item *d = calloc(1, sizeof *d);
	if (!d)
		die(3, "out of memory");
	d->idx = i;
	b->slots[i].phase = P_POLLING;
	b->slots[i].t_asked_us = now_us();
	polls_in_flight++;
	b->slots[i].polls++;
	b->n_polls++;
	pthread_mutex_lock(&mtx);
	calls_in_flight++;
	pthread_mutex_unlock(&mtx);
	int rc = opt.detect == DETECT_POLL
	    ? rpc_call_async(
	        b->orch, "/sagas.v1.Orchestrator/GetSaga", &m.base, opt.call_timeout_ms, on_get, d)
	    : rpc_call_async(b->orch, "/sagas.v1.Orchestrator/WaitSaga", &w.base,
	        BENCH_WAIT_MS + opt.call_timeout_ms, on_get, d);
	if (rc != 0)
		die(3, "%s: could not send (error %d)",
		    opt.detect == DETECT_POLL ? "GetSaga" : "WaitSaga", rc);
}

static void schedule_poll(bench *b, int32_t i, int64_t at)
{
	saga_slot *s = &b->slots[i];
	s->phase = P_POLL_WAIT;
	s->next_poll_us = at;
	s->next_q = -1;
	if (pq_tail >= 0)
		b->slots[pq_tail].next_q = i;
	else
		pq_head = i;
	pq_tail = i;
}

static bool terminal(int st)
{
	return st == ST_COMPLETED || st == ST_CANCELLED;
}

static void finish(bench *b, int32_t i, const done_item *d)
{
	saga_slot *s = &b->slots[i];
	s->phase = P_DONE;
	s->state = d->state;
	s->t_end_us = d->t_us;
	s->t_commit_wall = d->updated_ms;
	b->n_ended++;
}

/* handle_start takes the reply to a StartSaga: the saga's end, a poll to
 * make, or its retry after a transient failure. */
static void handle_start(bench *b, done_item *d, int64_t poll_us)
{
	saga_slot *s = &b->slots[d->idx];
	if (d->code != RPC_OK) {
		snprintf(b->last_start_error, sizeof b->last_start_error, "%s %s",
		    rpc_code_name(d->code), d->reason);
		/* the same id again: StartSaga is idempotent by saga id */
		bool retry
		    = (d->transport || d->code == RPC_UNAVAILABLE
		          || d->code == RPC_DEADLINE_EXCEEDED || d->code == RPC_RESOURCE_EXHAUSTED)
		    && s->start_tries < BENCH_START_TRIES;
		if (retry) {
			b->n_start_retries++;
			int64_t backoff = BENCH_START_BACKOFF_US
			    << (s->start_tries < 7 ? s->start_tries : 7);
			schedule_poll(b, d->idx,
			    d->t_us
			        + (backoff < BENCH_START_BACKOFF_MAX_US
			                ? backoff
			                : BENCH_START_BACKOFF_MAX_US));
			s->phase = P_START_RETRY;
		} else {
			s->phase = P_FAILED;
			b->n_failed_start++;
			b->n_ended++;
		}
		return;
	}
	if (terminal(d->state))
		finish(b, d->idx, d);
	else /* a WaitSaga at once; the first poll after an interval */
		schedule_poll(b, d->idx, opt.detect == DETECT_POLL ? d->t_us + poll_us : d->t_us);
}

static void handle(bench *b, done_item *d, int64_t poll_us)
{
	saga_slot *s = &b->slots[d->idx];
	if (d->is_start) {
		handle_start(b, d, poll_us);
		return;
	}
	polls_in_flight--;
	if (d->code == RPC_OK && terminal(d->state)) {
		finish(b, d->idx, d);
		return;
	}
	if (d->code != RPC_OK)
		b->n_poll_errors++;
	/* a WaitSaga that ran its course asks again at once; one answered at
	 * once, unfinished (the orchestrator holds too many waits), or an
	 * error, after a pause */
	bool waited = opt.detect != DETECT_POLL && d->code == RPC_OK
	    && d->t_us - s->t_asked_us >= BENCH_WAIT_MS * 500;
	schedule_poll(b, d->idx, waited ? d->t_us : d->t_us + poll_us);
}

/* ---- the loop ---- */

/* The loop's own state (bench_run). */
typedef struct bench_loop {
	int64_t poll_us;
	int64_t deadline;
	int64_t next_progress;
	int64_t stop_at; /* stop starting then (--duration); 0: never */
	long next;       /* the next saga to start */
	long n_target;   /* the sagas to end */
} bench_loop;

/* loop_send starts what the load model allows at `now`, then the polls
 * (and StartSaga retries) that are due. */
static void loop_send(bench *b, bench_loop *l, int64_t now)
{
	/* 1. start what the load model allows */
	long inflight = b->n_started - b->n_ended;
	if (l->stop_at && now >= l->stop_at && l->n_target > l->next)
		l->n_target = l->next; /* time is up: wait for the ones started */
	while (l->next < l->n_target && inflight < opt.c) {
		int64_t due
		    = opt.rate > 0 ? b->t0 + (int64_t)((double)l->next * 1e6 / opt.rate) : 0;
		if (opt.rate > 0 && now < due)
			break;
		send_start(b, (int32_t)l->next++, due);
		b->n_started++;
		inflight++;
	}
	/* 2. polls that are due (FIFO: due times only grow) */
	while (pq_head >= 0 && b->slots[pq_head].next_poll_us <= now
	    && polls_in_flight < opt.poll_window) {
		int32_t i = pq_head;
		pq_head = b->slots[i].next_q;
		if (pq_head < 0)
			pq_tail = -1;
		if (b->slots[i].phase == P_START_RETRY)
			send_start(b, i, 0); /* the same saga id again, after its backoff */
		else
			send_get(b, i);
	}
}

/* loop_wait waits for replies or the next due time after `now`, and
 * handles the replies that came. */
static void loop_wait(bench *b, const bench_loop *l, int64_t now)
{
	int64_t wake = now + 50000;
	if (pq_head >= 0 && polls_in_flight < opt.poll_window
	    && b->slots[pq_head].next_poll_us < wake)
		wake = b->slots[pq_head].next_poll_us;
	if (opt.rate > 0 && l->next < l->n_target && b->n_started - b->n_ended < opt.c) {
		int64_t t_next = b->t0 + (int64_t)((double)l->next * 1e6 / opt.rate);
		if (t_next < wake)
			wake = t_next;
	}
	pthread_mutex_lock(&mtx);
	if (q_head == NULL && wake > now) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t ns = (int64_t)ts.tv_nsec + (wake - now) * 1000;
		ts.tv_sec += ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		pthread_cond_timedwait(&cv, &mtx, &ts);
	}
	done_item *list = q_head;
	q_head = q_tail = NULL;
	pthread_mutex_unlock(&mtx);
	while (list) {
		done_item *d = list;
		list = d->next;
		handle(b, d, l->poll_us);
		free(d);
	}
}

void bench_run(bench *b)
{
	bench_loop l = {.poll_us = (int64_t)(opt.poll_ms * 1000.0)};
	b->t0 = now_us();
	b->t0_wall_ms = wall_ms();
	l.deadline = b->t0 + (int64_t)(opt.timeout_s * 1e6);
	l.next_progress = b->t0;
	l.n_target = opt.n;
	l.stop_at = opt.duration_s > 0 ? b->t0 + (int64_t)(opt.duration_s * 1e6) : 0;
	for (;;) {
		int64_t now = now_us();
		loop_send(b, &l, now);
		if (b->n_ended >= l.n_target)
			break;
		if (now > l.deadline) {
			b->timed_out = true;
			break;
		}
		if (opt.progress && now >= l.next_progress) {
			double el = (double)(now - b->t0) / 1e6;
			fprintf(stderr, "\r%s%ld/%ld ended, %ld in flight, %.0f sagas/s, %.1f s   ",
			    opt.label[0] ? opt.label : "", b->n_ended, l.n_target,
			    b->n_started - b->n_ended, el > 0 ? (double)b->n_ended / el : 0, el);
			l.next_progress = now + 200000;
		}
		/* 3. wait for replies or the next due time */
		loop_wait(b, &l, now);
	}
	if (opt.progress)
		fprintf(stderr, "\r%80s\r", "");
}

void bench_close(bench *b)
{
	rpc_client_close(b->orch);
	rpc_client_close(b->stock);
	rpc_client_close(b->pay);
	for (int i = 0; i < 3; i++)
		rpc_urls_free(&b->urls[i]);
	free(b->lat);
	free(b->clat);
	free(b->sku_need);
	free(b->cust_need);
	free(b->sku_init);
	free(b->cust_init);
	free(b->slots);
}

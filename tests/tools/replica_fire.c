/* replica_fire: sends the same participant commands (same saga ids) to
 * several replicas of a participant at once, many copies each, for the
 * replica tests (tests/integration/replica_duplicates.sh).
 *   replica_fire URL[,URL...] VERB[,VERB...] ID_PREFIX FIRST N COPIES NAME AMOUNT
 * VERB is reserve, release, charge or refund; with a list, the i-th URL
 * gets the i-th verb (one verb: all get it). The saga ids are ID_PREFIX
 * (24 characters, "5a1e0000-0000-4000-8000-") followed by FIRST .. FIRST+N-1
 * as 12 decimal digits. Each URL gets COPIES clients of its own (its own
 * connection), and every client sends the N commands at once (async), so
 * every copy of a saga id is in flight at every replica at the same time.
 * A transport failure or UNAVAILABLE (a lost race past the participant's
 * retries, rule 3 of saga-semantics.md) is sent again, up to 50 rounds.
 * Prints one line per (verb, code, reply status) with its count, sorted:
 * "reserve OK 1 600", and "resent K". Exits 0 when every command got an
 * answer, 1 when some did not, 2 on usage errors. Plain URLs only. Every
 * command carries one saga start, SAGACMD_STARTED_MS (ms since the epoch;
 * tests/lib/stack.sh sets it for a whole test) or else the time it starts:
 * a saga is its id and its start (rule R5), so a run's commands of one
 * saga id, and those of later runs in the test, are one saga's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "clock.h"
#include "rpc.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"

#define FIRE_MAX_CLIENTS 64
#define FIRE_MAX_N       10000
#define FIRE_ROUNDS      50

/* One command: saga `i` on client `cl` (a copy of its own), and its
 * answer once it came. */
typedef struct fire_call {
	int cl, i;
	int code;   /* -1: not answered yet / to send again */
	int status; /* reply status when OK */
	bool transport;
} fire_call;

typedef struct fire_state {
	nng_mtx *mtx;
	nng_cv *cv;
	long left;
} fire_state;

static fire_state st;
static const char *verbs[FIRE_MAX_CLIENTS];

/* fire_done is the rpc_done_fn of every call: records the answer of the
 * fire_call `arg` (its code, and the reply's status when OK) and wakes the
 * main thread after the last one of a round. */
static void fire_done(void *arg, const rpc_result *res)
{
	fire_call *c = arg;
	int status = 0;
	if (res->code == 0 && !res->transport) {
		/* every reply of these four has its status as field 1 (enum) */
		Sagas__V1__ReleaseStockReply *r
		    = sagas__v1__release_stock_reply__unpack(NULL, res->payload_len, res->payload);
		if (r) {
			status = r->status;
			sagas__v1__release_stock_reply__free_unpacked(r, NULL);
		}
	}
	nng_mtx_lock(st.mtx);
	c->code = res->code;
	c->transport = res->transport;
	c->status = status;
	if (--st.left == 0)
		nng_cv_wake(st.cv);
	nng_mtx_unlock(st.mtx);
}

/* the start every command carries (main) */
static int64_t fire_started;

/* fire_send sends call `c` (saga id `id`) with verb `v` on `cl`, its
 * answer to fire_done. Returns 0 or a negative errno (rpc_call_async). */
static int fire_send(
    rpc_client *cl, const char *v, const char *id, const char *name, long long amount, fire_call *c)
{
	if (!strcmp(v, "reserve") || !strcmp(v, "release")) {
		Sagas__V1__ReserveStockRequest m = SAGAS__V1__RESERVE_STOCK_REQUEST__INIT;
		m.saga_id = (char *)id;
		m.sku = (char *)name;
		m.qty = (int32_t)amount;
		m.saga_started_unix_ms = fire_started; /* rules R1 and R5 */
		return rpc_call_async(cl,
		    !strcmp(v, "reserve") ? "/sagas.v1.Stock/ReserveStock"
		                          : "/sagas.v1.Stock/ReleaseStock",
		    &m.base, 10000, fire_done, c);
	}
	Sagas__V1__ChargePaymentRequest m = SAGAS__V1__CHARGE_PAYMENT_REQUEST__INIT;
	m.saga_id = (char *)id;
	m.customer = (char *)name;
	m.amount = amount;
	m.saga_started_unix_ms = fire_started;
	return rpc_call_async(cl,
	    !strcmp(v, "charge") ? "/sagas.v1.Payment/ChargePayment"
	                         : "/sagas.v1.Payment/RefundPayment",
	    &m.base, 10000, fire_done, c);
}

/* fire_cmp orders the tally's lines (qsort). */
static int fire_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	if (argc != 9) {
		fprintf(stderr,
		    "usage: replica_fire URL[,URL...] VERB[,VERB...] ID_PREFIX FIRST N "
		    "COPIES NAME AMOUNT\n");
		return 2;
	}
	const char *start = getenv("SAGACMD_STARTED_MS");
	fire_started = start != NULL && *start != '\0' ? strtoll(start, NULL, 10) : clock_wall_ms();
	char *urls = strdup(argv[1]), *vlist = strdup(argv[2]);
	const char *prefix = argv[3], *name = argv[7];
	long first = atol(argv[4]), n = atol(argv[5]), copies = atol(argv[6]);
	long long amount = atoll(argv[8]);
	const char *url[FIRE_MAX_CLIENTS], *uverb[FIRE_MAX_CLIENTS];
	int nurl = 0, nverb = 0;
	for (char *s = strtok(urls, ","); s && nurl < FIRE_MAX_CLIENTS; s = strtok(NULL, ","))
		url[nurl++] = s;
	for (char *s = strtok(vlist, ","); s && nverb < FIRE_MAX_CLIENTS; s = strtok(NULL, ","))
		uverb[nverb++] = s;
	for (int i = 0; i < nverb; i++)
		if (strcmp(uverb[i], "reserve") && strcmp(uverb[i], "release")
		    && strcmp(uverb[i], "charge") && strcmp(uverb[i], "refund")) {
			fprintf(stderr, "replica_fire: unknown verb \"%s\"\n", uverb[i]);
			return 2;
		}
	if (strlen(prefix) != 24 || n < 1 || n > FIRE_MAX_N || copies < 1
	    || nurl * copies > FIRE_MAX_CLIENTS || (nverb != 1 && nverb != nurl)) {
		fprintf(stderr, "replica_fire: bad arguments\n");
		return 2;
	}
	int ncl = (int)(nurl * copies);
	rpc_client *cl[FIRE_MAX_CLIENTS];
	for (int k = 0; k < ncl; k++) {
		rpc_client_opts o = {.connect_now = true};
		int rc = rpc_client_open(&cl[k], url[k % nurl], &o);
		if (rc != 0) {
			fprintf(stderr, "replica_fire: could not reach %s: %s\n", url[k % nurl],
			    strerror(-rc));
			return 1;
		}
		verbs[k] = uverb[nverb == 1 ? 0 : k % nurl];
	}
	nng_mtx_alloc(&st.mtx);
	nng_cv_alloc(&st.cv, st.mtx);
	long total = n * ncl;
	fire_call *calls = calloc((size_t)total, sizeof *calls);
	char(*ids)[40] = calloc((size_t)n, 40);
	for (long i = 0; i < n; i++)
		snprintf(ids[i], 40, "%s%012ld", prefix, first + i);
	for (long i = 0; i < n; i++)
		for (int k = 0; k < ncl; k++)
			calls[i * ncl + k] = (fire_call) {.cl = k, .i = (int)i, .code = -1};
	long resent = 0;
	int round;
	for (round = 0; round < FIRE_ROUNDS; round++) {
		long todo = 0;
		for (long j = 0; j < total; j++)
			todo += calls[j].code == -1;
		if (todo == 0)
			break;
		if (round > 0) {
			resent += todo;
			struct timespec pause = {0, 50 * 1000000L};
			nanosleep(&pause, NULL);
		}
		nng_mtx_lock(st.mtx);
		st.left = todo;
		nng_mtx_unlock(st.mtx);
		/* saga by saga, every client: the copies of one id leave together */
		for (long j = 0; j < total; j++) {
			fire_call *c = &calls[j];
			if (c->code != -1)
				continue;
			if (fire_send(cl[c->cl], verbs[c->cl], ids[c->i], name, amount, c) != 0) {
				fprintf(stderr, "replica_fire: could not send\n");
				return 1;
			}
		}
		nng_mtx_lock(st.mtx);
		while (st.left > 0)
			nng_cv_wait(st.cv);
		nng_mtx_unlock(st.mtx);
		for (long j = 0; j < total; j++)
			if (calls[j].transport || calls[j].code == RPC_UNAVAILABLE) {
				calls[j].code = -1;
				calls[j].transport = false;
			}
	}
	for (int k = 0; k < ncl; k++)
		rpc_client_close(cl[k]);
	/* the tally: "verb CODE status count", sorted */
	char **lines = calloc((size_t)total, sizeof *lines);
	long nl = 0, unanswered = 0;
	for (long j = 0; j < total; j++) {
		if (calls[j].code == -1) {
			unanswered++;
			continue;
		}
		lines[nl] = malloc(64);
		snprintf(lines[nl], 64, "%s %s %d", verbs[calls[j].cl],
		    rpc_code_name(calls[j].code), calls[j].code == 0 ? calls[j].status : 0);
		nl++;
	}
	qsort(lines, (size_t)nl, sizeof *lines, fire_cmp);
	for (long j = 0; j < nl;) {
		long k = j;
		while (k < nl && !strcmp(lines[k], lines[j]))
			k++;
		printf("%s %ld\n", lines[j], k - j);
		j = k;
	}
	printf("resent %ld\n", resent);
	if (unanswered > 0)
		printf("unanswered %ld\n", unanswered);
	for (long j = 0; j < nl; j++)
		free(lines[j]);
	free(lines);
	free(calls);
	free(ids);
	free(urls);
	free(vlist);
	nng_cv_free(st.cv);
	nng_mtx_free(st.mtx);
	return unanswered > 0 ? 1 : 0;
}

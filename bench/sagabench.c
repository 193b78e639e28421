/* sagabench: throughput and latency of the saga system, end to end.
 *
 * Seeds stock and accounts through the admin RPCs, starts N order sagas
 * (StartSaga, each with its own uuid) at a fixed concurrency C (closed loop)
 * or at a fixed arrival rate R (open loop), learns each saga's end from
 * the StartSaga reply itself (wait_ms; --detect wait: WaitSaga, poll:
 * GetSaga polling), and prints sagas/s, the
 * end-to-end latency distribution, the outcome counts and the invariants
 * checked at the end. Exits 1 when an invariant fails, 2 on usage errors,
 * 3 when the run itself could not be done (daemons unreachable, sagas that
 * never ended).
 *
 * Every call is asynchronous (rpc_call_async: one nng context per call in
 * flight); the callbacks only queue results, one thread decides.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc.h"
#include "tls.h"
#include "sagas/v1/orchestrator.pb-c.h"
#include "sagas/v1/payment.pb-c.h"
#include "sagas/v1/stock.pb-c.h"
#include "valid.h"
#include "version.h"

#define ST_COMPLETED SAGAS__V1__SAGA_STATE__SAGA_STATE_COMPLETED
#define ST_CANCELLED SAGAS__V1__SAGA_STATE__SAGA_STATE_CANCELLED

enum kind { K_GOOD = 0, K_OOS = 1, K_DECLINE = 2 };
enum phase { P_IDLE = 0, P_STARTING, P_START_RETRY, P_POLL_WAIT, P_POLLING, P_DONE, P_FAILED };

/* StartSaga retries after a transient failure: how many, and their backoff
 * (exponential from 10 ms, capped), so a database restart of a few seconds
 * is ridden out instead of hammered. */
#define BENCH_START_TRIES          30
#define BENCH_START_BACKOFF_US     10000
#define BENCH_START_BACKOFF_MAX_US 1000000

typedef struct saga_slot {
	char id[40];
	uint8_t kind;
	uint8_t phase;
	uint8_t start_tries;
	int sku;               /* index into the good skus, -1 for the out-of-stock one */
	int customer;          /* index into the customers, -1 for the broke one */
	int state;             /* terminal state observed */
	int64_t t_sent_us;     /* first StartSaga sent (monotonic) */
	int64_t t_sent_wall;   /* same, wall ms */
	int64_t t_end_us;      /* terminal state observed (monotonic) */
	int64_t t_commit_wall; /* updated_unix_ms of the terminal row */
	int64_t next_poll_us;
	int64_t t_asked_us; /* when the latest GetSaga/WaitSaga was sent */
	int32_t next_q;     /* poll FIFO link, -1 = none */
	uint32_t polls;
} saga_slot;

/* a completed call, queued by the nng callback */
typedef struct done_item {
	struct done_item *next;
	int32_t idx;
	bool is_start;
	int code;
	bool transport;
	int state;
	int64_t updated_ms;
	int64_t t_us;
	char reason[RPC_REASON_MAX];
} done_item;

enum { DETECT_START, DETECT_WAIT, DETECT_POLL };

typedef struct options {
	const char *orch, *stock, *payment;
	const char *tls_cert, *tls_key, *tls_ca; /* for tls+tcp:// URLs */
	long n;
	long c;
	double rate;
	double mix;
	int detect;       /* DETECT_START, DETECT_WAIT or DETECT_POLL */
	double poll_ms;   /* <= 0: auto */
	long poll_window; /* most GetSaga (WaitSaga) calls in flight at once; 0: auto */
	long skus, customers;
	int32_t qty;
	int64_t amount;
	double timeout_s;
	double duration_s; /* stop starting after this long; 0 = run all N */
	bool json;
	int progress; /* -1 auto (isatty), 0 off, 1 on */
	const char *label;
	const char *log_path; /* --log: one line per finished saga; NULL: none */
	int64_t call_timeout_ms;
} options;

static options opt = {
    .n = 2000,
    .c = 64,
    .rate = 0,
    .mix = 0,
    .poll_ms = 0,
    .poll_window = 0,
    .skus = 64,
    .customers = 256,
    .qty = 1,
    .amount = 100,
    .timeout_s = 120,
    .progress = -1,
    .label = "",
    .call_timeout_ms = 5000,
};

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv; /* on CLOCK_MONOTONIC: see main */
static done_item *q_head, *q_tail;
static int calls_in_flight;

static saga_slot *slots;
static char tag[24];    /* names of this run: skus and customers */
static uint32_t run_hi; /* the first 8 hex digits of every saga id of this run */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sagabench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(code);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
	fprintf(f,
	    "usage: sagabench [options]\n"
	    "Runs N order sagas against a running orchestratord/stockd/paymentd and\n"
	    "prints sagas/s, end-to-end latency (StartSaga sent -> terminal state\n"
	    "observed through WaitSaga), outcomes, and checks the invariants.\n"
	    "\n"
	    "  -o, --orchestrator URL  orchestratord (env SAGA_ORCHESTRATOR_URL, default "
	    "tcp://127.0.0.1:7101)\n"
	    "  -s, --stock URL         stockd (env SAGA_STOCK_URL, default tcp://127.0.0.1:7102)\n"
	    "  -p, --payment URL       paymentd (env SAGA_PAYMENT_URL, default "
	    "tcp://127.0.0.1:7103)\n"
	    "                          each URL may be a comma-separated list: the\n"
	    "                          replicas of that daemon (docs/operations.md)\n"
	    "  --tls-cert FILE, --tls-key FILE, --tls-ca FILE\n"
	    "                          for tls+tcp:// URLs: a certificate of the admin role\n"
	    "                          (it sets stock and deposits) and the CA of the daemons'\n"
	    "                          (env SAGABENCH_TLS_CERT, _KEY, _CA; docs/security.md)\n"
	    "  -n, --sagas N           sagas to run (default 2000)\n"
	    "  -c, --concurrency C     sagas in flight at once, closed loop (default 64)\n"
	    "  -r, --rate R            open loop: start R sagas/s regardless of the ends\n"
	    "                          (then -c caps the sagas in flight; default cap 10000);\n"
	    "                          latency counts from each start's scheduled time\n"
	    "  -m, --mix P             share 0..1 of sagas that fail: half out of stock\n"
	    "                          (compensation-free cancel), half declined (stock\n"
	    "                          released) (default 0)\n"
	    "      --detect HOW        how a saga's end is seen: start (default: StartSaga\n"
	    "                          with wait_ms answers when the saga ends, one call per\n"
	    "                          saga), wait (StartSaga, then a WaitSaga long poll) or\n"
	    "                          poll (StartSaga, then GetSaga every --poll-ms, as\n"
	    "                          clients without WaitSaga do); an unfinished answer is\n"
	    "                          followed by WaitSaga (start) or GetSaga (poll)\n"
	    "      --poll-ms MS        poll: GetSaga interval per saga in flight (default\n"
	    "                          auto: C/16 ms, clamped to 1..10); wait: pause before\n"
	    "                          asking again after a WaitSaga answered at once\n"
	    "      --poll-window W     most GetSaga (WaitSaga) calls in flight at once\n"
	    "                          (default 2 for poll, so polling never takes more than 2\n"
	    "                          of the orchestrator's API workers; 2048 for wait, half\n"
	    "                          of its --max-waits); due ones wait their turn, in order\n"
	    "      --skus K            distinct skus (default 64)\n"
	    "      --customers M       distinct customers (default 256)\n"
	    "  -d, --duration S        stop starting sagas after S s (N is then a maximum);\n"
	    "                          the sagas started are waited for\n"
	    "      --call-timeout MS   timeout of each RPC (default 5000); StartSaga is re-sent\n"
	    "                          with the same id after a transport failure\n"
	    "  -t, --timeout S         give up on sagas not ended after S s (default 120)\n"
	    "      --label TEXT        a name for this run in the output\n"
	    "      --log FILE          one line per finished saga: its start (ms after the\n"
	    "                          run began; the scheduled start under --rate), its\n"
	    "                          latency in ms, its end state and its id, after a\n"
	    "                          '#' header line that gives the run's start in unix\n"
	    "                          ms; for finding when slow sagas happened (like\n"
	    "                          pgbench --log)\n"
	    "      --json              one JSON object on stdout instead of the text report\n"
	    "      --progress / --no-progress   progress line on stderr (default: on a terminal)\n"
	    "  -h, --help              this text\n"
	    "      --version           the version and commit\n"
	    "\n"
	    "Exit status: 0 ok, 1 an invariant failed, 2 usage, 3 the run failed.\n");
}

static long parse_long(const char *name, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "sagabench: invalid %s \"%s\": must be an integer %ld..%ld\n", name,
		    s, lo, hi);
		exit(2);
	}
	return v;
}

static double parse_double(const char *name, const char *s, double lo, double hi)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= lo && v <= hi)) {
		fprintf(stderr, "sagabench: invalid %s \"%s\": must be a number %g..%g\n", name, s,
		    lo, hi);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv)
{
	const char *e;
	opt.orch = (e = getenv("SAGA_ORCHESTRATOR_URL")) && *e ? e : "tcp://127.0.0.1:7101";
	opt.stock = (e = getenv("SAGA_STOCK_URL")) && *e ? e : "tcp://127.0.0.1:7102";
	opt.payment = (e = getenv("SAGA_PAYMENT_URL")) && *e ? e : "tcp://127.0.0.1:7103";
	opt.tls_cert = (e = getenv("SAGABENCH_TLS_CERT")) ? e : "";
	opt.tls_key = (e = getenv("SAGABENCH_TLS_KEY")) ? e : "";
	opt.tls_ca = (e = getenv("SAGABENCH_TLS_CA")) ? e : "";
	enum {
		O_CTO = 301,
		O_WIN = 300,
		O_POLL = 256,
		O_DETECT,
		O_SKUS,
		O_CUST,
		O_LABEL,
		O_LOG,
		O_JSON,
		O_PROG,
		O_NOPROG,
		O_TLS_CERT,
		O_TLS_KEY,
		O_TLS_CA,
		O_VERSION
	};
	static const struct option lo[] = {
	    {"orchestrator", required_argument, 0, 'o'},
	    {"stock", required_argument, 0, 's'},
	    {"payment", required_argument, 0, 'p'},
	    {"sagas", required_argument, 0, 'n'},
	    {"concurrency", required_argument, 0, 'c'},
	    {"rate", required_argument, 0, 'r'},
	    {"mix", required_argument, 0, 'm'},
	    {"poll-ms", required_argument, 0, O_POLL},
	    {"detect", required_argument, 0, O_DETECT},
	    {"poll-window", required_argument, 0, O_WIN},
	    {"call-timeout", required_argument, 0, O_CTO},
	    {"skus", required_argument, 0, O_SKUS},
	    {"customers", required_argument, 0, O_CUST},
	    {"timeout", required_argument, 0, 't'},
	    {"duration", required_argument, 0, 'd'},
	    {"label", required_argument, 0, O_LABEL},
	    {"log", required_argument, 0, O_LOG},
	    {"json", no_argument, 0, O_JSON},
	    {"progress", no_argument, 0, O_PROG},
	    {"no-progress", no_argument, 0, O_NOPROG},
	    {"tls-cert", required_argument, 0, O_TLS_CERT},
	    {"tls-key", required_argument, 0, O_TLS_KEY},
	    {"tls-ca", required_argument, 0, O_TLS_CA},
	    {"help", no_argument, 0, 'h'},
	    {"version", no_argument, 0, O_VERSION},
	    {0, 0, 0, 0},
	};
	bool c_given = false;
	int ch;
	while ((ch = getopt_long(argc, argv, "o:s:p:n:c:r:m:t:d:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'o':
			opt.orch = optarg;
			break;
		case 's':
			opt.stock = optarg;
			break;
		case 'p':
			opt.payment = optarg;
			break;
		case 'n':
			opt.n = parse_long("--sagas", optarg, 1, 10000000);
			break;
		case 'c':
			opt.c = parse_long("--concurrency", optarg, 1, 100000);
			c_given = true;
			break;
		case 'r':
			opt.rate = parse_double("--rate", optarg, 0.001, 1e7);
			break;
		case 'm':
			opt.mix = parse_double("--mix", optarg, 0, 1);
			break;
		case O_POLL:
			opt.poll_ms = parse_double("--poll-ms", optarg, 0.05, 10000);
			break;
		case O_DETECT:
			if (strcmp(optarg, "start") == 0)
				opt.detect = DETECT_START;
			else if (strcmp(optarg, "wait") == 0)
				opt.detect = DETECT_WAIT;
			else if (strcmp(optarg, "poll") == 0)
				opt.detect = DETECT_POLL;
			else
				die(2, "invalid --detect \"%s\": want start, wait or poll", optarg);
			break;
		case O_CTO:
			opt.call_timeout_ms = parse_long("--call-timeout", optarg, 10, 3600000);
			break;
		case O_WIN:
			opt.poll_window = parse_long("--poll-window", optarg, 1, 100000);
			break;
		case O_SKUS:
			opt.skus = parse_long("--skus", optarg, 1, 100000);
			break;
		case O_CUST:
			opt.customers = parse_long("--customers", optarg, 1, 100000);
			break;
		case 'd':
			opt.duration_s = parse_double("--duration", optarg, 0.01, 86400);
			break;
		case 't':
			opt.timeout_s = parse_double("--timeout", optarg, 0.1, 86400);
			break;
		case O_LABEL:
			opt.label = optarg;
			break;
		case O_LOG:
			opt.log_path = optarg;
			break;
		case O_JSON:
			opt.json = true;
			break;
		case O_PROG:
			opt.progress = 1;
			break;
		case O_NOPROG:
			opt.progress = 0;
			break;
		case O_VERSION:
			version_print(stdout, "sagabench");
			exit(0);
		case O_TLS_CERT:
			opt.tls_cert = optarg;
			break;
		case O_TLS_KEY:
			opt.tls_key = optarg;
			break;
		case O_TLS_CA:
			opt.tls_ca = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(
		    stderr, "sagabench: unexpected argument \"%s\" (see --help)\n", argv[optind]);
		exit(2);
	}
	if (opt.rate > 0 && !c_given)
		opt.c = 10000;
	/* each may be a comma-separated list (replicas); every entry is
	 * checked, and the error names the bad one */
	for (const char **u = (const char *[]) {opt.orch, opt.stock, opt.payment, NULL}; *u; u++) {
		rpc_urls l;
		char err[1024];
		int bad = rpc_urls_parse(&l, *u, err, sizeof err);
		rpc_urls_free(&l);
		if (bad != 0)
			die(2, "invalid URL %s", err);
	}
	if (opt.poll_ms <= 0) {
		double p = (double)opt.c / 16.0;
		opt.poll_ms = p < 1 ? 1 : p > 10 ? 10 : p;
	}
	if (opt.poll_window == 0)
		opt.poll_window = opt.detect == DETECT_POLL ? 2 : 2048;
	if (opt.progress < 0)
		opt.progress = isatty(2) && !opt.json;
}

/* ---- synchronous admin calls ---- */

static void call_sync(rpc_client *c, const char *what, const char *method,
    const ProtobufCMessage *req, rpc_result *res)
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

/* ---- the run ---- */

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

static rpc_client *orch_client;
static long n_started, n_ended, n_failed_start, n_start_retries, n_poll_errors;
static uint64_t n_polls;
static long polls_in_flight;
static int32_t pq_head = -1, pq_tail = -1; /* polls due, in time order */
static char last_start_error[160];

/* The longest wait of one WaitSaga (ms); the call's timeout adds
 * --call-timeout to it. */
#define BENCH_WAIT_MS 10000

/* send_start sends saga i's StartSaga. `due_us` (monotonic us; 0 = now) is
 * when the load model wanted it sent: in open loop a send that comes late
 * (this thread was not scheduled in time) counts from its due time, so the
 * delay is in the latency and not hidden (coordinated omission). */
static void send_start(int32_t i, int64_t due_us)
{
	saga_slot *s = &slots[i];
	Sagas__V1__Order o = SAGAS__V1__ORDER__INIT;
	char sku[64], cust[64];
	if (s->sku < 0)
		snprintf(sku, sizeof sku, "%s-oos", tag);
	else
		snprintf(sku, sizeof sku, "%s-sku-%d", tag, s->sku);
	if (s->customer < 0)
		snprintf(cust, sizeof cust, "%s-broke", tag);
	else
		snprintf(cust, sizeof cust, "%s-cust-%d", tag, s->customer);
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
	int rc = rpc_call_async(orch_client, "/sagas.v1.Orchestrator/StartSaga", &m.base,
	    opt.call_timeout_ms + (m.wait_ms ? BENCH_WAIT_MS : 0), on_start, d);
	if (rc != 0)
		die(3, "StartSaga: could not send (error %d)", rc);
}

static void send_get(int32_t i)
{
	Sagas__V1__GetSagaRequest m = SAGAS__V1__GET_SAGA_REQUEST__INIT;
	Sagas__V1__WaitSagaRequest w = SAGAS__V1__WAIT_SAGA_REQUEST__INIT;
	m.saga_id = w.saga_id = slots[i].id;
	w.wait_ms = BENCH_WAIT_MS;
	done_item *d = calloc(1, sizeof *d);
	if (!d)
		die(3, "out of memory");
	d->idx = i;
	slots[i].phase = P_POLLING;
	slots[i].t_asked_us = now_us();
	polls_in_flight++;
	slots[i].polls++;
	n_polls++;
	pthread_mutex_lock(&mtx);
	calls_in_flight++;
	pthread_mutex_unlock(&mtx);
	int rc = opt.detect == DETECT_POLL
	    ? rpc_call_async(orch_client, "/sagas.v1.Orchestrator/GetSaga", &m.base,
	        opt.call_timeout_ms, on_get, d)
	    : rpc_call_async(orch_client, "/sagas.v1.Orchestrator/WaitSaga", &w.base,
	        BENCH_WAIT_MS + opt.call_timeout_ms, on_get, d);
	if (rc != 0)
		die(3, "%s: could not send (error %d)",
		    opt.detect == DETECT_POLL ? "GetSaga" : "WaitSaga", rc);
}

static void schedule_poll(int32_t i, int64_t at)
{
	saga_slot *s = &slots[i];
	s->phase = P_POLL_WAIT;
	s->next_poll_us = at;
	s->next_q = -1;
	if (pq_tail >= 0)
		slots[pq_tail].next_q = i;
	else
		pq_head = i;
	pq_tail = i;
}

static bool terminal(int st)
{
	return st == ST_COMPLETED || st == ST_CANCELLED;
}

static void finish(int32_t i, const done_item *d)
{
	saga_slot *s = &slots[i];
	s->phase = P_DONE;
	s->state = d->state;
	s->t_end_us = d->t_us;
	s->t_commit_wall = d->updated_ms;
	n_ended++;
}

static void handle(done_item *d, int64_t poll_us)
{
	saga_slot *s = &slots[d->idx];
	if (d->is_start) {
		if (d->code != RPC_OK) {
			snprintf(last_start_error, sizeof last_start_error, "%s %s",
			    rpc_code_name(d->code), d->reason);
			/* the same id again: StartSaga is idempotent by saga id */
			bool retry = (d->transport || d->code == RPC_UNAVAILABLE
			                 || d->code == RPC_DEADLINE_EXCEEDED
			                 || d->code == RPC_RESOURCE_EXHAUSTED)
			    && s->start_tries < BENCH_START_TRIES;
			if (retry) {
				n_start_retries++;
				int64_t backoff = BENCH_START_BACKOFF_US
				    << (s->start_tries < 7 ? s->start_tries : 7);
				schedule_poll(d->idx,
				    d->t_us
				        + (backoff < BENCH_START_BACKOFF_MAX_US
				                ? backoff
				                : BENCH_START_BACKOFF_MAX_US));
				s->phase = P_START_RETRY;
			} else {
				s->phase = P_FAILED;
				n_failed_start++;
				n_ended++;
			}
			return;
		}
		if (terminal(d->state))
			finish(d->idx, d);
		else /* a WaitSaga at once; the first poll after an interval */
			schedule_poll(
			    d->idx, opt.detect == DETECT_POLL ? d->t_us + poll_us : d->t_us);
		return;
	}
	polls_in_flight--;
	if (d->code == RPC_OK && terminal(d->state)) {
		finish(d->idx, d);
		return;
	}
	if (d->code != RPC_OK)
		n_poll_errors++;
	/* a WaitSaga that ran its course asks again at once; one answered at
	 * once, unfinished (the orchestrator holds too many waits), or an
	 * error, after a pause */
	bool waited = opt.detect != DETECT_POLL && d->code == RPC_OK
	    && d->t_us - s->t_asked_us >= BENCH_WAIT_MS * 500;
	schedule_poll(d->idx, waited ? d->t_us : d->t_us + poll_us);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t k = (size_t)ceil(p / 100.0 * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1];
}

/* ---- invariants ---- */

typedef struct check {
	const char *name;
	bool ok;
	char detail[200];
} check;

static check checks[16];
static int nchecks;

/* cut_note writes into `buf` (`size` bytes) the note a check adds when an
 * admin list stopped at one reply's size (`truncated`) after `rows` rows,
 * or "" when it is whole. */
static void cut_note(char *buf, size_t size, bool truncated, size_t rows)
{
	if (truncated)
		snprintf(buf, size,
		    " (the list stopped at one reply's size, after %zu rows: the newest checked)",
		    rows);
	else
		buf[0] = '\0';
}

static void add_check(const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_check(const char *name, bool ok, const char *fmt, ...)
{
	check *c = &checks[nchecks++];
	c->name = name;
	c->ok = ok;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof c->detail, fmt, ap);
	va_end(ap);
}

/* the slot of a saga id of this run, or -1 */
static long slot_of(const char *id)
{
	unsigned hi;
	unsigned long long lo;
	if (strlen(id) != 36 || sscanf(id, "%8x", &hi) != 1 || hi != run_hi)
		return -1;
	if (sscanf(id + 24, "%12llx", &lo) != 1 || lo >= (unsigned long long)opt.n)
		return -1;
	return (long)lo;
}

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
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

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	FILE *logf = NULL;
	if (opt.log_path && !(logf = fopen(opt.log_path, "w")))
		die(2, "cannot write --log %s: %s", opt.log_path, strerror(errno));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the waits use now_us() */
	pthread_cond_init(&cv, &ca);
	pthread_condattr_destroy(&ca);
	srand((unsigned)(now_us() ^ getpid()));
	run_hi = ((uint32_t)rand() << 16) ^ (uint32_t)rand() ^ (uint32_t)getpid();
	snprintf(tag, sizeof tag, "bench-%08x", run_hi);

	rpc_client *stock = NULL, *pay = NULL;
	static rpc_urls tls[3]; /* the parsed lists, with their TLS configurations */
	int rc;
	if ((rc = bench_open(&orch_client, opt.orch, &tls[0])) != 0)
		die(3, "cannot reach orchestratord at %s: %s", opt.orch, strerror(-rc));
	if ((rc = bench_open(&stock, opt.stock, &tls[1])) != 0)
		die(3, "cannot reach stockd at %s: %s", opt.stock, strerror(-rc));
	if ((rc = bench_open(&pay, opt.payment, &tls[2])) != 0)
		die(3, "cannot reach paymentd at %s: %s", opt.payment, strerror(-rc));

	/* the sagas: kinds spread evenly through the run */
	slots = calloc((size_t)opt.n, sizeof *slots);
	if (!slots)
		die(3, "out of memory for %ld sagas", opt.n);
	long n_bad = 0;
	int64_t *sku_need = calloc((size_t)opt.skus, sizeof *sku_need);
	int64_t *cust_need = calloc((size_t)opt.customers, sizeof *cust_need);
	if (!sku_need || !cust_need)
		die(3, "out of memory");
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &slots[i];
		snprintf(s->id, sizeof s->id, "%08x-%04x-4%03x-8%03x-%012lx", run_hi,
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
			sku_need[s->sku] += opt.qty;
		if (s->customer >= 0)
			cust_need[s->customer] += opt.amount;
	}

	/* seed: enough for every good saga, plus a margin; the out-of-stock sku
	 * has none, the broke customer less than one order */
	int64_t *sku_init = calloc((size_t)opt.skus, sizeof *sku_init);
	int64_t *cust_init = calloc((size_t)opt.customers, sizeof *cust_init);
	if (!sku_init || !cust_init)
		die(3, "out of memory");
	char name[64];
	for (long k = 0; k < opt.skus; k++) {
		sku_init[k] = sku_need[k] + 10;
		snprintf(name, sizeof name, "%s-sku-%ld", tag, k);
		set_stock(stock, name, sku_init[k]);
	}
	snprintf(name, sizeof name, "%s-oos", tag);
	set_stock(stock, name, 0);
	for (long k = 0; k < opt.customers; k++) {
		cust_init[k] = cust_need[k] + 1000;
		snprintf(name, sizeof name, "%s-cust-%ld", tag, k);
		deposit(pay, name, cust_init[k]);
	}
	snprintf(name, sizeof name, "%s-broke", tag);
	deposit(pay, name, opt.amount > 1 ? opt.amount - 1 : 1);
	int64_t broke_init = opt.amount > 1 ? opt.amount - 1 : 1;

	int64_t poll_us = (int64_t)(opt.poll_ms * 1000.0);
	int64_t t0 = now_us();
	int64_t t0_wall_ms = wall_ms();
	int64_t deadline = t0 + (int64_t)(opt.timeout_s * 1e6);
	int64_t next_progress = t0;
	long next = 0, n_target = opt.n;
	bool timed_out = false;
	int64_t stop_at = opt.duration_s > 0 ? t0 + (int64_t)(opt.duration_s * 1e6) : 0;
	for (;;) {
		int64_t now = now_us();
		/* 1. start what the load model allows */
		long inflight = n_started - n_ended;
		if (stop_at && now >= stop_at && n_target > next)
			n_target = next; /* time is up: wait for the ones started */
		while (next < n_target && inflight < opt.c) {
			int64_t due
			    = opt.rate > 0 ? t0 + (int64_t)((double)next * 1e6 / opt.rate) : 0;
			if (opt.rate > 0 && now < due)
				break;
			send_start((int32_t)next++, due);
			n_started++;
			inflight++;
		}
		/* 2. polls that are due (FIFO: due times only grow) */
		while (pq_head >= 0 && slots[pq_head].next_poll_us <= now
		    && polls_in_flight < opt.poll_window) {
			int32_t i = pq_head;
			pq_head = slots[i].next_q;
			if (pq_head < 0)
				pq_tail = -1;
			if (slots[i].phase == P_START_RETRY)
				send_start(i, 0); /* the same saga id again, after its backoff */
			else
				send_get(i);
		}
		if (n_ended >= n_target)
			break;
		if (now > deadline) {
			timed_out = true;
			break;
		}
		if (opt.progress && now >= next_progress) {
			double el = (double)(now - t0) / 1e6;
			fprintf(stderr, "\r%s%ld/%ld ended, %ld in flight, %.0f sagas/s, %.1f s   ",
			    opt.label[0] ? opt.label : "", n_ended, n_target, n_started - n_ended,
			    el > 0 ? (double)n_ended / el : 0, el);
			next_progress = now + 200000;
		}
		/* 3. wait for replies or the next due time */
		int64_t wake = now + 50000;
		if (pq_head >= 0 && polls_in_flight < opt.poll_window
		    && slots[pq_head].next_poll_us < wake)
			wake = slots[pq_head].next_poll_us;
		if (opt.rate > 0 && next < n_target && n_started - n_ended < opt.c) {
			int64_t t_next = t0 + (int64_t)((double)next * 1e6 / opt.rate);
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
			handle(d, poll_us);
			free(d);
		}
	}
	int64_t t1 = now_us();
	if (opt.progress)
		fprintf(stderr, "\r%80s\r", "");

	/* ---- figures ---- */
	long completed = 0, cancelled = 0, cancelled_oos = 0, cancelled_decline = 0,
	     cancelled_other = 0, unfinished = 0;
	int64_t last_end = t0;
	int64_t *lat = calloc((size_t)opt.n, sizeof *lat);
	int64_t *clat = calloc((size_t)opt.n, sizeof *clat);
	size_t nl = 0, ncl = 0;
	uint64_t polls_done_sagas = 0;
	if (logf)
		fprintf(logf,
		    "# start_ms latency_ms state saga_id (the run began at unix ms %" PRId64 ")\n",
		    t0_wall_ms);
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &slots[i];
		if (s->phase != P_DONE) {
			if (s->phase != P_FAILED && s->phase != P_IDLE)
				unfinished++;
			continue;
		}
		if (logf)
			fprintf(logf, "%.3f %.3f %s %s\n", (double)(s->t_sent_us - t0) / 1e3,
			    (double)(s->t_end_us - s->t_sent_us) / 1e3,
			    s->state == ST_COMPLETED ? "COMPLETED" : "CANCELLED", s->id);
		if (s->state == ST_COMPLETED)
			completed++;
		else {
			cancelled++;
			if (s->kind == K_OOS)
				cancelled_oos++;
			else if (s->kind == K_DECLINE)
				cancelled_decline++;
			else
				cancelled_other++;
		}
		lat[nl++] = s->t_end_us - s->t_sent_us;
		if (s->t_commit_wall > 0)
			clat[ncl++] = (s->t_commit_wall - s->t_sent_wall) * 1000;
		if (s->t_end_us > last_end)
			last_end = s->t_end_us;
		polls_done_sagas += s->polls;
	}
	/* a log that could not be written is reported now, and makes the exit
	 * status 3 unless an invariant failed (1 wins) */
	bool log_failed = false;
	if (logf) {
		bool bad = ferror(logf) != 0;
		if (fclose(logf) != 0 || bad) {
			fprintf(stderr, "sagabench: cannot write --log %s: %s\n", opt.log_path,
			    bad ? "write error" : strerror(errno));
			log_failed = true;
		}
		logf = NULL;
	}
	qsort(lat, nl, sizeof *lat, cmp_i64);
	qsort(clat, ncl, sizeof *clat, cmp_i64);
	double elapsed = (double)(last_end - t0) / 1e6;
	double sps = elapsed > 0 ? (double)(completed + cancelled) / elapsed : 0;
	double cps = elapsed > 0 ? (double)completed / elapsed : 0;

	/* ---- invariants (admin list RPCs) ---- */
	long bad_kind_outcomes = 0;
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &slots[i];
		if (s->phase != P_DONE)
			continue;
		if (s->kind != K_GOOD && s->state == ST_COMPLETED)
			bad_kind_outcomes++;
	}
	{
		Sagas__V1__ListStockRequest m = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
		m.include_reservations = true;
		m.limit = 10000;
		rpc_result res;
		call_sync(stock, "checking stock (ListStock)", "/sagas.v1.Stock/ListStock", &m.base,
		    &res);
		Sagas__V1__ListStockReply *r
		    = sagas__v1__list_stock_reply__unpack(NULL, res.payload_len, res.payload);
		if (!r)
			die(3, "ListStock: malformed reply");
		int64_t sum_live = 0, sum_rq = 0, conserve_bad = 0, seen = 0;
		char first_bad[120] = "";
		for (size_t k = 0; k < r->n_items; k++) {
			Sagas__V1__StockItem *it = r->items[k];
			if (!starts_with(it->sku, tag))
				continue;
			seen++;
			int64_t init = 0;
			long idx;
			char oos[64];
			snprintf(oos, sizeof oos, "%s-oos", tag);
			if (strcmp(it->sku, oos) == 0)
				init = 0;
			else if (sscanf(it->sku + strlen(tag), "-sku-%ld", &idx) == 1 && idx >= 0
			    && idx < opt.skus)
				init = sku_init[idx];
			if (it->on_hand + it->reserved_qty != init) {
				if (!conserve_bad++)
					snprintf(first_bad, sizeof first_bad,
					    "%s: on_hand %" PRId64 " + reserved %" PRId64
					    " != %" PRId64,
					    it->sku, it->on_hand, it->reserved_qty, init);
			}
			sum_live += it->live_reservations;
			sum_rq += it->reserved_qty;
		}
		add_check("stock conserved (on_hand + reserved == seeded, per sku)",
		    conserve_bad == 0 && seen == opt.skus + 1, "%" PRId64 " skus%s%s", seen,
		    conserve_bad ? "; " : "", first_bad);
		add_check("live reservations == COMPLETED",
		    sum_live == completed && sum_rq == completed * (int64_t)opt.qty,
		    "%" PRId64 " live reservations (qty %" PRId64 "), %ld completed", sum_live,
		    sum_rq, completed);
		long live_not_completed = 0, live_checked = 0;
		for (size_t k = 0; k < r->n_reservations; k++) {
			Sagas__V1__Reservation *v = r->reservations[k];
			if (v->status != SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RESERVED)
				continue;
			long i = slot_of(v->saga_id);
			if (i < 0)
				continue;
			live_checked++;
			if (slots[i].phase != P_DONE || slots[i].state != ST_COMPLETED)
				live_not_completed++;
		}
		char cut[96];
		cut_note(cut, sizeof cut, r->reservations_truncated, r->n_reservations);
		add_check("no live reservation of a saga not COMPLETED", live_not_completed == 0,
		    "%ld of %ld live reservations listed belong to a saga not COMPLETED%s",
		    live_not_completed, live_checked, cut);
		sagas__v1__list_stock_reply__free_unpacked(r, NULL);
		rpc_result_clear(&res);
	}
	{
		Sagas__V1__ListAccountsRequest m = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
		m.include_charges = true;
		m.limit = 10000;
		rpc_result res;
		call_sync(pay, "checking accounts (ListAccounts)", "/sagas.v1.Payment/ListAccounts",
		    &m.base, &res);
		Sagas__V1__ListAccountsReply *r
		    = sagas__v1__list_accounts_reply__unpack(NULL, res.payload_len, res.payload);
		if (!r)
			die(3, "ListAccounts: malformed reply");
		int64_t charged = 0, seen = 0, bad = 0;
		long listing_quirk = 0;
		char first_bad[140] = "";
		for (size_t k = 0; k < r->n_accounts; k++) {
			Sagas__V1__Account *a = r->accounts[k];
			if (!starts_with(a->customer, tag))
				continue;
			seen++;
			int64_t init = 0;
			long idx;
			char broke[64];
			snprintf(broke, sizeof broke, "%s-broke", tag);
			if (strcmp(a->customer, broke) == 0)
				init = broke_init;
			else if (sscanf(a->customer + strlen(tag), "-cust-%ld", &idx) == 1
			    && idx >= 0 && idx < opt.customers)
				init = cust_init[idx];
			int64_t charged_amount = a->charged_amount;
			if (a->charged_count == 0 && charged_amount == INT64_MAX) {
				/* paymentd's ListAccounts reports least(NULL, max) for an
				 * account without charges: read it as 0, say so */
				charged_amount = 0;
				listing_quirk++;
			}
			if (a->balance + charged_amount != init && !bad++)
				snprintf(first_bad, sizeof first_bad,
				    "%s: balance %" PRId64 " + charged %" PRId64 " != %" PRId64,
				    a->customer, a->balance, charged_amount, init);
			charged += a->charged_count;
		}
		add_check("money conserved (balance + charged == deposited, per account)",
		    bad == 0 && seen == opt.customers + 1, "%" PRId64 " accounts%s%s", seen,
		    bad ? "; " : "", first_bad);
		if (listing_quirk)
			fprintf(stderr,
			    "sagabench: note: ListAccounts reported charged_amount %" PRId64
			    " for %ld account(s) without charges (read as 0)\n",
			    (int64_t)INT64_MAX, listing_quirk);
		add_check("COMPLETED == CHARGED", charged == completed,
		    "%" PRId64 " charged, %ld completed", charged, completed);
		long charged_not_completed = 0, listed = 0;
		for (size_t k = 0; k < r->n_charges; k++) {
			Sagas__V1__Charge *ch = r->charges[k];
			if (ch->status != SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_CHARGED)
				continue;
			long i = slot_of(ch->saga_id);
			if (i < 0)
				continue;
			listed++;
			if (slots[i].phase != P_DONE || slots[i].state != ST_COMPLETED)
				charged_not_completed++;
		}
		char cut[96];
		cut_note(cut, sizeof cut, r->charges_truncated, r->n_charges);
		add_check("no live charge of a saga not COMPLETED", charged_not_completed == 0,
		    "%ld of %ld charges listed belong to a saga not COMPLETED%s",
		    charged_not_completed, listed, cut);
		sagas__v1__list_accounts_reply__free_unpacked(r, NULL);
		rpc_result_clear(&res);
	}
	add_check("every saga ended", unfinished == 0 && n_failed_start == 0 && !timed_out,
	    "%ld unfinished, %ld refused at start%s%s", unfinished, n_failed_start,
	    n_failed_start ? ", last: " : "", n_failed_start ? last_start_error : "");
	/* a good order may be cancelled (a step deadline under overload); a
	 * failing one must never complete */
	add_check("no failing order completed", bad_kind_outcomes == 0,
	    "%ld out-of-stock/declined orders completed; %ld good orders cancelled (deadlines)",
	    bad_kind_outcomes, cancelled_other);
	bool all_ok = true;
	for (int k = 0; k < nchecks; k++)
		all_ok = all_ok && checks[k].ok;

	const char *detect = opt.detect == DETECT_POLL ? "GetSaga per saga in flight"
	    : opt.detect == DETECT_WAIT                ? "WaitSaga per saga in flight"
	                                               : "StartSaga with wait_ms, then WaitSaga";
	double polls_per = (completed + cancelled)
	    ? (double)polls_done_sagas / (double)(completed + cancelled)
	    : 0;
	if (opt.json) {
		printf(
		    "{\"label\":\"%s\",\"sagas\":%ld,\"concurrency\":%ld,\"rate\":%.3f,\"mix\":%."
		    "3f,"
		    "\"detect\":\"%s\",\"poll_ms\":%.3f,\"poll_window\":%ld,\"polls_per_s\":%.1f,"
		    "\"polls_per_saga\":%.2f,"
		    "\"elapsed_s\":%.3f,\"sagas_per_s\":%.1f,\"completed_per_s\":%.1f,"
		    "\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
		    "\"commit_latency_ms\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f,\"max\":%.0f},"
		    "\"outcomes\":{\"completed\":%ld,\"cancelled\":%ld,\"cancelled_out_of_stock\":%"
		    "ld,"
		    "\"cancelled_declined\":%ld,\"cancelled_other\":%ld,\"unfinished\":%ld,"
		    "\"refused\":%ld},\"start_retries\":%ld,\"poll_errors\":%ld,"
		    "\"invariants_ok\":%s,\"checks\":[",
		    opt.label, n_started, opt.c, opt.rate, opt.mix, detect, opt.poll_ms,
		    opt.poll_window, elapsed > 0 ? (double)n_polls / elapsed : 0, polls_per,
		    elapsed, sps, cps, pct(lat, nl, 50) / 1e3, pct(lat, nl, 90) / 1e3,
		    pct(lat, nl, 99) / 1e3, nl ? (double)lat[nl - 1] / 1e3 : 0,
		    pct(clat, ncl, 50) / 1e3, pct(clat, ncl, 90) / 1e3, pct(clat, ncl, 99) / 1e3,
		    ncl ? (double)clat[ncl - 1] / 1e3 : 0, completed, cancelled, cancelled_oos,
		    cancelled_decline, cancelled_other, unfinished, n_failed_start, n_start_retries,
		    n_poll_errors, all_ok ? "true" : "false");
		for (int k = 0; k < nchecks; k++)
			printf("%s{\"name\":\"%s\",\"ok\":%s,\"detail\":\"%s\"}", k ? "," : "",
			    checks[k].name, checks[k].ok ? "true" : "false", checks[k].detail);
		printf("]}\n");
	} else {
		printf("sagabench %s%s%s\n", opt.label, opt.label[0] ? ": " : "", tag);
		if (opt.rate > 0)
			printf("  load        open loop, %.1f sagas/s arrival, at most %ld in "
			       "flight, %ld sagas, mix %.2f\n",
			    opt.rate, opt.c, n_started, opt.mix);
		else
			printf("  load        closed loop, concurrency %ld, %ld sagas, mix %.2f\n",
			    opt.c, n_started, opt.mix);
		printf("  end seen by %s every %.2f ms, at most %ld at once (%.2f polls per saga, "
		       "%.0f polls/s)\n",
		    detect, opt.poll_ms, opt.poll_window, polls_per,
		    elapsed > 0 ? (double)n_polls / elapsed : 0);
		printf("  throughput  %.1f sagas/s ended (%.1f completed/s) in %.2f s\n", sps, cps,
		    elapsed);
		printf("  latency ms  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  (StartSaga sent -> "
		       "terminal state observed)\n",
		    pct(lat, nl, 50) / 1e3, pct(lat, nl, 90) / 1e3, pct(lat, nl, 99) / 1e3,
		    nl ? (double)lat[nl - 1] / 1e3 : 0);
		printf("  commit ms   p50 %.0f  p90 %.0f  p99 %.0f  max %.0f  (StartSaga sent -> "
		       "terminal row's updated_at, ms resolution)\n",
		    pct(clat, ncl, 50) / 1e3, pct(clat, ncl, 90) / 1e3, pct(clat, ncl, 99) / 1e3,
		    ncl ? (double)clat[ncl - 1] / 1e3 : 0);
		printf("  outcomes    %ld COMPLETED, %ld CANCELLED (%ld out of stock, %ld "
		       "declined, %ld other), %ld unfinished, %ld refused; %ld StartSaga re-sent\n",
		    completed, cancelled, cancelled_oos, cancelled_decline, cancelled_other,
		    unfinished, n_failed_start, n_start_retries);
		printf("  invariants\n");
		for (int k = 0; k < nchecks; k++)
			printf("    %-4s %s: %s\n", checks[k].ok ? "ok" : "FAIL", checks[k].name,
			    checks[k].detail);
	}
	(void)t1;
	if (!all_ok) {
		fprintf(stderr, "sagabench: INVARIANT FAILED:");
		for (int k = 0; k < nchecks; k++)
			if (!checks[k].ok)
				fprintf(stderr, " [%s: %s]", checks[k].name, checks[k].detail);
		fprintf(stderr, "\n");
	}
	rpc_client_close(orch_client);
	rpc_client_close(stock);
	rpc_client_close(pay);
	for (int i = 0; i < 3; i++)
		rpc_urls_free(&tls[i]);
	free(lat);
	free(clat);
	free(sku_need);
	free(cust_need);
	free(sku_init);
	free(cust_init);
	free(slots);
	if (timed_out || unfinished || log_failed)
		return all_ok ? 3 : 1;
	return all_ok ? 0 : 1;
}

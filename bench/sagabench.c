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

/* ---- what the parts share ---- */

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

/* the options (bench_options), read by every part */
extern options opt;

/* One invariant checked at the end. */
typedef struct check {
	const char *name;
	bool ok;
	char detail[200];
} check;

/* One run of the benchmark: what each step of main leaves for the next.
 * Allocations are freed by bench_close. */
typedef struct bench {
	/* the sagas of the run and its name (bench_plan) */
	saga_slot *slots;
	char tag[24];    /* names of this run: skus and customers */
	uint32_t run_hi; /* the first 8 hex digits of every saga id of this run */
	/* the clients and their parsed lists (bench_connect) */
	rpc_client *orch, *stock, *pay;
	rpc_urls urls[3];
	/* what each sku and customer needs, and was seeded with (bench_seed) */
	int64_t *sku_need, *cust_need;
	int64_t *sku_init, *cust_init;
	int64_t broke_init;
	/* the run (bench_run) */
	int64_t t0, t0_wall_ms;
	bool timed_out;
	long n_started, n_ended, n_failed_start, n_start_retries, n_poll_errors;
	uint64_t n_polls;
	char last_start_error[160];
	/* the figures (bench_figures) */
	FILE *logf; /* --log, open from bench_log_open to bench_figures */
	bool log_failed;
	long completed, cancelled, cancelled_oos, cancelled_decline, cancelled_other, unfinished;
	int64_t *lat, *clat; /* latencies, us, sorted */
	size_t nl, ncl;
	uint64_t polls_done_sagas;
	double elapsed, sps, cps;
	/* the invariants (bench_check) */
	check checks[16];
	int nchecks;
	bool all_ok;
} bench;

/* die prints "sagabench: " and the message on stderr and exits with
 * `code`. */
void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* now_us is the monotonic clock in us, wall_ms the wall clock in unix ms. */
int64_t now_us(void);
int64_t wall_ms(void);

/* bench_options parses the command line and the environment into `opt`,
 * exiting 0 after --help or --version and 2 on a usage error. */
void bench_options(int argc, char **argv);

/* bench_log_open opens --log for writing (exits 2 when it cannot). */
void bench_log_open(bench *b);

/* bench_init names the run (b->run_hi, b->tag) and readies the queue of
 * replies. bench_connect opens the three clients (exits 3 when a daemon
 * cannot be reached). bench_plan makes the sagas: their ids, kinds, skus and
 * customers. bench_seed gives every sku and customer enough for its good
 * sagas (exits 3 when a daemon refuses). bench_run runs the sagas until they
 * ended or --timeout. bench_close closes the clients and frees the run. */
void bench_init(bench *b);
void bench_connect(bench *b);
void bench_plan(bench *b);
void bench_seed(bench *b);
void bench_run(bench *b);
void bench_close(bench *b);

/* call_sync makes a blocking call, exiting 3 unless it answers OK; `what`
 * names it in the message. res->payload is the caller's (rpc_result_clear). */
void call_sync(rpc_client *c, const char *what, const char *method, const ProtobufCMessage *req,
    rpc_result *res);

/* bench_figures counts the outcomes and the latencies, and writes --log.
 * bench_check checks the invariants against the participants' listings
 * (exits 3 when one cannot be read). bench_report prints the report (text
 * or --json) and, when an invariant failed, says which on stderr.
 * bench_status is the exit status: 0, 1 when an invariant failed, else 3
 * when the run failed (sagas unfinished, --log not written). */
void bench_figures(bench *b);
void bench_check(bench *b);
void bench_report(const bench *b);
int bench_status(const bench *b);

/* ---- main (sagabench.c) ---- */

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sagabench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(code);
}

int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	static bench b;
	bench_options(argc, argv);
	bench_log_open(&b);
	bench_init(&b);
	bench_connect(&b);
	bench_plan(&b);
	bench_seed(&b);
	bench_run(&b);
	bench_figures(&b);
	bench_check(&b);
	bench_report(&b);
	int status = bench_status(&b);
	bench_close(&b);
	return status;
}

/* ---- the options (options.c) ---- */

options opt = {
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

/* The long options' codes without a short letter. */
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

/* parse_detect reads --detect's value. */
static int parse_detect(const char *s)
{
	if (strcmp(s, "start") == 0)
		return DETECT_START;
	if (strcmp(s, "wait") == 0)
		return DETECT_WAIT;
	if (strcmp(s, "poll") == 0)
		return DETECT_POLL;
	die(2, "invalid --detect \"%s\": want start, wait or poll", s);
}

/* parse_option sets what option `ch` (getopt_long's) with `arg` says;
 * *c_given notes -c. Exits after --help, --version or a usage error. */
static void parse_option(int ch, const char *arg, bool *c_given)
{
	switch (ch) {
	case 'o':
		opt.orch = arg;
		break;
	case 's':
		opt.stock = arg;
		break;
	case 'p':
		opt.payment = arg;
		break;
	case 'n':
		opt.n = parse_long("--sagas", arg, 1, 10000000);
		break;
	case 'c':
		opt.c = parse_long("--concurrency", arg, 1, 100000);
		*c_given = true;
		break;
	case 'r':
		opt.rate = parse_double("--rate", arg, 0.001, 1e7);
		break;
	case 'm':
		opt.mix = parse_double("--mix", arg, 0, 1);
		break;
	case O_POLL:
		opt.poll_ms = parse_double("--poll-ms", arg, 0.05, 10000);
		break;
	case O_DETECT:
		opt.detect = parse_detect(arg);
		break;
	case O_CTO:
		opt.call_timeout_ms = parse_long("--call-timeout", arg, 10, 3600000);
		break;
	case O_WIN:
		opt.poll_window = parse_long("--poll-window", arg, 1, 100000);
		break;
	case O_SKUS:
		opt.skus = parse_long("--skus", arg, 1, 100000);
		break;
	case O_CUST:
		opt.customers = parse_long("--customers", arg, 1, 100000);
		break;
	case 'd':
		opt.duration_s = parse_double("--duration", arg, 0.01, 86400);
		break;
	case 't':
		opt.timeout_s = parse_double("--timeout", arg, 0.1, 86400);
		break;
	case O_LABEL:
		opt.label = arg;
		break;
	case O_LOG:
		opt.log_path = arg;
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
		opt.tls_cert = arg;
		break;
	case O_TLS_KEY:
		opt.tls_key = arg;
		break;
	case O_TLS_CA:
		opt.tls_ca = arg;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		usage(stderr);
		exit(2);
	}
}

/* options_settle checks the URLs and sets the defaults that depend on
 * other options (c_given: -c was given). */
static void options_settle(bool c_given)
{
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

void bench_options(int argc, char **argv)
{
	const char *e;
	opt.orch = (e = getenv("SAGA_ORCHESTRATOR_URL")) && *e ? e : "tcp://127.0.0.1:7101";
	opt.stock = (e = getenv("SAGA_STOCK_URL")) && *e ? e : "tcp://127.0.0.1:7102";
	opt.payment = (e = getenv("SAGA_PAYMENT_URL")) && *e ? e : "tcp://127.0.0.1:7103";
	opt.tls_cert = (e = getenv("SAGABENCH_TLS_CERT")) ? e : "";
	opt.tls_key = (e = getenv("SAGABENCH_TLS_KEY")) ? e : "";
	opt.tls_ca = (e = getenv("SAGABENCH_TLS_CA")) ? e : "";
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
	while ((ch = getopt_long(argc, argv, "o:s:p:n:c:r:m:t:d:h", lo, NULL)) != -1)
		parse_option(ch, optarg, &c_given);
	if (optind < argc) {
		fprintf(
		    stderr, "sagabench: unexpected argument \"%s\" (see --help)\n", argv[optind]);
		exit(2);
	}
	options_settle(c_given);
}

/* ---- the run (run.c) ---- */

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

/* ---- the invariants (checks.c) ---- */

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

static void add_check(bench *b, const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_check(bench *b, const char *name, bool ok, const char *fmt, ...)
{
	check *c = &b->checks[b->nchecks++];
	c->name = name;
	c->ok = ok;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof c->detail, fmt, ap);
	va_end(ap);
}

/* the slot of a saga id of this run, or -1 */
static long slot_of(const bench *b, const char *id)
{
	unsigned hi;
	unsigned long long lo;
	if (strlen(id) != 36 || sscanf(id, "%8x", &hi) != 1 || hi != b->run_hi)
		return -1;
	if (sscanf(id + 24, "%12llx", &lo) != 1 || lo >= (unsigned long long)opt.n)
		return -1;
	return (long)lo;
}

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* check_stock checks the stock against ListStock: conserved per sku, the
 * live reservations those of the COMPLETED sagas. */
static void check_stock(bench *b)
{
	const char *tag = b->tag;
	Sagas__V1__ListStockRequest m = SAGAS__V1__LIST_STOCK_REQUEST__INIT;
	m.include_reservations = true;
	m.limit = 10000;
	rpc_result res;
	call_sync(
	    b->stock, "checking stock (ListStock)", "/sagas.v1.Stock/ListStock", &m.base, &res);
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
			init = b->sku_init[idx];
		if (it->on_hand + it->reserved_qty != init) {
			if (!conserve_bad++)
				snprintf(first_bad, sizeof first_bad,
				    "%s: on_hand %" PRId64 " + reserved %" PRId64 " != %" PRId64,
				    it->sku, it->on_hand, it->reserved_qty, init);
		}
		sum_live += it->live_reservations;
		sum_rq += it->reserved_qty;
	}
	add_check(b, "stock conserved (on_hand + reserved == seeded, per sku)",
	    conserve_bad == 0 && seen == opt.skus + 1, "%" PRId64 " skus%s%s", seen,
	    conserve_bad ? "; " : "", first_bad);
	add_check(b, "live reservations == COMPLETED",
	    sum_live == b->completed && sum_rq == b->completed * (int64_t)opt.qty,
	    "%" PRId64 " live reservations (qty %" PRId64 "), %ld completed", sum_live, sum_rq,
	    b->completed);
	long live_not_completed = 0, live_checked = 0;
	for (size_t k = 0; k < r->n_reservations; k++) {
		Sagas__V1__Reservation *v = r->reservations[k];
		if (v->status != SAGAS__V1__RESERVATION_STATUS__RESERVATION_STATUS_RESERVED)
			continue;
		long i = slot_of(b, v->saga_id);
		if (i < 0)
			continue;
		live_checked++;
		if (b->slots[i].phase != P_DONE || b->slots[i].state != ST_COMPLETED)
			live_not_completed++;
	}
	char cut[96];
	cut_note(cut, sizeof cut, r->reservations_truncated, r->n_reservations);
	add_check(b, "no live reservation of a saga not COMPLETED", live_not_completed == 0,
	    "%ld of %ld live reservations listed belong to a saga not COMPLETED%s",
	    live_not_completed, live_checked, cut);
	sagas__v1__list_stock_reply__free_unpacked(r, NULL);
	rpc_result_clear(&res);
}

/* account_init is what account `a` of this run was seeded with. */
static int64_t account_init(const bench *b, const Sagas__V1__Account *a)
{
	int64_t init = 0;
	long idx;
	char broke[64];
	snprintf(broke, sizeof broke, "%s-broke", b->tag);
	if (strcmp(a->customer, broke) == 0)
		init = b->broke_init;
	else if (sscanf(a->customer + strlen(b->tag), "-cust-%ld", &idx) == 1 && idx >= 0
	    && idx < opt.customers)
		init = b->cust_init[idx];
	return init;
}

/* check_accounts checks the money against ListAccounts: conserved per
 * account, the charges those of the COMPLETED sagas. */
static void check_accounts(bench *b)
{
	Sagas__V1__ListAccountsRequest m = SAGAS__V1__LIST_ACCOUNTS_REQUEST__INIT;
	m.include_charges = true;
	m.limit = 10000;
	rpc_result res;
	call_sync(b->pay, "checking accounts (ListAccounts)", "/sagas.v1.Payment/ListAccounts",
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
		if (!starts_with(a->customer, b->tag))
			continue;
		seen++;
		int64_t init = account_init(b, a);
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
	add_check(b, "money conserved (balance + charged == deposited, per account)",
	    bad == 0 && seen == opt.customers + 1, "%" PRId64 " accounts%s%s", seen,
	    bad ? "; " : "", first_bad);
	if (listing_quirk)
		fprintf(stderr,
		    "sagabench: note: ListAccounts reported charged_amount %" PRId64
		    " for %ld account(s) without charges (read as 0)\n",
		    (int64_t)INT64_MAX, listing_quirk);
	add_check(b, "COMPLETED == CHARGED", charged == b->completed,
	    "%" PRId64 " charged, %ld completed", charged, b->completed);
	long charged_not_completed = 0, listed = 0;
	for (size_t k = 0; k < r->n_charges; k++) {
		Sagas__V1__Charge *ch = r->charges[k];
		if (ch->status != SAGAS__V1__CHARGE_STATUS__CHARGE_STATUS_CHARGED)
			continue;
		long i = slot_of(b, ch->saga_id);
		if (i < 0)
			continue;
		listed++;
		if (b->slots[i].phase != P_DONE || b->slots[i].state != ST_COMPLETED)
			charged_not_completed++;
	}
	char cut[96];
	cut_note(cut, sizeof cut, r->charges_truncated, r->n_charges);
	add_check(b, "no live charge of a saga not COMPLETED", charged_not_completed == 0,
	    "%ld of %ld charges listed belong to a saga not COMPLETED%s", charged_not_completed,
	    listed, cut);
	sagas__v1__list_accounts_reply__free_unpacked(r, NULL);
	rpc_result_clear(&res);
}

void bench_check(bench *b)
{
	long bad_kind_outcomes = 0;
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &b->slots[i];
		if (s->phase != P_DONE)
			continue;
		if (s->kind != K_GOOD && s->state == ST_COMPLETED)
			bad_kind_outcomes++;
	}
	check_stock(b);
	check_accounts(b);
	add_check(b, "every saga ended",
	    b->unfinished == 0 && b->n_failed_start == 0 && !b->timed_out,
	    "%ld unfinished, %ld refused at start%s%s", b->unfinished, b->n_failed_start,
	    b->n_failed_start ? ", last: " : "", b->n_failed_start ? b->last_start_error : "");
	/* a good order may be cancelled (a step deadline under overload); a
	 * failing one must never complete */
	add_check(b, "no failing order completed", bad_kind_outcomes == 0,
	    "%ld out-of-stock/declined orders completed; %ld good orders cancelled (deadlines)",
	    bad_kind_outcomes, b->cancelled_other);
	b->all_ok = true;
	for (int k = 0; k < b->nchecks; k++)
		b->all_ok = b->all_ok && b->checks[k].ok;
}

/* ---- the figures and the report (report.c) ---- */

void bench_log_open(bench *b)
{
	if (opt.log_path && !(b->logf = fopen(opt.log_path, "w")))
		die(2, "cannot write --log %s: %s", opt.log_path, strerror(errno));
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

/* figures_log_close closes --log: a log that could not be written is
 * reported now, and makes the exit status 3 unless an invariant failed (1
 * wins) */
static void figures_log_close(bench *b)
{
	if (b->logf) {
		bool bad = ferror(b->logf) != 0;
		if (fclose(b->logf) != 0 || bad) {
			fprintf(stderr, "sagabench: cannot write --log %s: %s\n", opt.log_path,
			    bad ? "write error" : strerror(errno));
			b->log_failed = true;
		}
		b->logf = NULL;
	}
}

void bench_figures(bench *b)
{
	int64_t last_end = b->t0;
	b->lat = calloc((size_t)opt.n, sizeof *b->lat);
	b->clat = calloc((size_t)opt.n, sizeof *b->clat);
	if (b->logf)
		fprintf(b->logf,
		    "# start_ms latency_ms state saga_id (the run began at unix ms %" PRId64 ")\n",
		    b->t0_wall_ms);
	for (long i = 0; i < opt.n; i++) {
		saga_slot *s = &b->slots[i];
		if (s->phase != P_DONE) {
			if (s->phase != P_FAILED && s->phase != P_IDLE)
				b->unfinished++;
			continue;
		}
		if (b->logf)
			fprintf(b->logf, "%.3f %.3f %s %s\n", (double)(s->t_sent_us - b->t0) / 1e3,
			    (double)(s->t_end_us - s->t_sent_us) / 1e3,
			    s->state == ST_COMPLETED ? "COMPLETED" : "CANCELLED", s->id);
		if (s->state == ST_COMPLETED)
			b->completed++;
		else {
			b->cancelled++;
			if (s->kind == K_OOS)
				b->cancelled_oos++;
			else if (s->kind == K_DECLINE)
				b->cancelled_decline++;
			else
				b->cancelled_other++;
		}
		b->lat[b->nl++] = s->t_end_us - s->t_sent_us;
		if (s->t_commit_wall > 0)
			b->clat[b->ncl++] = (s->t_commit_wall - s->t_sent_wall) * 1000;
		if (s->t_end_us > last_end)
			last_end = s->t_end_us;
		b->polls_done_sagas += s->polls;
	}
	figures_log_close(b);
	qsort(b->lat, b->nl, sizeof *b->lat, cmp_i64);
	qsort(b->clat, b->ncl, sizeof *b->clat, cmp_i64);
	b->elapsed = (double)(last_end - b->t0) / 1e6;
	b->sps = b->elapsed > 0 ? (double)(b->completed + b->cancelled) / b->elapsed : 0;
	b->cps = b->elapsed > 0 ? (double)b->completed / b->elapsed : 0;
}

/* report_detect names how the ends were seen. */
static const char *report_detect(void)
{
	return opt.detect == DETECT_POLL ? "GetSaga per saga in flight"
	    : opt.detect == DETECT_WAIT  ? "WaitSaga per saga in flight"
	                                 : "StartSaga with wait_ms, then WaitSaga";
}

/* report_polls_per is the polls per ended saga. */
static double report_polls_per(const bench *b)
{
	return (b->completed + b->cancelled)
	    ? (double)b->polls_done_sagas / (double)(b->completed + b->cancelled)
	    : 0;
}

static void report_json(const bench *b)
{
	const int64_t *lat = b->lat, *clat = b->clat;
	size_t nl = b->nl, ncl = b->ncl;
	printf("{\"label\":\"%s\",\"sagas\":%ld,\"concurrency\":%ld,\"rate\":%.3f,\"mix\":%."
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
	    opt.label, b->n_started, opt.c, opt.rate, opt.mix, report_detect(), opt.poll_ms,
	    opt.poll_window, b->elapsed > 0 ? (double)b->n_polls / b->elapsed : 0,
	    report_polls_per(b), b->elapsed, b->sps, b->cps, pct(lat, nl, 50) / 1e3,
	    pct(lat, nl, 90) / 1e3, pct(lat, nl, 99) / 1e3, nl ? (double)lat[nl - 1] / 1e3 : 0,
	    pct(clat, ncl, 50) / 1e3, pct(clat, ncl, 90) / 1e3, pct(clat, ncl, 99) / 1e3,
	    ncl ? (double)clat[ncl - 1] / 1e3 : 0, b->completed, b->cancelled, b->cancelled_oos,
	    b->cancelled_decline, b->cancelled_other, b->unfinished, b->n_failed_start,
	    b->n_start_retries, b->n_poll_errors, b->all_ok ? "true" : "false");
	for (int k = 0; k < b->nchecks; k++)
		printf("%s{\"name\":\"%s\",\"ok\":%s,\"detail\":\"%s\"}", k ? "," : "",
		    b->checks[k].name, b->checks[k].ok ? "true" : "false", b->checks[k].detail);
	printf("]}\n");
}

static void report_text(const bench *b)
{
	const int64_t *lat = b->lat, *clat = b->clat;
	size_t nl = b->nl, ncl = b->ncl;
	printf("sagabench %s%s%s\n", opt.label, opt.label[0] ? ": " : "", b->tag);
	if (opt.rate > 0)
		printf("  load        open loop, %.1f sagas/s arrival, at most %ld in "
		       "flight, %ld sagas, mix %.2f\n",
		    opt.rate, opt.c, b->n_started, opt.mix);
	else
		printf("  load        closed loop, concurrency %ld, %ld sagas, mix %.2f\n", opt.c,
		    b->n_started, opt.mix);
	printf("  end seen by %s every %.2f ms, at most %ld at once (%.2f polls per saga, "
	       "%.0f polls/s)\n",
	    report_detect(), opt.poll_ms, opt.poll_window, report_polls_per(b),
	    b->elapsed > 0 ? (double)b->n_polls / b->elapsed : 0);
	printf("  throughput  %.1f sagas/s ended (%.1f completed/s) in %.2f s\n", b->sps, b->cps,
	    b->elapsed);
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
	    b->completed, b->cancelled, b->cancelled_oos, b->cancelled_decline, b->cancelled_other,
	    b->unfinished, b->n_failed_start, b->n_start_retries);
	printf("  invariants\n");
	for (int k = 0; k < b->nchecks; k++)
		printf("    %-4s %s: %s\n", b->checks[k].ok ? "ok" : "FAIL", b->checks[k].name,
		    b->checks[k].detail);
}

void bench_report(const bench *b)
{
	if (opt.json)
		report_json(b);
	else
		report_text(b);
	if (!b->all_ok) {
		fprintf(stderr, "sagabench: INVARIANT FAILED:");
		for (int k = 0; k < b->nchecks; k++)
			if (!b->checks[k].ok)
				fprintf(
				    stderr, " [%s: %s]", b->checks[k].name, b->checks[k].detail);
		fprintf(stderr, "\n");
	}
}

int bench_status(const bench *b)
{
	if (b->timed_out || b->unfinished || b->log_failed)
		return b->all_ok ? 3 : 1;
	return b->all_ok ? 0 : 1;
}

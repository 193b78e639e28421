/* options: sagabench's command line and environment (bench_options). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "version.h"

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
	    "Runs N order sagas against a running orchestratord, stockd, paymentd and\n"
	    "shippingd (the orchestrator's --shipping: sagabench checks stock and\n"
	    "money; the shipments are shippingd's), and\n"
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

/* orchestratord: the saga orchestrator daemon. Reads its configuration
 * (flags, environment, file), applies its schema, starts the engine and the
 * Orchestrator API, and runs until SIGINT or SIGTERM. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "admin.h"
#include "api.h"
#include "authz.h"
#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "daemon_net.h"
#include "dbclock.h"
#include "elect.h"
#include "engine.h"
#include "horizon.h"
#include "fault.h"
#include "health.h"
#include "listen.h"
#include "log.h"
#include "orch_defs.h"
#include "orch_metrics.h"
#include "pg.h"
#include "report.h"
#include "retention.h"
#include "rpc.h"
#include "store.h"
#include "store_retention.h"
#include "tls.h"
#include "waits.h"

/* The default of --request-timeout-max when --request-timeout is shorter. */
#define ORCH_REQUEST_TIMEOUT_MAX_MS 30000
/* report.c: a saga past its step deadline by this much is not being moved */
#define ORCH_REPORT_OVERDUE_MS 10000

typedef struct orch_config {
	daemon_net net;
	char db[CONFIG_STR_MAX];
	char stock[CONFIG_STR_MAX];
	char payment[CONFIG_STR_MAX];
	char shipping[CONFIG_STR_MAX];
	char links[CONFIG_STR_MAX];
	char definitions[CONFIG_STR_MAX];
	char log_level[CONFIG_STR_MAX];
	int64_t workers;
	int64_t step_timeout;
	int64_t request_timeout;
	int64_t request_timeout_max;
	int64_t resend;
	int64_t backoff_base;
	int64_t backoff_cap;
	int64_t attention_after;
	int64_t sweep_interval;
	int64_t report_interval;
	int64_t gauge_interval;
	int64_t overdue_margin;
	int64_t stuck_after;
	int64_t max_listings;
	int64_t max_listings_per_caller;
	int64_t batch;
	int64_t send_batch;
	int64_t max_inflight;
	int64_t batch_delay;
	int64_t batch_siblings;
	int64_t engines;
	int64_t max_waits;
	int64_t db_wait;
	int64_t db_link_timeout;
	int64_t stop_timeout;
	int64_t retention_s, skew_s, id_retention_s;
	int64_t retention_interval;
	bool duplicate_delivery;
	char fault[CONFIG_STR_MAX];
	char participant_cert[CONFIG_STR_MAX];
	char participant_key[CONFIG_STR_MAX];
	char participant_ca[CONFIG_STR_MAX];
} orch_config;

#define OPT(n, e, t, d, lo, hi, f, h, u)                                                           \
	{                                                                                          \
		n, e, t, d, lo, hi, offsetof(orch_config, f), h, u                                 \
	}
static const config_opt orch_opts[] = {
    OPT("db", "SAGA_ORCHESTRATOR_DB", CONFIG_STR, "dbname=sagas_orchestrator", 0, 0, db,
        "libpq conninfo of the orchestrator's database (no password here: use a passfile or "
        "the config file)",
        "CONNINFO"),
    OPT("stock", "SAGA_STOCK_URL", CONFIG_STR, "tcp://127.0.0.1:7102", 0, 0, stock,
        "nng URL of the stock daemon, or a comma-separated list of its replicas' URLs "
        "(commands are spread over those up; docs/operations.md)",
        "URL[,URL...]"),
    OPT("payment", "SAGA_PAYMENT_URL", CONFIG_STR, "tcp://127.0.0.1:7103", 0, 0, payment,
        "nng URL of the payment daemon, or a comma-separated list of its replicas' URLs",
        "URL[,URL...]"),
    OPT("shipping", "SAGA_SHIPPING_URL", CONFIG_STR, "tcp://127.0.0.1:7104", 0, 0, shipping,
        "nng URL of the shipping daemon, or a comma-separated list of its replicas' URLs",
        "URL[,URL...]"),
    OPT("links", "SAGA_ORCHESTRATOR_LINKS", CONFIG_STR, "", 0, 0, links,
        "more participants' links, for the definitions' urls: --NAME (docs/saga-definitions.md): "
        "NAME=URL[,URL...] entries separated by ';', each serving the service its participant "
        "declares, with the TLS settings of the others; at most 5",
        "NAME=URLS[;...]"),
    OPT("definitions", "SAGA_ORCHESTRATOR_DEFINITIONS", CONFIG_STR, "", 0, 0, definitions,
        "the saga definitions file (YAML or JSON; docs/saga-definitions.md): the saga types "
        "it runs, their flows, state names, commands, participants and timing (sagactl "
        "definitions check FILE tells whether this build runs it); empty = "
        "orchestrator/definitions/order.yaml as built in",
        "FILE"),
    OPT("participant-tls-cert", "SAGA_ORCHESTRATOR_PARTICIPANT_TLS_CERT", CONFIG_STR, "", 0, 0,
        participant_cert,
        "the certificate (PEM) the orchestrator shows the participants on tls+tcp:// links "
        "(signed by the orchestrator role's CA)",
        "FILE"),
    OPT("participant-tls-key", "SAGA_ORCHESTRATOR_PARTICIPANT_TLS_KEY", CONFIG_STR, "", 0, 0,
        participant_key, "the private key of --participant-tls-cert (PEM)", "FILE"),
    OPT("participant-tls-ca", "SAGA_ORCHESTRATOR_PARTICIPANT_TLS_CA", CONFIG_STR, "", 0, 0,
        participant_ca, "the CA that signs the participants' certificates (PEM)", "FILE"),
    OPT("workers", "SAGA_ORCHESTRATOR_WORKERS", CONFIG_INT, "4", 1, 64, workers,
        "API worker threads (each with its own database connection)", "N"),
    OPT("max-listings", "SAGA_ORCHESTRATOR_MAX_LISTINGS", CONFIG_INT, "2", 1, 64, max_listings,
        "most ListSagas served at once (more are refused RESOURCE_EXHAUSTED); kept below "
        "--workers, so that listings never hold every worker StartSaga needs",
        "N"),
    OPT("max-listings-per-caller", "SAGA_ORCHESTRATOR_MAX_LISTINGS_PER_CALLER", CONFIG_INT, "0", 0,
        64, max_listings_per_caller,
        "most ListSagas served at once for one caller (its address); 0 = --max-listings", "N"),
    OPT("step-timeout", "SAGA_ORCHESTRATOR_STEP_TIMEOUT_MS", CONFIG_INT, "5000", 10, 86400000,
        step_timeout,
        "deadline of a step (ReserveStock, ChargePayment) from its start, unless the "
        "step's definition has its own deadline_ms",
        "MS"),
    OPT("request-timeout", "SAGA_ORCHESTRATOR_REQUEST_TIMEOUT_MS", CONFIG_INT, "2000", 10, 600000,
        request_timeout,
        "how long a command's first try waits for its reply (each retry waits twice as long, "
        "a step's never past its deadline)",
        "MS"),
    OPT("request-timeout-max", "SAGA_ORCHESTRATOR_REQUEST_TIMEOUT_MAX_MS", CONFIG_INT, "0", 0,
        3600000, request_timeout_max,
        "the longest a retry waits for its reply; 0 = 30000, or --request-timeout if that is "
        "longer",
        "MS"),
    OPT("req-resend", "SAGA_ORCHESTRATOR_REQ_RESEND_MS", CONFIG_INT, "0", 0, 600000, resend,
        "nng REQ resend time; 0 = off (the orchestrator retries a lost command itself)", "MS"),
    OPT("backoff-base", "SAGA_ORCHESTRATOR_BACKOFF_BASE_MS", CONFIG_INT, "50", 1, 600000,
        backoff_base, "first retry delay ceiling (exponential backoff, full jitter)", "MS"),
    OPT("backoff-cap", "SAGA_ORCHESTRATOR_BACKOFF_CAP_MS", CONFIG_INT, "5000", 1, 3600000,
        backoff_cap, "largest retry delay", "MS"),
    OPT("attention-after", "SAGA_ORCHESTRATOR_ATTENTION_AFTER", CONFIG_INT, "10", 1, 1000000,
        attention_after,
        "failed tries of a compensation or of ShipOrder (retried, never compensated) before "
        "a saga is flagged",
        "N"),
    OPT("sweep-interval", "SAGA_ORCHESTRATOR_SWEEP_INTERVAL_MS", CONFIG_INT, "100", 1, 60000,
        sweep_interval, "how often due retries, deadlines and unfinished sagas are looked for",
        "MS"),
    OPT("report-interval", "SAGA_ORCHESTRATOR_REPORT_INTERVAL_MS", CONFIG_INT, "60000", 0, 86400000,
        report_interval,
        "how often one of the orchestrators sharing the database (elected) logs the sagas "
        "needing attention or past their deadline by 10 s; 0 = never",
        "MS"),
    OPT("gauge-interval", "SAGA_ORCHESTRATOR_GAUGE_INTERVAL_MS", CONFIG_INT, "15000", 0, 86400000,
        gauge_interval,
        "how often one of the orchestrators sharing the database (elected) reads the sagas "
        "table's gauges for /metrics (sagas_open, sagas_attention, sagas_overdue); 0 = never",
        "MS"),
    OPT("overdue-margin", "SAGA_ORCHESTRATOR_OVERDUE_MARGIN_MS", CONFIG_INT, "60000", 1,
        31536000000, overdue_margin,
        "sagactl list --overdue and sagas_overdue: an unfinished saga whose step deadline passed "
        "longer ago than this is past_deadline (when a request gives none)",
        "MS"),
    OPT("stuck-after", "SAGA_ORCHESTRATOR_STUCK_AFTER_MS", CONFIG_INT, "600000", 1, 31536000000,
        stuck_after,
        "sagactl list --overdue and sagas_overdue: an unfinished saga whose row has not changed "
        "for longer than this is stuck (when a request gives none)",
        "MS"),
    OPT("batch", "SAGA_ORCHESTRATOR_BATCH", CONFIG_INT, "256", 1, 10000, batch,
        "most saga transitions written in one transaction", "N"),
    OPT("send-batch", "SAGA_ORCHESTRATOR_SEND_BATCH", CONFIG_INT, "128", 1, RPC_BATCH_MAX,
        send_batch, "most commands sent to a participant in one frame (1 = a frame per command)",
        "N"),
    OPT("batch-delay", "SAGA_ORCHESTRATOR_BATCH_DELAY_US", CONFIG_INT, "3000", 0, 100000,
        batch_delay,
        "under load, how long an API worker holding a StartSaga with wait_ms sleeps to "
        "gather more into one insert (0 = never)",
        "US"),
    OPT("batch-siblings", "SAGA_ORCHESTRATOR_BATCH_SIBLINGS", CONFIG_INT, "4", 1, 1000000,
        batch_siblings, "commands in flight from which --batch-delay applies (under load)", "N"),
    OPT("max-inflight", "SAGA_ORCHESTRATOR_MAX_INFLIGHT", CONFIG_INT, "4096", 1, 1000000,
        max_inflight, "most commands awaiting replies at once", "N"),
    OPT("engines", "SAGA_ORCHESTRATOR_ENGINES", CONFIG_INT, "1", 1, 16, engines,
        "engine threads, each with its own connection and commits (sagas spread by id; "
        "more than 1 pays only with more cores)",
        "N"),
    OPT("max-waits", "SAGA_ORCHESTRATOR_MAX_WAITS", CONFIG_INT, "4096", 1, 60000, max_waits,
        "most WaitSaga calls waiting at once (more are answered at once, unfinished)", "N"),
    OPT("db-wait", "SAGA_ORCHESTRATOR_DB_WAIT_MS", CONFIG_INT, "30000", 0, 3600000, db_wait,
        "how long to wait for the database at start and on reconnect", "MS"),
    OPT("db-link-timeout", "SAGA_ORCHESTRATOR_DB_LINK_TIMEOUT_MS", CONFIG_INT, "20000", 2000,
        3600000, db_link_timeout,
        "a database connection that gets no answer for this long is taken as dead at both "
        "ends (TCP keepalives and tcp_user_timeout, unless the conninfo sets them), and an "
        "elected job's leader that cannot confirm its session within it stops leading "
        "(docs/operations.md, \"A database link that stalls\")",
        "MS"),
    OPT("stop-timeout", "SAGA_ORCHESTRATOR_STOP_TIMEOUT_MS", CONFIG_INT, "15000", 0, 3600000,
        stop_timeout,
        "after SIGTERM or SIGINT, the longest a stop may take before the process ends "
        "anyway (0 = no bound; docs/operations.md)",
        "MS"),
    OPT("retention", "SAGA_ORCHESTRATOR_RETENTION_S", CONFIG_INT, "604800", 3600,
        100LL * 365 * 86400, retention_s,
        "a saga is driven for this long from its start (then flagged past_horizon), and "
        "deleted with its history once finished and older than it plus 4 x "
        "--max-clock-skew (docs/saga-semantics.md, \"Retention\"); the same on every daemon",
        "S"),
    OPT("saga-id-retention", "SAGA_ORCHESTRATOR_SAGA_ID_RETENTION_S", CONFIG_INT, "2592000", 3600,
        100LL * 365 * 86400, id_retention_s,
        "the longest --retention of any participant (a value below --retention counts as "
        "--retention): a deleted saga's id is refused by StartSaga (saga_id_retired) until no "
        "participant can keep a record "
        "of it, this long past the saga's deletion (docs/saga-semantics.md, rule R5)",
        "S"),
    OPT("max-clock-skew", "SAGA_ORCHESTRATOR_MAX_CLOCK_SKEW_S", CONFIG_INT, "300", 0, 86400, skew_s,
        "the largest error tolerated between the databases' clocks; the same on every daemon", "S"),
    OPT("retention-interval", "SAGA_ORCHESTRATOR_RETENTION_INTERVAL_MS", CONFIG_INT, "60000", 0,
        86400000, retention_interval,
        "how often one of the orchestrators sharing the database (elected) deletes the sagas "
        "past --retention (docs/operations.md, \"Retention\"); 0 = never (sagactl retention "
        "still can)",
        "MS"),
    OPT("duplicate-delivery", "SAGA_ORCHESTRATOR_DUPLICATE_DELIVERY", CONFIG_BOOL, "false", 0, 0,
        duplicate_delivery, "send every command twice at once (idempotency tests)", NULL),
    OPT("fault", "SAGA_ORCHESTRATOR_FAULT", CONFIG_STR, "", 0, 0, fault,
        "failure injection, e.g. exit_after_send:ChargePayment (docs/testing.md)", "SPEC"),
    OPT("log-level", "SAGA_ORCHESTRATOR_LOG_LEVEL", CONFIG_STR, "info", 0, 0, log_level,
        "debug, info, warn or error", "LEVEL"),
};

/* orch_instance_name writes this process's name into buf (n bytes, 64 is
 * enough): "<host>/<pid>/<8 hex digits of a random UUID>", unique among the
 * orchestrators sharing a database even when a restarted container has the
 * same host name and pid. It is the lease owner the engines write on the
 * sagas they claim (sagas.lease_owner) and the name the waits' notifications
 * compare (docs/architecture.md, "Several orchestrators"). */
static void orch_instance_name(char *buf, size_t n)
{
	char host[32] = "";
	if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
		strcpy(host, "orchestratord");
	host[sizeof host - 1] = '\0';
	uuid_t u;
	char hex[UUID_STR_LEN];
	uuid_generate_random(u);
	uuid_unparse_lower(u, hex);
	snprintf(buf, n, "%s/%ld/%.8s", host, (long)getpid(), hex);
}

/* The database probe behind sagas.v1.Health/Check (NOT_SERVING while the
 * database is unreachable). */
static health_db *orch_health;

static bool orch_healthy(void *app)
{
	(void)app;
	return health_db_check(orch_health);
}

/* orch_engines_stop stops the first `n` engines. */
static void orch_engines_stop(engine **engs, int n)
{
	for (int i = 0; i < n; i++)
		engine_stop(engs[i]);
}

/* orch_finished hands a finished saga from the engine to the waiting
 * WaitSaga calls. */
static void orch_finished(void *arg, const saga_row *row)
{
	waits_finished(arg, row);
}

/* orch_participant_urls parses the URL list `list` of option `opt` into *u
 * and makes the client configuration of each tls+tcp:// entry. Returns 0,
 * or 2 after printing what is wrong, naming the bad entry (*u is then for
 * rpc_urls_free). */
static int orch_participant_urls(
    rpc_urls *u, const orch_config *c, const char *opt, const char *list)
{
	char err[1024];
	if (rpc_urls_parse(u, list, err, sizeof err) != 0) {
		config_error("invalid value for %s: %s\n", opt, err);
		return 2;
	}
	const char *tls = rpc_urls_tls_entry(u);
	if (tls == NULL)
		return 0;
	if (!c->participant_cert[0] || !c->participant_key[0] || !c->participant_ca[0]) {
		config_error("%s is a TLS URL, which needs --participant-tls-cert, "
		             "--participant-tls-key and --participant-tls-ca (docs/security.md)\n",
		    tls);
		return 2;
	}
	tls_files f
	    = {.cert = c->participant_cert, .key = c->participant_key, .ca = c->participant_ca};
	if (rpc_urls_tls(u, &f, err, sizeof err) != 0) {
		config_error("could not set up TLS for %s: %s\n", u->n == 1 ? tls : opt, err);
		return 2;
	}
	return 0;
}

/* One TLS link to probe at start (orch_probe_link). */
typedef struct orch_probe {
	const char *name; /* "stockd" */
	const char *url;
	tls_conf *tls;
} orch_probe;

/* orch_probe_link, on a detached thread, dials one participant's tls+tcp://
 * URL once at start and logs what a failed handshake means: the engine's
 * own dialer retries quietly, and a saga would only time out. A dial that
 * hangs (an address that does not answer) holds nothing but this thread. */
static void *orch_probe_link(void *arg)
{
	const orch_probe *p = arg;
	rpc_client *c = NULL;
	rpc_client_opts o = {.connect_now = true, .tls = p->tls};
	int rc = rpc_client_open(&c, p->url, &o);
	if (rc == 0)
		log_info(NULL, "mutual TLS with %s at %s: handshake done", p->name, p->url);
	else if (rc == -EACCES)
		log_error(NULL,
		    "mutual TLS with %s at %s: the handshake failed: does its certificate name "
		    "the host dialled (dial an address as tls+tcp://ADDR:PORT?server_name=NAME, "
		    "NAME a name in its certificate)? does %s trust the CA of "
		    "--participant-tls-cert (the orchestrator role's), and --participant-tls-ca "
		    "its certificate? Commands to it will time out (docs/security.md)",
		    p->name, p->url, p->name);
	else
		log_warn(NULL, "%s at %s is not reachable yet: %s (the engine keeps dialing)",
		    p->name, p->url, strerror(-rc));
	rpc_client_close(c);
	return NULL;
}

/* orch_probe_links starts orch_probe_link for each TLS participant URL
 * (each replica's). */
static void orch_probe_links(orch_probe *probes, int n)
{
	for (int i = 0; i < n; i++) {
		if (probes[i].tls == NULL)
			continue;
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, orch_probe_link, &probes[i]) != 0)
			log_warn(NULL, "could not probe %s at start", probes[i].url);
		pthread_attr_destroy(&a);
	}
}

/* orch_max_listings is --max-listings kept below --workers (one worker
 * stays free for StartSaga and the rest; with one worker there is none to
 * keep), said when lowered. */
static int orch_max_listings(int64_t max, int64_t workers)
{
	int64_t keep = workers > 1 ? workers - 1 : 1;
	if (max <= keep)
		return (int)max;
	if (workers > 1)
		log_info(NULL,
		    "--max-listings %lld lowered to %lld: at least one of the %lld --workers stays "
		    "free of listings",
		    (long long)max, (long long)keep, (long long)workers);
	else
		log_warn(NULL,
		    "--max-listings %lld lowered to 1: with --workers 1 a listing holds the only "
		    "worker while it runs (its statement timeout bounds it); give --workers 2 or "
		    "more to keep one free for StartSaga",
		    (long long)max);
	return (int)keep;
}

/* A step's return that ends the process with 0 at once (--help). */
#define ORCH_DONE (-1)

/* Everything the daemon starts, for its one teardown (orch_stop): each step
 * of main fills its part; what was not started stays zeroed. One static
 * instance (main's): the probes, the elected jobs and the server read it for
 * the process's lifetime. */
typedef struct orch {
	orch_config c;
	horizon_policy horizon; /* the retention job's arg */
	/* each participant's replicas: stock, payment, shipping, then those of
	 * --links (link_table: their names and services) */
	rpc_urls links[ORCH_LINKS_MAX];
	saga_def_link link_table[ORCH_LINKS_MAX];
	char link_names[ORCH_LINKS_MAX][32];
	char link_lists[ORCH_LINKS_MAX][CONFIG_STR_MAX];
	int nlinks;
	orch_probe probes[ORCH_LINKS_MAX * RPC_URLS_MAX];
	char instance[64];
	orch_defs defs; /* the definitions the engines run */
	engine_config ec;
	waits *wt;
	listener *ls;
	engine *engs[16];
	int n_engines; /* started */
	api a;
	retention_config ret_cfg;
	rpc_server *srv;
	report *rep;
	retention *ret;
	bool ran; /* served until a stop was asked */
} orch;

/* orch_check_options checks what config_load cannot (the horizon, the
 * backoff and request timeouts against each other) and sets the defaults
 * that depend on other options. Returns 0, or 2 after saying what is
 * wrong. */
static int orch_check_options(orch *o)
{
	orch_config *c = &o->c;
	o->horizon = (horizon_policy) {.retention_ms = c->retention_s * 1000,
	    .skew_ms = c->skew_s * 1000,
	    /* never below --retention (the participants' own, by default) */
	    .id_retention_ms
	    = (c->id_retention_s > c->retention_s ? c->id_retention_s : c->retention_s) * 1000};
	const char *bad_horizon = horizon_policy_check(&o->horizon);
	if (bad_horizon != NULL) {
		config_error("--retention and --max-clock-skew: %s\n", bad_horizon);
		return 2;
	}
	if (c->backoff_cap < c->backoff_base) {
		config_error("backoff-cap (%lld) is below backoff-base (%lld)\n",
		    (long long)c->backoff_cap, (long long)c->backoff_base);
		return 2;
	}
	if (c->request_timeout_max == 0) /* the default: 30 s, or the first try's */
		c->request_timeout_max = c->request_timeout > ORCH_REQUEST_TIMEOUT_MAX_MS
		    ? c->request_timeout
		    : ORCH_REQUEST_TIMEOUT_MAX_MS;
	if (c->request_timeout_max < c->request_timeout) {
		config_error(
		    "request-timeout-max (%lld) is below request-timeout (%lld): a retry "
		    "would wait less than the first try; raise request-timeout-max to at "
		    "least %lld, or set it to 0 for the default (30000, or request-timeout "
		    "if longer)\n",
		    (long long)c->request_timeout_max, (long long)c->request_timeout,
		    (long long)c->request_timeout);
		return 2;
	}
	return 0;
}

/* orch_options reads the configuration (flags, environment, file) into
 * o->c, checks it, and starts the log and the failure injection. Returns 0,
 * ORCH_DONE after --help, or 2 after saying what is wrong. */
static int orch_options(orch *o, int argc, char **argv)
{
	enum { NO = sizeof orch_opts / sizeof orch_opts[0] };
	config_opt opts[NO + DAEMON_NET_OPTS];
	memcpy(opts, orch_opts, sizeof orch_opts);
	daemon_net_opts(opts + NO, offsetof(orch_config, net), "SAGA_ORCHESTRATOR",
	    "tcp://127.0.0.1:7101", "http://127.0.0.1:9470", "client");
	orch_config *c = &o->c;
	int rc = config_load(opts, NO + DAEMON_NET_OPTS, c, argc, argv, "orchestratord [options]",
	    "The saga orchestrator: stores every saga in its own PostgreSQL database and drives\n"
	    "it through the steps of its definition (--definitions; the order saga: ReserveStock,\n"
	    "ChargePayment, ShipOrder and the compensations).",
	    "SAGA_ORCHESTRATOR_CONFIG", NULL);
	if (rc == CONFIG_DONE_HELP)
		return ORCH_DONE;
	if (rc != 0)
		return 2;
	enum log_level level;
	if (daemon_check_options(c->log_level, &level, c->db) != 0
	    || daemon_net_check(&c->net, c->fault) != 0 || daemon_net_db_argv(argc, argv) != 0)
		return 2;
	if (orch_check_options(o) != 0)
		return 2;
	log_init("orchestratord", level);
	if (c->fault[0] != '\0' && fault_parse(c->fault) != 0)
		return 2;
	return 0;
}

/* orch_link_table makes the table of the participants' links: --stock,
 * --payment and --shipping (saga_def_order_links), then each NAME=URLS of
 * --links, serving the service its participant declares. Returns 0, or 2
 * after naming the bad entry. */
static int orch_link_table(orch *o)
{
	const orch_config *c = &o->c;
	const char *fixed[SAGA_DEF_ORDER_NLINKS] = {c->stock, c->payment, c->shipping};
	for (int i = 0; i < SAGA_DEF_ORDER_NLINKS; i++) {
		o->link_table[i] = saga_def_order_links[i];
		snprintf(o->link_lists[i], sizeof o->link_lists[i], "%s", fixed[i]);
	}
	o->nlinks = SAGA_DEF_ORDER_NLINKS;
	char list[CONFIG_STR_MAX];
	snprintf(list, sizeof list, "%s", c->links);
	char *save = NULL;
	for (char *e = strtok_r(list, ";", &save); e != NULL; e = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(e, '=');
		size_t len = eq != NULL ? (size_t)(eq - e) : 0;
		bool ok = len > 0 && len < sizeof o->link_names[0] && eq[1] != '\0';
		for (size_t k = 0; ok && k < len; k++)
			ok = (e[k] >= 'a' && e[k] <= 'z')
			    || (k > 0
			        && ((e[k] >= '0' && e[k] <= '9') || e[k] == '_' || e[k] == '-'));
		if (!ok) {
			config_error(
			    "invalid value for --links: entry \"%s\" is not NAME=URL[,URL...] "
			    "(NAME: a lowercase letter, then letters, digits, _ or -; at most "
			    "31)\n",
			    e);
			return 2;
		}
		*eq = '\0';
		for (int i = 0; i < o->nlinks; i++)
			if (strcmp(o->link_table[i].option, e) == 0) {
				config_error(
				    "invalid value for --links: %s is named twice (or is --%s)\n",
				    e, e);
				return 2;
			}
		if (o->nlinks >= ORCH_LINKS_MAX) {
			config_error("invalid value for --links: more than %d links\n",
			    ORCH_LINKS_MAX - SAGA_DEF_ORDER_NLINKS);
			return 2;
		}
		int i = o->nlinks++;
		snprintf(o->link_names[i], sizeof o->link_names[i], "%s", e);
		snprintf(o->link_lists[i], sizeof o->link_lists[i], "%s", eq + 1);
		o->link_table[i] = (saga_def_link) {.option = o->link_names[i], .service = NULL};
	}
	return 0;
}

/* orch_definitions loads --definitions (or the built-in order.yaml), whose
 * participants must be on the links of o->links (saga_def_order_links: the
 * options --stock, --payment, --shipping, in that order). Returns 0, or 2 after
 * saying why not. */
static int orch_definitions(orch *o)
{
	if (orch_link_table(o) != 0)
		return 2;
	char err[512];
	const char *file = o->c.definitions[0] != '\0' ? o->c.definitions : NULL;
	if (orch_defs_load(&o->defs, file, o->link_table, o->nlinks, err, sizeof err) != 0) {
		config_error("--definitions: %s\n", err);
		return 2;
	}
	char types[512] = "";
	for (size_t k = 0; k < o->defs.nfile; k++)
		snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s version %.12s",
		    k > 0 ? ", " : "", o->defs.v[k]->type->name, o->defs.v[k]->hex);
	log_info(NULL, "saga definitions from %s: %s", o->defs.source, types);
	/* a link of --links no step goes to is likely a typo of a urls: */
	for (int i = SAGA_DEF_ORDER_NLINKS; i < o->nlinks; i++) {
		bool used = false;
		for (size_t k = 0; k < o->defs.nfile && !used; k++)
			for (int32_t st = 0; st < o->defs.v[k]->flow.nsteps && !used; st++)
				used = o->defs.v[k]->links[st][0] == i
				    || o->defs.v[k]->links[st][1] == i;
		if (!used)
			log_warn(NULL,
			    "--links %s: no step of the definitions goes to it (urls: --%s)",
			    o->link_table[i].option, o->link_table[i].option);
	}
	return 0;
}

/* orch_links parses each participant's list of URLs (every entry of a list
 * passes the rules a single URL does, docs/security.md) and warns when they
 * are not all TLS; then, the options being all valid, sets the database
 * link's timeout and the stop's bound (the signals), and starts the probe of
 * each TLS link. Returns 0, or 2 after naming the bad entry. */
static int orch_links(orch *o)
{
	static const char *const link_daemons[3] = {"stockd", "paymentd", "shippingd"};
	orch_config *c = &o->c;
	bool all_tls = true;
	for (int i = 0; i < o->nlinks; i++) {
		if (orch_participant_urls(
		        &o->links[i], c, o->link_table[i].option, o->link_lists[i])
		    != 0)
			return 2;
		all_tls = all_tls && rpc_urls_all_tls(&o->links[i]);
	}
	if (!all_tls)
		log_warn(NULL,
		    "the links to the participants (%s, %s, %s%s%s) are not all TLS: use "
		    "tls+tcp:// "
		    "with --participant-tls-cert, --participant-tls-key and --participant-tls-ca "
		    "for anything but a laptop (docs/security.md)",
		    c->stock, c->payment, c->shipping, c->links[0] ? "; " : "", c->links);
	pg_set_link_timeout(c->db_link_timeout);
	/* the stop bound counts from the signal, whatever is running then */
	if (daemon_install_signals(c->stop_timeout) != 0)
		log_warn(NULL, "could not bound the stop: no watchdog thread");
	int n_probes = 0;
	for (int i = 0; i < o->nlinks; i++)
		for (size_t k = 0; k < o->links[i].n; k++)
			o->probes[n_probes++]
			    = (orch_probe) {i < 3 ? link_daemons[i] : o->link_table[i].option,
			        o->links[i].url[k], o->links[i].tls[k]};
	orch_probe_links(o->probes, n_probes);
	return 0;
}

/* orch_schema applies the schema to the database, waiting for it up to
 * --db-wait, and reads the database's clock. Returns 0, or 1 after logging
 * why not. */
static int orch_schema(orch *o)
{
	/* a connection lost while applying the schema (a failover at start)
	 * is made again, within --db-wait (pg_schema_try_again) */
	int64_t db_until = clock_mono_ms() + o->c.db_wait;
	PGconn *conn;
	int rc;
	for (;;) {
		int64_t left = db_until - clock_mono_ms();
		conn = pg_connect(o->c.db, left > 0 ? left : 0);
		if (conn == NULL)
			return 1;
		rc = store_apply_schema(conn);
		/* the definition's version stored, and those unfinished sagas
		 * need loaded (orch_defs.h; one that cannot run is logged and its
		 * sagas wait) */
		if (rc == 0)
			rc = orch_defs_sync(&o->defs, conn);
		if (!pg_schema_try_again(rc, db_until, "orchestrator"))
			break;
		PQfinish(conn);
	}
	/* the database's clock before the first saga is stored (rule T1);
	 * without it, this host's wall clock until the engine's first sweep */
	if (rc == 0 && dbclock_sync(conn) != 0)
		log_warn(NULL,
		    "could not read the database's clock: this host's is used until the "
		    "next try");
	PQfinish(conn);
	if (rc != 0) {
		log_error(NULL,
		    "could not start: could not apply the schema: %s (the line above says more)",
		    pg_err_name(rc));
		return 1;
	}
	return 0;
}

/* orch_engine_config fills o->ec from the options, the links and the
 * instance's name. */
static void orch_engine_config(orch *o)
{
	const orch_config *c = &o->c;
	o->ec = (engine_config) {
	    .db = c->db,
	    .instance = o->instance,
	    .defs = &o->defs,
	    .policy =
	        {
	            .step_timeout_ms = c->step_timeout,
	            .backoff_base_ms = c->backoff_base,
	            .backoff_cap_ms = c->backoff_cap,
	            .attention_after = (int32_t)c->attention_after,
	            .request_timeout_ms = c->request_timeout,
	            .request_timeout_max_ms = c->request_timeout_max,
	            .lease_grace_ms = SAGA_LEASE_GRACE_MS,
	        },
	    .resend_ms = c->resend,
	    .sweep_interval_ms = c->sweep_interval,
	    .db_wait_ms = c->db_wait,
	    .batch = (int)c->batch,
	    .send_batch = (int)c->send_batch,
	    .max_inflight = (int)c->max_inflight,
	    .duplicate_delivery = c->duplicate_delivery,
	    .horizon = o->horizon,
	};
	/* each participant a command goes to, by the option its definition
	 * names (checked by orch_definitions) */
	for (int i = 0; i < o->nlinks; i++)
		o->ec.links[i] = &o->links[i];
	o->ec.nlinks = o->nlinks;
}

/* orch_engines names this instance and starts the registry of waiting
 * calls, the listener of the other orchestrators' ends and the engines.
 * Returns 0, or 1 after logging why not. */
static int orch_engines(orch *o)
{
	orch_instance_name(o->instance, sizeof o->instance);
	orch_engine_config(o);
	if (waits_open(&o->wt, (size_t)o->c.max_waits) != 0) {
		log_error(NULL, "could not start: out of memory");
		return 1;
	}
	o->ec.on_finished = orch_finished;
	o->ec.on_finished_arg = o->wt;
	/* the ends of sagas other orchestrators write, for the calls waiting
	 * here (listen.h); the local engines' ends come through on_finished */
	if (listener_start(&o->ls, o->c.db, o->wt) != 0) {
		log_error(NULL, "could not start: could not start the listener");
		return 1;
	}
	/* max-inflight is shared out among the engines */
	int n = (int)o->c.engines;
	o->ec.max_inflight = (int)(o->c.max_inflight / n > 0 ? o->c.max_inflight / n : 1);
	orch_metrics_init();
	for (int i = 0; i < n; i++) {
		o->ec.index = i;
		int rc = engine_start(&o->engs[i], &o->ec);
		if (rc != 0) {
			log_error(NULL, "could not start the engine: error %d", rc);
			return 1;
		}
		o->n_engines = i + 1;
	}
	return 0;
}

/* orch_api starts the Orchestrator API: its handlers, the database probe of
 * sagas.v1.Health, the retention Admin runs, and its listeners. Returns 0,
 * or 1 after logging why not. */
static int orch_api(orch *o)
{
	const orch_config *c = &o->c;
	o->a = (api) {.db = c->db,
	    .instance = o->instance,
	    .db_wait_ms = c->db_wait,
	    .engs = o->engs,
	    .n_engines = o->n_engines,
	    .policy = o->ec.policy,
	    .horizon = o->ec.horizon,
	    .waits = o->wt,
	    .batch_delay_us = c->batch_delay,
	    .batch_siblings = (int)c->batch_siblings,
	    .overdue_margin_ms = c->overdue_margin,
	    .stuck_after_ms = c->stuck_after,
	    .max_listings = orch_max_listings(c->max_listings, c->workers),
	    .max_listings_per_caller = (int)c->max_listings_per_caller,
	    .defs = &o->defs};
	if (health_db_open(&orch_health, c->db) != 0) {
		log_error(NULL, "could not start: out of memory");
		return 1;
	}
	/* the deletion of finished sagas past the horizon (rule R4): in the
	 * background when elected, and by sagactl retention (Admin) */
	o->ret_cfg = (retention_config) {.conninfo = c->db,
	    .what = "the retention of finished sagas",
	    .elect_key = ELECT_KEY_RETENTION,
	    .interval_ms = c->retention_interval,
	    .tables = {"sagas", "saga_history", "saga_ids_retired"},
	    .batch = store_retention_batch,
	    .arg = &o->horizon};
	admin_set_retention(&o->ret_cfg);
	/* the API's handlers, plus the database probe of sagas.v1.Health */
	static health_service health
	    = {.service = "sagas.v1.Orchestrator", .healthy = orch_healthy};
	/* a context per waiting call, plus room for everything else */
	int contexts = (int)c->max_waits + RPC_SERVER_CONTEXTS;
	int rc = daemon_net_serve(&o->srv, &c->net, "orchestratord", AUTHZ_CLIENT, (int)c->workers,
	    contexts, api_server_ops(), &o->a, &health);
	if (rc != 0) {
		log_error(NULL, "could not start its listeners: %s", strerror(-rc));
		return 1;
	}
	log_info(NULL, "orchestratord %s listening on %s (stock %s, payment %s, shipping %s%s%s)%s",
	    o->instance, c->net.listen, c->stock, c->payment, c->shipping,
	    c->links[0] != '\0' ? "; links " : "", c->links,
	    c->duplicate_delivery ? ", delivering every command twice" : "");
	return 0;
}

/* orch_run starts the elected jobs (the report and gauges, the retention;
 * each only logged when it cannot start) and serves until SIGINT or
 * SIGTERM. Returns 0. */
static int orch_run(orch *o)
{
	const orch_config *c = &o->c;
	report_config rc_cfg = {.conninfo = c->db,
	    .report_interval_ms = c->report_interval,
	    .report_overdue_ms = ORCH_REPORT_OVERDUE_MS,
	    .gauge_interval_ms = c->gauge_interval,
	    .margin_ms = c->overdue_margin,
	    .stuck_ms = c->stuck_after};
	if (report_start(&o->rep, &rc_cfg) != 0)
		log_warn(NULL, "could not start the report of stuck sagas and the database gauges");
	if (c->retention_interval > 0 && retention_start(&o->ret, &o->ret_cfg) != 0)
		log_warn(NULL, "could not start the retention of finished sagas");
	daemon_wait_for_stop(100);
	/* bounded since the signal (daemon_install_signals): the elected jobs
	 * may be waiting in libpq on a stalled link */
	log_info(NULL, "shutting down");
	o->ran = true;
	return 0;
}

/* orch_stop stops what the steps started, whichever step failed, in the
 * order that keeps every part's users stopped before it: the elected jobs,
 * the waiting calls (answered while the server still runs), the server, the
 * engines, the listener (it answers through the waits), the waits' registry,
 * the health probe. The links' lists are freed at the end of a run, or
 * when the start failed before the probes began (a probe, detached, may
 * still read them after a later failure, which ends the process at once). */
static void orch_stop(orch *o)
{
	retention_stop(o->ret);
	report_stop(o->rep);
	waits_close(o->wt);
	daemon_net_stop(o->srv);
	orch_engines_stop(o->engs, o->n_engines);
	listener_stop(o->ls);
	waits_free(o->wt);
	health_db_close(orch_health);
	orch_health = NULL;
	if (o->ran || o->probes[0].url == NULL)
		for (int i = 0; i < o->nlinks; i++)
			rpc_urls_free(&o->links[i]);
	orch_defs_free(&o->defs);
	if (o->ran)
		log_info(NULL, "stopped");
}

int main(int argc, char **argv)
{
	static orch o;
	int rc = orch_options(&o, argc, argv);
	if (rc == 0)
		rc = orch_definitions(&o);
	if (rc == 0)
		rc = orch_links(&o);
	if (rc == 0)
		rc = orch_schema(&o);
	if (rc == 0)
		rc = orch_engines(&o);
	if (rc == 0)
		rc = orch_api(&o);
	if (rc == 0)
		rc = orch_run(&o);
	orch_stop(&o);
	return rc == ORCH_DONE ? 0 : rc;
}

#include "participant.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "authz.h"
#include "config.h"
#include "daemon.h"
#include "daemon_net.h"
#include "dbclock.h"
#include "elect.h"
#include "fault.h"
#include "health.h"
#include "log.h"
#include "retention.h"

/* A worker that starts while the database is briefly away does not hold up
 * the others: it connects on its first call instead. */
#define PARTICIPANT_WORKER_CONNECT_WAIT_MS 1000
/* The most rows (skus, accounts) whose last value the daemon remembers for
 * the one-round-trip path (common/base/valcache.h): about 13 MiB when full; rows
 * past it take the locking path. */
#define PARTICIPANT_CACHE_KEYS 65536

typedef struct participant_config {
	daemon_net net;
	char db[CONFIG_STR_MAX];
	int64_t workers;
	char log_level[CONFIG_STR_MAX];
	int64_t db_wait;
	int64_t db_link_timeout;
	char fault[CONFIG_STR_MAX];
	int64_t stop_timeout;
	int64_t retention_s, skew_s;
	int64_t retention_interval;
} participant_config;

/* one database probe per process, for sagas.v1.Health */
static health_db *participant_health;

static bool participant_healthy(void *app)
{
	(void)app;
	return health_db_check(participant_health);
}

/* participant_configure reads the options of the daemon `d` (defaults,
 * config file, environment, `argv`) into *cfg and *horizon, checks them,
 * and starts the log, the fault points and the database link's timeout.
 * Returns -1 when the daemon goes on, else its exit status (0 after --help
 * or --version, 2 for a bad option). */
static int participant_configure(const participant_desc *d, int argc, char **argv,
    participant_config *cfg, horizon_policy *horizon)
{
	/* environment names are the daemon's prefix and the option's */
	enum { N = 10 };
	static char env[N][64], help_fault[160], usage[64], file_env[64];
	static const char *const suffix[N]
	    = {"DB", "WORKERS", "LOG_LEVEL", "DB_WAIT_MS", "FAULT", "STOP_TIMEOUT_MS",
	        "RETENTION_S", "MAX_CLOCK_SKEW_S", "RETENTION_INTERVAL_MS", "DB_LINK_TIMEOUT_MS"};
	for (int i = 0; i < N; i++)
		snprintf(env[i], sizeof env[i], "%s_%s", d->env_prefix, suffix[i]);
	snprintf(help_fault, sizeof help_fault, "failure injection, e.g. %s (docs/testing.md)",
	    d->fault_example);
	snprintf(usage, sizeof usage, "%s [options]", d->prog);
	snprintf(file_env, sizeof file_env, "%s_CONFIG", d->env_prefix);
	config_opt opts[N + DAEMON_NET_OPTS] = {
	    {"db", env[0], CONFIG_STR, d->default_db, 0, 0, offsetof(participant_config, db),
	        "libpq connection string of the database (no password here: use a passfile or "
	        "the config file)",
	        "CONNINFO"},
	    {"workers", env[1], CONFIG_INT, "2", 1, 64, offsetof(participant_config, workers),
	        "worker threads, each with its own connection", NULL},
	    {"log-level", env[2], CONFIG_STR, "info", 0, 0, offsetof(participant_config, log_level),
	        "debug, info, warn or error", "LEVEL"},
	    {"db-wait", env[3], CONFIG_INT, "30000", 0, 3600000,
	        offsetof(participant_config, db_wait), "how long to wait for the database at start",
	        "MS"},
	    {"fault", env[4], CONFIG_STR, "", 0, 0, offsetof(participant_config, fault), help_fault,
	        "SPEC"},
	    {"stop-timeout", env[5], CONFIG_INT, "15000", 0, 3600000,
	        offsetof(participant_config, stop_timeout),
	        "after SIGTERM or SIGINT, the longest a stop may take before the process ends "
	        "anyway (0 = no bound; docs/operations.md)",
	        "MS"},
	    {"retention", env[6], CONFIG_INT, "604800", 3600, 100LL * 365 * 86400,
	        offsetof(participant_config, retention_s),
	        "commands of sagas that started longer ago are refused, and idempotency records "
	        "are deleted after it plus twice --max-clock-skew (docs/saga-semantics.md, "
	        "\"Retention\"); the same on every daemon",
	        "S"},
	    {"max-clock-skew", env[7], CONFIG_INT, "300", 0, 86400,
	        offsetof(participant_config, skew_s),
	        "the largest error tolerated between the databases' clocks; the same on every "
	        "daemon",
	        "S"},
	    {"retention-interval", env[8], CONFIG_INT, "60000", 0, 86400000,
	        offsetof(participant_config, retention_interval),
	        "between two passes of the retention job, which deletes the expired idempotency "
	        "records and folds them into the records' _retired summary (one process at a "
	        "time among those sharing the database; 0 = no background job, sagactl "
	        "retention still runs a pass; docs/operations.md, \"Retention\")",
	        "MS"},
	    {"db-link-timeout", env[9], CONFIG_INT, "20000", 2000, 3600000,
	        offsetof(participant_config, db_link_timeout),
	        "a database connection that gets no answer for this long is taken as dead at "
	        "both ends (TCP keepalives and tcp_user_timeout, unless the conninfo sets them), "
	        "and the retention job's leader that cannot confirm its session within it stops "
	        "leading (docs/operations.md, \"A database link that stalls\")",
	        "MS"},
	};
	daemon_net_opts(opts + N, offsetof(participant_config, net), d->env_prefix,
	    d->default_listen, d->default_metrics, "orchestrator");
	int rc = config_load(
	    opts, N + DAEMON_NET_OPTS, cfg, argc, argv, usage, d->summary, file_env, NULL);
	if (rc == CONFIG_DONE_HELP)
		return 0;
	if (rc != 0)
		return 2;
	enum log_level level;
	if (daemon_check_options(cfg->log_level, &level, cfg->db) != 0
	    || daemon_net_check(&cfg->net, cfg->fault) != 0 || daemon_net_db_argv(argc, argv) != 0)
		return 2;
	/* checked with the other options, before the database is touched */
	*horizon = (horizon_policy) {
	    .retention_ms = cfg->retention_s * 1000, .skew_ms = cfg->skew_s * 1000};
	const char *bad = horizon_policy_check(horizon);
	if (bad != NULL) {
		config_error("--retention and --max-clock-skew: %s\n", bad);
		return 2;
	}
	log_init(d->prog, level);
	if (cfg->fault[0] != '\0' && fault_parse(cfg->fault) != 0)
		return 2;
	pg_set_link_timeout(cfg->db_link_timeout);
	return -1;
}

int participant_main(const participant_desc *d, int argc, char **argv)
{
	participant_config cfg;
	static horizon_policy horizon;
	int rc = participant_configure(d, argc, argv, &cfg, &horizon);
	if (rc >= 0)
		return rc;

	if (!pkit_service_check(d->kit)) {
		log_error(
		    NULL, "could not start: the service description does not match its messages");
		return 1;
	}
	rc = pkit_migrate(d->kit, cfg.db, cfg.db_wait);
	if (rc != 0) {
		log_error(NULL,
		    "could not start: could not apply the schema: %s (the line above says more)",
		    pg_err_name(rc));
		return 1;
	}
	/* the database's clock, which rule R1 compares with the saga's start
	 * (dbclock.h); the retention job keeps it measured */
	PGconn *clk = NULL;
	if (pg_ensure(&clk, cfg.db, cfg.db_wait) && dbclock_sync(clk) != 0)
		log_warn(NULL,
		    "could not read the database's clock: this host's clock is used "
		    "until the next reading");
	if (clk != NULL)
		PQfinish(clk);
	participant_app app = {.conninfo = cfg.db,
	    .connect_wait_ms = PARTICIPANT_WORKER_CONNECT_WAIT_MS,
	    .kit = d->kit,
	    .horizon = &horizon};
	if (valcache_new(&app.cache, PARTICIPANT_CACHE_KEYS) != 0
	    || health_db_open(&participant_health, cfg.db) != 0) {
		log_error(NULL, "could not start: out of memory");
		valcache_free(app.cache);
		return 1;
	}
	pkit_metrics_init(d->kit);
	/* retention (pkit.h, "Retention"): the elected background job, and the
	 * pass an admin may run (sagactl retention); both outlive the server */
	static pkit_retention retention_arg;
	retention_arg = (pkit_retention) {.svc = d->kit, .horizon = &horizon};
	static char conninfo[CONFIG_STR_MAX];
	snprintf(conninfo, sizeof conninfo, "%s", cfg.db);
	static retention_config retention_cfg;
	retention_cfg = (retention_config) {.conninfo = conninfo,
	    .what = "the retention of idempotency records",
	    .elect_key = ELECT_KEY_RETENTION,
	    .interval_ms = cfg.retention_interval,
	    .tables = {d->kit->records, NULL, NULL},
	    .batch = pkit_retention_batch,
	    .arg = &retention_arg};
	admin_set_retention(&retention_cfg);
	/* the daemon's own handlers, plus the database probe of sagas.v1.Health */
	static health_service health;
	health = (health_service) {.service = d->service, .healthy = participant_healthy};
	rpc_server *srv = NULL;
	rc = daemon_net_serve(&srv, &cfg.net, d->prog, AUTHZ_ORCHESTRATOR, (int)cfg.workers, 0,
	    d->ops, &app, &health);
	if (rc != 0) {
		log_error(NULL, "could not start its listeners: %s", strerror(-rc));
		health_db_close(participant_health);
		valcache_free(app.cache);
		return 1;
	}
	retention *ret = NULL;
	if (cfg.retention_interval > 0) {
		rc = retention_start(&ret, &retention_cfg);
		if (rc != 0) {
			log_error(NULL, "could not start the retention job: %s", pg_err_name(rc));
			daemon_net_stop(srv);
			health_db_close(participant_health);
			valcache_free(app.cache);
			return 1;
		}
	}
	/* until here SIGTERM ends the process at once (its default); from here
	 * the stop bound counts from the signal, whatever is running then (a
	 * worker or the retention job in libpq on a stalled link) */
	if (daemon_install_signals(cfg.stop_timeout) != 0)
		log_warn(NULL, "could not bound the stop: no watchdog thread");
	log_info(NULL, "%s listening on %s", d->prog, cfg.net.listen);
	daemon_wait_for_stop(100);
	log_info(NULL, "%s stopping", d->prog);
	retention_stop(ret);
	daemon_net_stop(srv);
	health_db_close(participant_health);
	valcache_free(app.cache);
	log_info(NULL, "%s stopped", d->prog);
	return 0;
}

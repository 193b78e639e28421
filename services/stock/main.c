/* stockd: the stock participant daemon. Reads its configuration, waits for
 * the database, applies the schema, serves sagas.v1.Stock until SIGINT or
 * SIGTERM. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "daemon.h"
#include "fault.h"
#include "handlers.h"
#include "health.h"
#include "log.h"
#include "rpc.h"
#include "store.h"

/* A worker that starts while the database is briefly away does not hold up
 * the others: it connects on its first call instead. */
#define STOCKD_WORKER_CONNECT_WAIT_MS 1000

typedef struct stockd_config {
	char listen[CONFIG_STR_MAX];
	char db[CONFIG_STR_MAX];
	int64_t workers;
	char log_level[CONFIG_STR_MAX];
	int64_t max_msg;
	int64_t db_wait;
	char fault[CONFIG_STR_MAX];
} stockd_config;

static const config_opt stockd_opts[] = {
    {"listen", "SAGA_STOCK_LISTEN", CONFIG_STR, "tcp://127.0.0.1:7102", 0, 0,
        offsetof(stockd_config, listen), "nng URL to serve sagas.v1.Stock on", "URL"},
    {"db", "SAGA_STOCK_DB", CONFIG_STR, "dbname=sagas_stock", 0, 0, offsetof(stockd_config, db),
        "libpq connection string of the stock database", "CONNINFO"},
    {"workers", "SAGA_STOCK_WORKERS", CONFIG_INT, "4", 1, 64, offsetof(stockd_config, workers),
        "worker threads, each with its own connection", NULL},
    {"log-level", "SAGA_STOCK_LOG_LEVEL", CONFIG_STR, "info", 0, 0,
        offsetof(stockd_config, log_level), "debug, info, warn or error", "LEVEL"},
    {"max-msg", "SAGA_STOCK_MAX_MSG", CONFIG_INT, "1048576", 1024, 1073741824,
        offsetof(stockd_config, max_msg), "largest request frame accepted", "BYTES"},
    {"db-wait", "SAGA_STOCK_DB_WAIT_MS", CONFIG_INT, "30000", 0, 3600000,
        offsetof(stockd_config, db_wait), "how long to wait for the database at start", "MS"},
    {"fault", "SAGA_STOCK_FAULT", CONFIG_STR, "", 0, 0, offsetof(stockd_config, fault),
        "failure injection, e.g. delay:ReserveStock:ms=3000 (docs/testing.md)", "SPEC"},
};

/* The database probe behind sagas.v1.Health/Check (NOT_SERVING while the
 * database is unreachable). */
static health_db *stockd_health;

static bool stockd_healthy(void *app)
{
	(void)app;
	return health_db_check(stockd_health);
}

int main(int argc, char **argv)
{
	stockd_config cfg;
	int rc = config_load(stockd_opts, sizeof stockd_opts / sizeof stockd_opts[0], &cfg, argc,
	    argv, "stockd [options]",
	    "The stock participant of the order saga: reserves and releases stock,\n"
	    "idempotently by saga id.",
	    "SAGA_STOCK_CONFIG", NULL);
	if (rc == CONFIG_DONE_HELP)
		return 0;
	if (rc != 0)
		return 2;
	enum log_level level;
	if (log_level_parse(cfg.log_level, &level) != 0) {
		fprintf(stderr, "error: invalid value for log-level: \"%s\"\n", cfg.log_level);
		return 2;
	}
	log_init("stockd", level);
	if (!rpc_url_ok(cfg.listen)) {
		fprintf(stderr,
		    "error: invalid value for listen: \"%s\" is not a tcp://HOST:PORT or "
		    "ipc://PATH URL\n",
		    cfg.listen);
		return 2;
	}
	if (cfg.fault[0] != '\0' && fault_parse(cfg.fault) != 0)
		return 2;

	if (stock_store_migrate(cfg.db, cfg.db_wait) != 0) {
		log_error(NULL, "could not start: the stock schema could not be applied");
		return 1;
	}
	stock_app app = {.conninfo = cfg.db, .connect_wait_ms = STOCKD_WORKER_CONNECT_WAIT_MS};
	if (health_db_open(&stockd_health, cfg.db) != 0) {
		log_error(NULL, "could not start: out of memory");
		return 1;
	}
	/* the daemon's own handlers, plus the database probe of sagas.v1.Health */
	rpc_server_ops ops = stock_rpc_ops;
	ops.healthy = stockd_healthy;
	ops.service = "sagas.v1.Stock";
	rpc_server *srv = NULL;
	rc = rpc_server_start(&srv, cfg.listen, (int)cfg.workers, (size_t)cfg.max_msg, &ops, &app);
	if (rc != 0) {
		log_error(NULL, "could not start: could not listen on %s", cfg.listen);
		health_db_close(stockd_health);
		return 1;
	}
	daemon_install_signals();
	log_info(NULL, "stockd listening on %s", cfg.listen);
	daemon_wait_for_stop(100);
	log_info(NULL, "stockd stopping");
	rpc_server_stop(srv);
	health_db_close(stockd_health);
	return 0;
}

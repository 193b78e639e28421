/* paymentd: the payment participant daemon. Reads its configuration, waits for
 * the database, applies the schema, serves sagas.v1.Payment until SIGINT or
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

typedef struct paymentd_config {
	char listen[CONFIG_STR_MAX];
	char db[CONFIG_STR_MAX];
	int64_t workers;
	char log_level[CONFIG_STR_MAX];
	int64_t max_msg;
	int64_t db_wait;
	char fault[CONFIG_STR_MAX];
} paymentd_config;

static const config_opt paymentd_opts[] = {
    {"listen", "SAGA_PAYMENT_LISTEN", CONFIG_STR, "tcp://127.0.0.1:7103", 0, 0,
        offsetof(paymentd_config, listen), "nng URL to serve sagas.v1.Payment on", "URL"},
    {"db", "SAGA_PAYMENT_DB", CONFIG_STR, "dbname=sagas_payment", 0, 0,
        offsetof(paymentd_config, db), "libpq connection string of the payment database",
        "CONNINFO"},
    {"workers", "SAGA_PAYMENT_WORKERS", CONFIG_INT, "4", 1, 64, offsetof(paymentd_config, workers),
        "worker threads, each with its own connection", NULL},
    {"log-level", "SAGA_PAYMENT_LOG_LEVEL", CONFIG_STR, "info", 0, 0,
        offsetof(paymentd_config, log_level), "debug, info, warn or error", "LEVEL"},
    {"max-msg", "SAGA_PAYMENT_MAX_MSG", CONFIG_INT, "1048576", 1024, 1073741824,
        offsetof(paymentd_config, max_msg), "largest request frame accepted", "BYTES"},
    {"db-wait", "SAGA_PAYMENT_DB_WAIT_MS", CONFIG_INT, "30000", 0, 3600000,
        offsetof(paymentd_config, db_wait), "how long to wait for the database at start", "MS"},
    {"fault", "SAGA_PAYMENT_FAULT", CONFIG_STR, "", 0, 0, offsetof(paymentd_config, fault),
        "failure injection, e.g. delay:ReserveStock:ms=3000 (docs/testing.md)", "SPEC"},
};

/* The database probe behind sagas.v1.Health/Check (NOT_SERVING while the
 * database is unreachable). */
static health_db *paymentd_health;

static bool paymentd_healthy(void *app)
{
	(void)app;
	return health_db_check(paymentd_health);
}

int main(int argc, char **argv)
{
	paymentd_config cfg;
	int rc = config_load(paymentd_opts, sizeof paymentd_opts / sizeof paymentd_opts[0], &cfg,
	    argc, argv, "paymentd [options]",
	    "The payment participant of the order saga: charges and refunds payments,\n"
	    "idempotently by saga id.",
	    "SAGA_PAYMENT_CONFIG", NULL);
	if (rc == CONFIG_DONE_HELP)
		return 0;
	if (rc != 0)
		return 2;
	enum log_level level;
	if (log_level_parse(cfg.log_level, &level) != 0) {
		fprintf(stderr, "error: invalid value for log-level: \"%s\"\n", cfg.log_level);
		return 2;
	}
	log_init("paymentd", level);
	if (!rpc_url_ok(cfg.listen)) {
		fprintf(stderr,
		    "error: invalid value for listen: \"%s\" is not a tcp://HOST:PORT or "
		    "ipc://PATH URL\n",
		    cfg.listen);
		return 2;
	}
	if (cfg.fault[0] != '\0' && fault_parse(cfg.fault) != 0)
		return 2;

	if (payment_store_migrate(cfg.db, cfg.db_wait) != 0) {
		log_error(NULL, "could not start: the payment schema could not be applied");
		return 1;
	}
	payment_app app = {.conninfo = cfg.db, .connect_wait_ms = STOCKD_WORKER_CONNECT_WAIT_MS};
	if (health_db_open(&paymentd_health, cfg.db) != 0) {
		log_error(NULL, "could not start: out of memory");
		return 1;
	}
	/* the daemon's own handlers, plus the database probe of sagas.v1.Health */
	rpc_server_ops ops = payment_rpc_ops;
	ops.healthy = paymentd_healthy;
	ops.service = "sagas.v1.Payment";
	rpc_server *srv = NULL;
	rc = rpc_server_start(&srv, cfg.listen, (int)cfg.workers, (size_t)cfg.max_msg, &ops, &app);
	if (rc != 0) {
		log_error(NULL, "could not start: could not listen on %s", cfg.listen);
		health_db_close(paymentd_health);
		return 1;
	}
	daemon_install_signals();
	log_info(NULL, "paymentd listening on %s", cfg.listen);
	daemon_wait_for_stop(100);
	log_info(NULL, "paymentd stopping");
	rpc_server_stop(srv);
	health_db_close(paymentd_health);
	return 0;
}

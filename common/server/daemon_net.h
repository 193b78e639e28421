/* daemon_net: what every daemon listens on and who may call it: its
 * listeners, their TLS files and roles, failure injection, connection
 * limits (docs/security.md). One set of options, the same in every daemon:
 *
 *   --listen URL           its callers' listener (stockd, paymentd: the
 *                          orchestrator role; orchestratord: client)
 *   --admin-listen URL     the admin role's listener ("" = none)
 *   --health-listen URL    a plain listener that answers only Health/Check,
 *                          to anyone, for probes ("" = none)
 *   --tls-cert, --tls-key  the daemon's certificate and key (PEM)
 *   --tls-ca               the CA of the --listen callers' certificates
 *   --admin-tls-ca         the CA of the admin callers' certificates
 *   --enable-fault-injection, --max-connections, --idle-timeout, --max-msg
 *   --metrics-listen URL   GET /metrics (metrics_http.h): http:// on loopback,
 *                          or https:// with --metrics-tls-ca ("" = none)
 *   --metrics-tls-ca       the CA whose client certificates may scrape it
 *   --http-allowed-hosts   more names (host or host:port, comma-separated)
 *                          the /metrics listener answers to in a Host
 *                          header (http_names.h; "" = only its own)
 *
 * A tls+tcp:// listener requires a client certificate signed by its CA and
 * gives its callers its one role. A plain listener is only allowed where no
 * other host can reach it (tls_url_local); it gives every role, and the
 * daemon warns so at start, naming it.
 */
#ifndef SAGA_DAEMON_NET_H
#define SAGA_DAEMON_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "health.h"
#include "log.h"
#include "rpc.h"

/* The options' fields; embed one in a daemon's config struct. */
typedef struct daemon_net {
	char listen[CONFIG_STR_MAX];
	char admin_listen[CONFIG_STR_MAX];
	char health_listen[CONFIG_STR_MAX];
	char tls_cert[CONFIG_STR_MAX];
	char tls_key[CONFIG_STR_MAX];
	char tls_ca[CONFIG_STR_MAX];
	char admin_tls_ca[CONFIG_STR_MAX];
	bool fault_injection;
	int64_t max_conns;
	int64_t idle_ms;
	int64_t max_msg;
	char metrics_listen[CONFIG_STR_MAX];
	char metrics_tls_ca[CONFIG_STR_MAX];
	char http_allowed_hosts[CONFIG_STR_MAX];
} daemon_net;

/* How many rows daemon_net_opts writes. */
#define DAEMON_NET_OPTS 14

/* daemon_net_opts writes the DAEMON_NET_OPTS option rows into rows[0..]:
 * `base` is offsetof(the daemon's config, its daemon_net); environment
 * names are `env_prefix` + "_LISTEN", ... (e.g. SAGA_STOCK_LISTEN; kept in
 * static storage: call once per process); `default_listen` the default of
 * --listen, `default_metrics` that of --metrics-listen (static storage) and
 * `role` the name of its callers' role, for --help. */
void daemon_net_opts(config_opt *rows, size_t base, const char *env_prefix,
    const char *default_listen, const char *default_metrics, const char *role);

/* daemon_net_check checks the options (after config_load): URLs that nng
 * can listen on, a plain listener only where no other host reaches it, the
 * TLS files a TLS listener needs, --http-allowed-hosts entries that parse,
 * --fault only with
 * --enable-fault-injection (`fault` is the --fault spec, "" for none).
 * Returns 0, or 2 after printing one "PROGRAM: error: ..." line that says
 * what to set (config_error). */
int daemon_net_check(const daemon_net *n, const char *fault);

/* daemon_net_db_argv refuses a libpq conninfo given with --db (or --db=)
 * on the command line that carries a password: every user of the host can
 * read a command line (ps). Returns 0, or 2 after an error line that
 * points to a passfile (PGPASSFILE, ~/.pgpass) or the config file. */
int daemon_net_db_argv(int argc, char **argv);

/* daemon_net_serve starts the daemon's RPC server on its listeners
 * (--listen with `role`, --admin-listen with admin, --health-listen with
 * no role: Health only) with `workers` threads
 * and `contexts` contexts (0 = RPC_SERVER_CONTEXTS), answering Health (from
 * `health`, borrowed until daemon_net_stop) and Admin besides `ops` (copied).
 * Raises the process's descriptor limit, when lower, to what the listeners
 * may hold (their count x max-connections, plus 256 of its own), within
 * the hard limit. Starts the --metrics-listen listener first (a port taken
 * there fails the start before any RPC listener opens) and registers the
 * metrics every daemon has (`daemon`: its name, for sagas_build_info).
 * Logs one line per listener, a WARNING for a plain one. Returns 0 and
 * *out, or a negative errno after logging why (a TLS file that does not
 * load, a listener that could not start). */
int daemon_net_serve(rpc_server **out, const daemon_net *n, const char *daemon, unsigned role,
    int workers, int contexts, const rpc_server_ops *ops, void *app, const health_service *health);

/* daemon_net_stop stops the server and frees what daemon_net_serve made.
 * NULL is ignored. */
void daemon_net_stop(rpc_server *srv);

/* daemon_check_options checks the options every daemon has, as given
 * (borrowed): `log_level` (debug, info, warn or error; *level is set from
 * it) and `db` (a libpq conninfo that parses, pg_conninfo_ok); the
 * listeners are daemon_net_check's. Returns 0, or 2 (the exit status of a
 * usage error) after printing one "PROGRAM: error: invalid value for ..."
 * line for the first bad one (config_error). */
int daemon_check_options(const char *log_level, enum log_level *level, const char *db);

#endif

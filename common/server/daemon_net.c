/* daemon_net: every daemon's listeners, TLS, roles and limits
 * (daemon_net.h). */
#include "daemon_net.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sys/resource.h>

#include <libpq-fe.h>

#include "admin.h"
#include "authz.h"
#include "http_names.h"
#include "log.h"
#include "pg.h"
#include "metrics.h"
#include "metrics_http.h"
#include "tls.h"

/* One daemon per process: what its server borrows lives here. */
static struct {
	tls_conf *tls[3]; /* listen, admin-listen, (health: none) */
	rpc_server_ops ops;
	admin_service admin;
	rpc_service svc_health, svc_admin;
	const rpc_service *services[3];
	char env[DAEMON_NET_OPTS][64];
	char help_listen[160];
} dn;

void daemon_net_opts(config_opt *rows, size_t base, const char *env_prefix,
    const char *default_listen, const char *default_metrics, const char *role)
{
	static const char *const suffix[DAEMON_NET_OPTS]
	    = {"LISTEN", "ADMIN_LISTEN", "TLS_CERT", "TLS_KEY", "TLS_CA", "ADMIN_TLS_CA",
	        "ENABLE_FAULT_INJECTION", "MAX_CONNECTIONS", "IDLE_TIMEOUT_MS", "MAX_MSG",
	        "HEALTH_LISTEN", "METRICS_LISTEN", "METRICS_TLS_CA", "HTTP_ALLOWED_HOSTS"};
	for (int i = 0; i < DAEMON_NET_OPTS; i++)
		snprintf(dn.env[i], sizeof dn.env[i], "%s_%s", env_prefix, suffix[i]);
	snprintf(dn.help_listen, sizeof dn.help_listen,
	    "nng URL its callers (the %s role) reach it on: tls+tcp://HOST:PORT, or tcp:// on "
	    "loopback only",
	    role);
#define NET(i, n, t, d, lo, hi, f, h, u)                                                           \
	rows[i] = (config_opt) {n, dn.env[i], t, d, lo, hi, base + offsetof(daemon_net, f), h, u}
	NET(0, "listen", CONFIG_STR, default_listen, 0, 0, listen, dn.help_listen, "URL");
	NET(1, "admin-listen", CONFIG_STR, "", 0, 0, admin_listen,
	    "nng URL of a second listener for the admin role (its methods: docs/security.md, "
	    "\"Roles\"); \"\" = none",
	    "URL");
	NET(2, "tls-cert", CONFIG_STR, "", 0, 0, tls_cert,
	    "this daemon's certificate (PEM), for its tls+tcp:// listeners", "FILE");
	NET(3, "tls-key", CONFIG_STR, "", 0, 0, tls_key, "the private key of --tls-cert (PEM)",
	    "FILE");
	NET(4, "tls-ca", CONFIG_STR, "", 0, 0, tls_ca,
	    "the CA whose certificates may call --listen (its role's CA; docs/security.md)",
	    "FILE");
	NET(5, "admin-tls-ca", CONFIG_STR, "", 0, 0, admin_tls_ca,
	    "the CA whose certificates may call --admin-listen (the admin role's CA)", "FILE");
	NET(6, "enable-fault-injection", CONFIG_BOOL, "false", 0, 0, fault_injection,
	    "allow --fault and Admin/SetFault (tests only: an armed fault drops or fails real "
	    "calls)",
	    NULL);
	NET(7, "max-connections", CONFIG_INT, "1000", 1, 100000, max_conns,
	    "most open connections per listener (more are closed as they come)", "N");
	NET(8, "idle-timeout", CONFIG_INT, "60000", 1000, 86400000, idle_ms,
	    "close a connection that sent no whole request for this long while none of its "
	    "calls is served (a stalled half frame)",
	    "MS");
	NET(9, "max-msg", CONFIG_INT, "65536", 1024, 67108864, max_msg,
	    "largest request frame accepted (docs/protocol.md, \"Frame limits\")", "BYTES");
	NET(10, "health-listen", CONFIG_STR, "", 0, 0, health_listen,
	    "nng URL of a plain listener that answers only Health/Check, to anyone (probes); "
	    "\"\" = none",
	    "URL");
	NET(11, "metrics-listen", CONFIG_STR, default_metrics, 0, 0, metrics_listen,
	    "where GET /metrics (Prometheus) is served: http://HOST:PORT on loopback only, or "
	    "https://HOST:PORT with --tls-cert, --tls-key and --metrics-tls-ca; \"\" = none",
	    "URL");
	NET(12, "metrics-tls-ca", CONFIG_STR, "", 0, 0, metrics_tls_ca,
	    "the CA whose client certificates may scrape an https:// --metrics-listen "
	    "(docs/security.md)",
	    "FILE");
	NET(13, "http-allowed-hosts", CONFIG_STR, "", 0, 0, http_allowed_hosts,
	    "more names the /metrics listener answers to in a request's Host: comma-separated "
	    "host or host:port (e.g. the name Prometheus scrapes it by); besides its "
	    "--metrics-listen address, and localhost with its port on loopback; another Host is "
	    "answered 421 (DNS rebinding, docs/security.md)",
	    "HOSTS");
#undef NET
}

/* daemon_net_check_url checks one listener's URL and its TLS files. */
static int daemon_net_check_url(const char *opt, const char *url, const daemon_net *n,
    const char *ca, const char *ca_opt, int slot)
{
	if (!rpc_url_ok(url)) {
		config_error("invalid value for %s: \"%s\" is not a tls+tcp://HOST:PORT, "
		             "tcp://HOST:PORT or ipc://PATH URL\n",
		    opt, url);
		return 2;
	}
	if (strncmp(url, "ws", 2) == 0) {
		config_error(
		    "invalid value for %s: \"%s\": a daemon does not listen on ws:// or "
		    "wss:// (a web page open in a browser could call it); use tls+tcp://\n",
		    opt, url);
		return 2;
	}
	if (!tls_url(url)) {
		if (tls_url_local(url))
			return 0;
		config_error("invalid value for %s: \"%s\" is plain TCP on an address other hosts "
		             "can reach, so anyone on the network could call it: use tls+tcp:// "
		             "with --tls-cert, --tls-key and --%s (docs/security.md), or listen on "
		             "127.0.0.1\n",
		    opt, url, ca_opt);
		return 2;
	}
	if (n->tls_cert[0] == '\0' || n->tls_key[0] == '\0' || ca[0] == '\0') {
		config_error(
		    "%s is %s, which needs --tls-cert, --tls-key and --%s (missing:%s%s%s; "
		    "docs/security.md)\n",
		    opt, url, ca_opt, n->tls_cert[0] ? "" : " --tls-cert",
		    n->tls_key[0] ? "" : " --tls-key",
		    ca[0]                  ? ""
		        : ca_opt[0] == 'a' ? " --admin-tls-ca"
		                           : " --tls-ca");
		return 2;
	}
	/* the files now, so that a bad one is a usage error (exit 2) before
	 * the daemon touches its database */
	char err[512];
	tls_files f = {.cert = n->tls_cert, .key = n->tls_key, .ca = ca};
	if (tls_server_new(&dn.tls[slot], &f, err, sizeof err) != 0) {
		config_error("invalid TLS files for %s %s: %s\n", opt, url, err);
		return 2;
	}
	return 0;
}

/* daemon_net_check_metrics checks --metrics-listen and, for https://, the
 * TLS files (loaded now and let go, so that a bad one is exit 2 before the
 * daemon touches its database). */
static int daemon_net_check_metrics(const daemon_net *n)
{
	bool tls;
	char why[512];
	if (http_hosts_check(n->http_allowed_hosts, why, sizeof why) != 0) {
		config_error("invalid value for http-allowed-hosts: %s\n", why);
		return 2;
	}
	if (metrics_url_check(n->metrics_listen, &tls, why, sizeof why) != 0) {
		config_error("invalid value for metrics-listen: %s\n", why);
		return 2;
	}
	if (!tls) {
		if (n->metrics_tls_ca[0] != '\0' && n->metrics_listen[0] != '\0') {
			config_error(
			    "metrics-tls-ca is set but metrics-listen %s is plain http://: "
			    "use https:// (or drop --metrics-tls-ca)\n",
			    n->metrics_listen);
			return 2;
		}
		return 0;
	}
	if (n->tls_cert[0] == '\0' || n->tls_key[0] == '\0' || n->metrics_tls_ca[0] == '\0') {
		config_error("metrics-listen is %s, which needs --tls-cert, --tls-key and "
		             "--metrics-tls-ca (missing:%s%s%s; docs/security.md)\n",
		    n->metrics_listen, n->tls_cert[0] ? "" : " --tls-cert",
		    n->tls_key[0] ? "" : " --tls-key",
		    n->metrics_tls_ca[0] ? "" : " --metrics-tls-ca");
		return 2;
	}
	tls_files f = {.cert = n->tls_cert, .key = n->tls_key, .ca = n->metrics_tls_ca};
	tls_conf *c = NULL;
	if (tls_server_new(&c, &f, why, sizeof why) != 0) {
		config_error(
		    "invalid TLS files for metrics-listen %s: %s\n", n->metrics_listen, why);
		return 2;
	}
	tls_conf_free(c);
	return 0;
}

int daemon_net_check(const daemon_net *n, const char *fault)
{
	if (daemon_net_check_url("listen", n->listen, n, n->tls_ca, "tls-ca", 0) != 0)
		return 2;
	if (n->admin_listen[0] != '\0'
	    && daemon_net_check_url(
	           "admin-listen", n->admin_listen, n, n->admin_tls_ca, "admin-tls-ca", 1)
	        != 0)
		return 2;
	if (n->health_listen[0] != '\0'
	    && (!rpc_url_ok(n->health_listen) || tls_url(n->health_listen)
	        || strncmp(n->health_listen, "ws", 2) == 0)) {
		config_error("invalid value for health-listen: \"%s\" is not a tcp://HOST:PORT or "
		             "ipc://PATH URL (it answers only Health, with no certificate)\n",
		    n->health_listen);
		return 2;
	}
	if (daemon_net_check_metrics(n) != 0)
		return 2;
	if (fault[0] != '\0' && !n->fault_injection) {
		config_error("fault: failure injection is off; --fault needs "
		             "--enable-fault-injection (tests only)\n");
		return 2;
	}
	return 0;
}

/* daemon_net_has_password is true when conninfo `c` parses and carries a
 * non-empty password. */
static bool daemon_net_has_password(const char *c)
{
	PQconninfoOption *o = PQconninfoParse(c, NULL);
	bool has = false;
	for (PQconninfoOption *i = o; i && i->keyword; i++)
		if (strcmp(i->keyword, "password") == 0 && i->val && i->val[0])
			has = true;
	PQconninfoFree(o);
	return has;
}

int daemon_net_db_argv(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			v = argv[i + 1];
		else if (strncmp(argv[i], "--db=", 5) == 0)
			v = argv[i] + 5;
		if (v != NULL && daemon_net_has_password(v)) {
			config_error(
			    "invalid value for db (from the command line): it holds a "
			    "password, which every user of this host can read with ps; put it "
			    "in a passfile (PGPASSFILE or ~/.pgpass) or in the config file "
			    "(--config) instead\n");
			return 2;
		}
	}
	return 0;
}

/* daemon_net_listener fills `l` for `url` with `roles` and the TLS
 * configuration daemon_net_check made for it (dn.tls[slot]). */
static void daemon_net_listener(rpc_listen *l, int slot, const char *url, unsigned roles)
{
	*l = (rpc_listen) {.url = url, .roles = roles, .tls = dn.tls[slot]};
	if (roles != 0 && !tls_url(url))
		l->roles = AUTHZ_ALL; /* plain, on loopback: a laptop */
}

/* daemon_net_log_listener says what a started listener is. */
static void daemon_net_log_listener(const rpc_listen *l, const char *ca)
{
	char names[64];
	if (l->roles == 0)
		log_info(NULL,
		    "listener %s: Health/Check only, to anyone (every other method "
		    "UNAUTHENTICATED)",
		    l->url);
	else if (l->tls == NULL)
		log_warn(NULL,
		    "listener %s is plain TCP: every process on this host may call every method on "
		    "it as any role (%s), with no certificate; for anything but a laptop use "
		    "tls+tcp:// (docs/security.md)",
		    l->url, authz_role_names(AUTHZ_ALL, names, sizeof names));
	else
		log_info(NULL,
		    "listener %s: mutual TLS, callers with a certificate from %s have the %s role",
		    l->url, ca, authz_role_names(l->roles, names, sizeof names));
}

/* Descriptors a daemon keeps beyond its listeners' connections: database
 * connections, its own client sockets, logs. */
#define DAEMON_NET_FD_RESERVE 256

/* daemon_net_fd_limit raises the process's descriptor limit, when it is
 * lower, to what its listeners may hold (`nlisten` x max-connections) plus
 * DAEMON_NET_FD_RESERVE, within the hard limit; it never lowers it (a lower
 * limit is reached sooner by connections still in their handshake, which
 * the cap does not count until they are pipes). */
static void daemon_net_fd_limit(const daemon_net *n, size_t nlisten)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t want = (rlim_t)n->max_conns * nlisten + DAEMON_NET_FD_RESERVE;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max) {
		log_warn(NULL,
		    "the descriptor limit (%llu) is below what %zu listeners of %lld connections "
		    "need (%llu): lower --max-connections or raise the limit",
		    (unsigned long long)rl.rlim_max, nlisten, (long long)n->max_conns,
		    (unsigned long long)want);
		want = rl.rlim_max;
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warn(
		    NULL, "could not set the descriptor limit to %llu", (unsigned long long)want);
}

/* daemon_net_free_tls frees the listeners' TLS configurations. */
static void daemon_net_free_tls(void)
{
	for (size_t i = 0; i < sizeof dn.tls / sizeof dn.tls[0]; i++) {
		tls_conf_free(dn.tls[i]);
		dn.tls[i] = NULL;
	}
}

int daemon_net_serve(rpc_server **out, const daemon_net *n, const char *daemon, unsigned role,
    int workers, int contexts, const rpc_server_ops *ops, void *app, const health_service *health)
{
	metrics_process_init(daemon);
	authz_metrics_init();
	pg_metrics_init();
	char err[512];
	tls_files mf = {.cert = n->tls_cert, .key = n->tls_key, .ca = n->metrics_tls_ca};
	int mrc
	    = metrics_http_start(n->metrics_listen, &mf, n->http_allowed_hosts, err, sizeof err);
	if (mrc != 0) {
		log_error(NULL, "metrics: %s", err);
		daemon_net_free_tls();
		return mrc;
	}
	if (n->metrics_listen[0] != '\0')
		log_info(NULL, "metrics: GET /metrics on %s%s", n->metrics_listen,
		    strncmp(n->metrics_listen, "https:", 6) == 0
		        ? " (mutual TLS: client certificates from --metrics-tls-ca)"
		        : "");

	rpc_listen ls[3];
	const char *cas[3];
	size_t nl = 0;
	cas[nl] = n->tls_ca;
	daemon_net_listener(&ls[nl++], 0, n->listen, role);
	if (n->admin_listen[0] != '\0') {
		cas[nl] = n->admin_tls_ca;
		daemon_net_listener(&ls[nl++], 1, n->admin_listen, AUTHZ_ADMIN);
	}
	if (n->health_listen[0] != '\0') {
		cas[nl] = "";
		daemon_net_listener(&ls[nl++], 2, n->health_listen, 0);
	}
	daemon_net_fd_limit(n, nl);
	dn.admin.fault_injection = n->fault_injection;
	if (n->fault_injection)
		log_warn(NULL,
		    "failure injection is on (--enable-fault-injection): an admin caller "
		    "can make this daemon drop, fail or delay real calls");
	dn.svc_health = (rpc_service) {"sagas.v1.Health", health_serve, (void *)health};
	dn.svc_admin = (rpc_service) {"sagas.v1.Admin", admin_serve, &dn.admin};
	dn.services[0] = &dn.svc_health;
	dn.services[1] = &dn.svc_admin;
	dn.services[2] = NULL;
	dn.ops = *ops;
	dn.ops.services = dn.services;
	rpc_server_cfg cfg = {
	    .listen = ls,
	    .nlisten = nl,
	    .workers = workers,
	    .contexts = contexts,
	    .max_msg = (size_t)n->max_msg,
	    .max_conns = (int)n->max_conns,
	    .idle_ms = n->idle_ms,
	};
	int rc = rpc_server_serve_on(out, &cfg, &dn.ops, app);
	if (rc == 0)
		for (size_t i = 0; i < nl; i++)
			daemon_net_log_listener(&ls[i], cas[i]);
	if (rc != 0) {
		metrics_http_stop();
		daemon_net_free_tls();
	}
	return rc;
}

void daemon_net_stop(rpc_server *srv)
{
	rpc_server_stop(srv);
	metrics_http_stop();
	daemon_net_free_tls();
	uint64_t unauth = 0, denied = 0;
	authz_refused(&unauth, &denied);
	if (srv != NULL)
		log_info(NULL,
		    "refused while running: %llu calls UNAUTHENTICATED, %llu PERMISSION_DENIED, "
		    "%lu "
		    "SetFault with failure injection off",
		    (unsigned long long)unauth, (unsigned long long)denied, admin_fault_refusals());
}

int daemon_check_options(const char *log_level, enum log_level *level, const char *db)
{
	if (log_level_parse(log_level, level) != 0) {
		config_error("invalid value for log-level: \"%s\" (debug, info, warn or error)\n",
		    log_level);
		return 2;
	}
	char why[256];
	if (!pg_conninfo_ok(db, why, sizeof why)) {
		config_error("invalid value for db: %s\n", why);
		return 2;
	}
	return 0;
}

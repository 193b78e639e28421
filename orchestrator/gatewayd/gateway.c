/* gatewayd: the HTTP/JSON API of the orchestrator (gateway.h). Reads its
 * configuration (flags, environment, file) as every daemon does, dials
 * orchestratord over nng (one client per role), starts its HTTP listeners
 * and runs until SIGINT or SIGTERM. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "config.h"
#include "daemon.h"
#include "gateway.h"
#include "http_names.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "rpc.h"
#include "tls.h"

typedef struct gw_config {
	char listen[CONFIG_STR_MAX];
	char admin_listen[CONFIG_STR_MAX];
	char tls_cert[CONFIG_STR_MAX];
	char tls_key[CONFIG_STR_MAX];
	char tls_ca[CONFIG_STR_MAX];
	char admin_tls_ca[CONFIG_STR_MAX];
	char orchestrator[CONFIG_STR_MAX];
	char orchestrator_admin[CONFIG_STR_MAX];
	char orch_cert[CONFIG_STR_MAX];
	char orch_key[CONFIG_STR_MAX];
	char orch_ca[CONFIG_STR_MAX];
	char orch_admin_cert[CONFIG_STR_MAX];
	char orch_admin_key[CONFIG_STR_MAX];
	int64_t request_timeout;
	int64_t max_body;
	int64_t stop_timeout;
	char metrics_listen[CONFIG_STR_MAX];
	char metrics_tls_ca[CONFIG_STR_MAX];
	char http_allowed_hosts[CONFIG_STR_MAX];
	char log_level[CONFIG_STR_MAX];
} gw_config;

#define OPT(n, e, t, d, lo, hi, f, h, u)                                                           \
	{                                                                                          \
		n, e, t, d, lo, hi, offsetof(gw_config, f), h, u                                   \
	}
static const config_opt gw_opts[] = {
    OPT("listen", "SAGA_GATEWAY_LISTEN", CONFIG_STR, "http://127.0.0.1:7180", 0, 0, listen,
        "the client role's HTTP listener: http://HOST:PORT on loopback, or https://HOST:PORT "
        "with --tls-cert, --tls-key and --tls-ca (\"\" = none)",
        "URL"),
    OPT("admin-listen", "SAGA_GATEWAY_ADMIN_LISTEN", CONFIG_STR, "", 0, 0, admin_listen,
        "the admin role's HTTP listener (RetrySaga and all the client's calls), http:// on "
        "loopback or https:// with --admin-tls-ca (\"\" = none)",
        "URL"),
    OPT("tls-cert", "SAGA_GATEWAY_TLS_CERT", CONFIG_STR, "", 0, 0, tls_cert,
        "the gateway's server certificate (PEM) for an https:// listener", "FILE"),
    OPT("tls-key", "SAGA_GATEWAY_TLS_KEY", CONFIG_STR, "", 0, 0, tls_key,
        "the private key of --tls-cert (PEM)", "FILE"),
    OPT("tls-ca", "SAGA_GATEWAY_TLS_CA", CONFIG_STR, "", 0, 0, tls_ca,
        "the CA of the client role's certificates, for an https:// --listen", "FILE"),
    OPT("admin-tls-ca", "SAGA_GATEWAY_ADMIN_TLS_CA", CONFIG_STR, "", 0, 0, admin_tls_ca,
        "the CA of the admin role's certificates, for an https:// --admin-listen", "FILE"),
    OPT("orchestrator", "SAGA_GATEWAY_ORCHESTRATOR", CONFIG_STR, "tcp://127.0.0.1:7101", 0, 0,
        orchestrator,
        "nng URL of orchestratord for the client role's calls, or a comma-separated list of "
        "its replicas' URLs",
        "URL[,URL...]"),
    OPT("orchestrator-admin", "SAGA_GATEWAY_ORCHESTRATOR_ADMIN", CONFIG_STR, "", 0, 0,
        orchestrator_admin,
        "nng URL(s) of orchestratord for the admin role's calls (its --admin-listen); \"\" = "
        "--orchestrator",
        "URL[,URL...]"),
    OPT("orchestrator-tls-cert", "SAGA_GATEWAY_ORCHESTRATOR_TLS_CERT", CONFIG_STR, "", 0, 0,
        orch_cert,
        "the certificate (PEM, of the client role) the gateway shows a tls+tcp:// "
        "--orchestrator",
        "FILE"),
    OPT("orchestrator-tls-key", "SAGA_GATEWAY_ORCHESTRATOR_TLS_KEY", CONFIG_STR, "", 0, 0, orch_key,
        "the private key of --orchestrator-tls-cert (PEM)", "FILE"),
    OPT("orchestrator-tls-ca", "SAGA_GATEWAY_ORCHESTRATOR_TLS_CA", CONFIG_STR, "", 0, 0, orch_ca,
        "the CA that signs orchestratord's certificate (PEM)", "FILE"),
    OPT("orchestrator-admin-tls-cert", "SAGA_GATEWAY_ORCHESTRATOR_ADMIN_TLS_CERT", CONFIG_STR, "",
        0, 0, orch_admin_cert,
        "the certificate (PEM, of the admin role) the gateway shows a tls+tcp:// "
        "--orchestrator-admin",
        "FILE"),
    OPT("orchestrator-admin-tls-key", "SAGA_GATEWAY_ORCHESTRATOR_ADMIN_TLS_KEY", CONFIG_STR, "", 0,
        0, orch_admin_key, "the private key of --orchestrator-admin-tls-cert (PEM)", "FILE"),
    OPT("request-timeout", "SAGA_GATEWAY_REQUEST_TIMEOUT_MS", CONFIG_INT, "10000", 100, 600000,
        request_timeout,
        "how long a call to orchestratord may take (plus the wait of WaitSaga or a StartSaga "
        "with waitMs)",
        "MS"),
    OPT("max-body", "SAGA_GATEWAY_MAX_BODY", CONFIG_INT, "65536", 1024, 1048576, max_body,
        "the largest request body taken (larger: 413)", "BYTES"),
    OPT("stop-timeout", "SAGA_GATEWAY_STOP_TIMEOUT_MS", CONFIG_INT, "15000", 0, 3600000,
        stop_timeout,
        "after SIGTERM or SIGINT, the longest a stop may take before the process ends "
        "anyway (0 = no bound)",
        "MS"),
    OPT("metrics-listen", "SAGA_GATEWAY_METRICS_LISTEN", CONFIG_STR, "", 0, 0, metrics_listen,
        "GET /metrics (Prometheus text): http://HOST:PORT on loopback, or https://HOST:PORT "
        "with --tls-cert, --tls-key and --metrics-tls-ca (\"\" = none)",
        "URL"),
    OPT("metrics-tls-ca", "SAGA_GATEWAY_METRICS_TLS_CA", CONFIG_STR, "", 0, 0, metrics_tls_ca,
        "the CA whose client certificates may scrape an https:// --metrics-listen", "FILE"),
    OPT("http-allowed-hosts", "SAGA_GATEWAY_HTTP_ALLOWED_HOSTS", CONFIG_STR, "", 0, 0,
        http_allowed_hosts,
        "more names the HTTP listeners (--listen, --admin-listen, --metrics-listen) answer to "
        "in a request's Host, and in the Origin of a POST: comma-separated host or host:port "
        "(e.g. the name the API is published under); besides each listener's address, and "
        "localhost with its port on loopback; another Host is answered 421, a POST from "
        "another Origin 403 (DNS rebinding, docs/security.md)",
        "HOSTS"),
    OPT("log-level", "SAGA_GATEWAY_LOG_LEVEL", CONFIG_STR, "info", 0, 0, log_level,
        "debug, info, warn or error", "LEVEL"),
};

/* gw_check_listener checks one HTTP listener's URL and, for https://, its
 * TLS files (loaded now and let go: a bad one is exit 2). Returns 0 or 2. */
static int gw_check_listener(
    const char *name, const char *url, const gw_config *c, const char *ca, const char *ca_name)
{
	bool tls;
	char why[512], opt[64];
	snprintf(opt, sizeof opt, "--%s", ca_name);
	const char *hint = strcmp(name, "metrics-listen") == 0
	    ? "metrics are served at /metrics"
	    : "the API is served at /v1/, the console at /";
	if (http_url_check(url, &tls, opt, hint, why, sizeof why) != 0) {
		config_error("invalid value for %s: %s\n", name, why);
		return 2;
	}
	if (!tls) {
		if (ca[0] != '\0' && url[0] != '\0') {
			config_error("%s is set but %s %s is plain http://: use https:// (or drop "
			             "--%s)\n",
			    ca_name, name, url, ca_name);
			return 2;
		}
		return 0;
	}
	if (c->tls_cert[0] == '\0' || c->tls_key[0] == '\0' || ca[0] == '\0') {
		config_error(
		    "%s is %s, which needs --tls-cert, --tls-key and --%s (missing:%s%s%s%s; "
		    "docs/security.md)\n",
		    name, url, ca_name, c->tls_cert[0] ? "" : " --tls-cert",
		    c->tls_key[0] ? "" : " --tls-key", ca[0] ? "" : " ", ca[0] ? "" : opt);
		return 2;
	}
	tls_files f = {.cert = c->tls_cert, .key = c->tls_key, .ca = ca};
	tls_conf *conf = NULL;
	if (tls_server_new(&conf, &f, why, sizeof why) != 0) {
		config_error("invalid TLS files for %s %s: %s\n", name, url, why);
		return 2;
	}
	tls_conf_free(conf);
	return 0;
}

/* gw_upstream parses an --orchestrator list into *u and makes the TLS
 * configurations of its tls+tcp:// entries from `f`. Returns 0, or 2 after
 * an error line (the caller frees *u). */
static int gw_upstream(
    rpc_urls *u, const char *name, const char *list, const tls_files *f, const char *cert_opt)
{
	char why[1024];
	if (rpc_urls_parse(u, list, why, sizeof why) != 0) {
		config_error("invalid value for %s: %s\n", name, why);
		return 2;
	}
	const char *tls = rpc_urls_tls_entry(u);
	if (tls == NULL)
		return 0;
	if (f->ca[0] == '\0' || f->cert[0] == '\0' || f->key[0] == '\0') {
		config_error("%s %s is a TLS URL: give --orchestrator-tls-ca, --%s and its key (a "
		             "certificate of the role; docs/security.md)\n",
		    name, tls, cert_opt);
		return 2;
	}
	if (rpc_urls_tls(u, f, why, sizeof why) != 0) {
		config_error("invalid TLS files for %s: %s\n", name, why);
		return 2;
	}
	return 0;
}

/* gw_check checks the options after config_load. Returns 0 or 2. */
static int gw_check(const gw_config *c, enum log_level *level)
{
	if (log_level_parse(c->log_level, level) != 0) {
		config_error("invalid value for log-level: \"%s\" (debug, info, warn or error)\n",
		    c->log_level);
		return 2;
	}
	char why[512];
	if (http_hosts_check(c->http_allowed_hosts, why, sizeof why) != 0) {
		config_error("invalid value for http-allowed-hosts: %s\n", why);
		return 2;
	}
	if (c->listen[0] == '\0' && c->admin_listen[0] == '\0') {
		config_error("listen and admin-listen are both empty: nothing to serve\n");
		return 2;
	}
	if (c->listen[0] != '\0' && strcmp(c->listen, c->admin_listen) == 0) {
		config_error("listen and admin-listen are the same URL %s: each listener serves "
		             "one role\n",
		    c->listen);
		return 2;
	}
	if (gw_check_listener("listen", c->listen, c, c->tls_ca, "tls-ca") != 0
	    || gw_check_listener(
	           "admin-listen", c->admin_listen, c, c->admin_tls_ca, "admin-tls-ca")
	        != 0
	    || gw_check_listener(
	           "metrics-listen", c->metrics_listen, c, c->metrics_tls_ca, "metrics-tls-ca")
	        != 0)
		return 2;
	return 0;
}

/* The process's state. */
static gw_listener gw_client = {.role = AUTHZ_CLIENT, .role_name = "client"};
static gw_listener gw_admin = {.role = AUTHZ_ADMIN, .role_name = "admin"};
static rpc_urls gw_urls[2];

/* gw_dial opens the nng client of listener `l` on `u`. Returns 0 or a
 * negative errno after logging. */
static int gw_dial(gw_listener *l, const rpc_urls *u)
{
	/* no nng resend: a call the orchestrator may have served is not sent
	 * again behind the HTTP caller's back (StartSaga is keyed, but the
	 * caller decides); failover re-sends only on a replica that died */
	rpc_client_opts opts = {.resend_ms = 0, .failover = false};
	int rc = rpc_client_open_urls(&l->up, u, &opts);
	l->urls = u;
	if (rc != 0) {
		char text[1024];
		log_error(NULL, "could not dial orchestratord at %s for the %s role: %s",
		    rpc_urls_text(u, text, sizeof text), l->role_name, strerror(-rc));
	}
	return rc;
}

/* gw_serve starts the HTTP listener of `l` on `url` ("" = none). */
static int gw_serve(
    gw_listener *l, const char *url, const gw_config *c, const char *ca, const char *ca_option)
{
	if (url[0] == '\0')
		return 0;
	tls_files f = {.cert = c->tls_cert, .key = c->tls_key, .ca = ca};
	http_server_cfg cfg = {.url = url,
	    .tls = &f,
	    .handler = gw_handle,
	    .arg = l,
	    .conns_max = GW_CONNS_MAX,
	    .conns_per_ip = GW_CONNS_PER_IP,
	    .timeout_s = GW_CONN_TIMEOUT_S,
	    .header_memory = GW_HEADER_MEMORY,
	    .max_body = (size_t)c->max_body,
	    .thread_per_conn = true,
	    .name = "gatewayd",
	    .ca_option = ca_option,
	    .allowed_hosts = c->http_allowed_hosts,
	    .label = l->role_name};
	char err[512];
	int rc = http_server_start(&l->srv, &cfg, err, sizeof err);
	if (rc != 0) {
		log_error(NULL, "could not start the %s role's listener: %s", l->role_name, err);
		return rc;
	}
	if (strncmp(url, "https:", 6) == 0)
		log_info(NULL, "%s role: HTTP API on %s (mutual TLS: client certificates from %s)",
		    l->role_name, url, ca_option);
	else
		log_warn(NULL,
		    "%s role: HTTP API on %s, plain HTTP: every process of this host may call it "
		    "with the %s role (docs/security.md)",
		    l->role_name, url, l->role_name);
	return 0;
}

/* gw_start dials the orchestrator and starts the listeners (the metrics
 * one first: a port taken there fails the start before the API opens). */
static int gw_start(const gw_config *c)
{
	char err[512];
	tls_files mf = {.cert = c->tls_cert, .key = c->tls_key, .ca = c->metrics_tls_ca};
	if (metrics_http_start(c->metrics_listen, &mf, c->http_allowed_hosts, err, sizeof err)
	    != 0) {
		log_error(NULL, "metrics: %s", err);
		return -1;
	}
	if (c->metrics_listen[0] != '\0')
		log_info(NULL, "metrics: GET /metrics on %s", c->metrics_listen);
	gw_client.timeout_ms = gw_admin.timeout_ms = c->request_timeout;
	if (c->listen[0] != '\0' && gw_dial(&gw_client, &gw_urls[0]) != 0)
		return -1;
	if (c->admin_listen[0] != '\0' && gw_dial(&gw_admin, &gw_urls[1]) != 0)
		return -1;
	if (gw_serve(&gw_client, c->listen, c, c->tls_ca, "--tls-ca") != 0
	    || gw_serve(&gw_admin, c->admin_listen, c, c->admin_tls_ca, "--admin-tls-ca") != 0)
		return -1;
	return 0;
}

/* gw_stop stops the listeners and closes the clients. */
static void gw_stop(void)
{
	http_server_stop(gw_client.srv);
	http_server_stop(gw_admin.srv);
	metrics_http_stop();
	rpc_client_close(gw_client.up);
	rpc_client_close(gw_admin.up);
	rpc_urls_free(&gw_urls[0]);
	rpc_urls_free(&gw_urls[1]);
}

/* gw_load reads and checks the configuration. Returns 0 to go on, or the
 * exit status (0 after --help). */
static int gw_load(gw_config *c, enum log_level *level, int argc, char **argv)
{
	int rc = config_load(gw_opts, sizeof gw_opts / sizeof gw_opts[0], c, argc, argv,
	    "gatewayd [options]",
	    "The HTTP/JSON API of the saga orchestrator: serves /v1/sagas... and the web console,\n"
	    "and calls orchestratord over nng as an ordinary client (docs/protocol.md, \"The HTTP\n"
	    "API\"). Each HTTP listener serves one role: --listen client, --admin-listen admin.",
	    "SAGA_GATEWAY_CONFIG", NULL);
	if (rc == CONFIG_DONE_HELP)
		return -1;
	if (rc != 0 || gw_check(c, level) != 0)
		return 2;
	tls_files client = {.cert = c->orch_cert, .key = c->orch_key, .ca = c->orch_ca};
	tls_files admin = {.cert = c->orch_admin_cert, .key = c->orch_admin_key, .ca = c->orch_ca};
	const char *admin_list = c->orchestrator_admin[0] ? c->orchestrator_admin : c->orchestrator;
	/* each role's link only when its listener is served: a client-only
	 * gateway holds no admin certificate */
	if (c->listen[0] != '\0'
	    && gw_upstream(
	           &gw_urls[0], "orchestrator", c->orchestrator, &client, "orchestrator-tls-cert")
	        != 0)
		return 2;
	if (c->admin_listen[0] != '\0'
	    && gw_upstream(&gw_urls[1], "orchestrator-admin", admin_list, &admin,
	           "orchestrator-admin-tls-cert")
	        != 0)
		return 2;
	return 0;
}

int main(int argc, char **argv)
{
	gw_config c;
	enum log_level level;
	int rc = gw_load(&c, &level, argc, argv);
	if (rc != 0) {
		rpc_urls_free(&gw_urls[0]);
		rpc_urls_free(&gw_urls[1]);
		return rc < 0 ? 0 : rc;
	}
	log_init("gatewayd", level);
	/* the stop bound counts from the signal, whatever is running then */
	if (daemon_install_signals(c.stop_timeout) != 0)
		log_warn(NULL, "could not bound the stop: no watchdog thread");
	metrics_process_init("gatewayd");
	authz_metrics_init();
	gw_metrics_init();
	if (gw_start(&c) != 0) {
		gw_stop();
		return 1;
	}
	log_info(NULL, "gatewayd listening (client %s, admin %s; orchestrator %s)",
	    c.listen[0] ? c.listen : "none", c.admin_listen[0] ? c.admin_listen : "none",
	    c.orchestrator);
	daemon_wait_for_stop(100);
	log_info(NULL, "shutting down");
	gw_stop();
	return 0;
}

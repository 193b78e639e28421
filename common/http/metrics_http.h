/* metrics_http: the /metrics listener of a daemon (--metrics-listen,
 * docs/operations.md "Metrics", docs/security.md), on libmicrohttpd.
 *
 * The rule is the RPC listeners' (docs/security.md): plain http:// only on an
 * address no other host can reach (127.0.0.0/8, ::1, localhost), anywhere
 * else https:// with the daemon's certificate and a CA whose client
 * certificates may scrape (--metrics-tls-ca): a caller without one gets no
 * HTTP status at all.
 */
#ifndef SAGA_METRICS_HTTP_H
#define SAGA_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "tls.h"

/* The listener's bounds (metrics_http_start). */
#define METRICS_CONNS_MAX      16
#define METRICS_CONNS_PER_IP   8
#define METRICS_CONN_TIMEOUT_S 10

/* metrics_url_check checks a --metrics-listen value (borrowed): "" (off),
 * http://HOST:PORT on loopback, or https://HOST:PORT; no user part, no path
 * but "/", no query. Sets *tls to whether it is https. Returns 0, or -EINVAL
 * with a one-line reason in `why` (len bytes) naming what is wrong (the
 * scheme, the port, the path, the user part, a host other hosts reach). */
int metrics_url_check(const char *url, bool *tls, char *why, size_t len);

/* metrics_http_start serves GET /metrics (metrics.h's exposition) on `url`
 * (checked by metrics_url_check; "" starts nothing) with libmicrohttpd. When
 * the URL is https it reads the PEM files `tls` names (the daemon's
 * certificate and key, and the CA of the scrapers' client certificates;
 * borrowed; their texts are kept until metrics_http_stop): a request whose
 * connection showed no client certificate verifying against tls->ca is not
 * answered (the connection is closed) and is counted. Bounds: at most
 * METRICS_CONNS_MAX connections, METRICS_CONNS_PER_IP from one address,
 * each closed after METRICS_CONN_TIMEOUT_S seconds without a byte (a
 * stalled TLS handshake too), 32 KiB of request headers
 * (docs/security.md, "Bounded resources"). A request whose Host is not one
 * of its names (its address, localhost with its port on loopback, the
 * entries of `allowed_hosts`: an --http-allowed-hosts value, borrowed; NULL
 * or "": none) is answered 421 and counted (http_server.h).
 * Answers 404 for another path, 405 for another method. One listener per
 * process. Returns 0, or a negative errno with a one-line reason in `err`:
 * -EADDRINUSE (the port is taken), -EINVAL (a URL or host it cannot bind,
 * https without tls, a PEM file it cannot read, an allowed host that does
 * not parse), -EIO (the library did not start: TLS files it
 * cannot use). */
int metrics_http_start(
    const char *url, const tls_files *tls, const char *allowed_hosts, char *err, size_t len);

/* metrics_http_stop stops the listener; a no-op when none runs. */
void metrics_http_stop(void);

#endif

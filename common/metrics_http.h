/* metrics_http: the /metrics listener of a daemon (--metrics-listen,
 * docs/operations.md "Metrics", docs/security.md), on nng's own HTTP server
 * (the libnng every daemon links).
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

/* metrics_url_check checks a --metrics-listen value (borrowed): "" (off),
 * http://HOST:PORT on loopback, or https://HOST:PORT; no user part, no path
 * but "/", no query. Sets *tls to whether it is https. Returns 0, or -EINVAL
 * with a one-line reason in `why` (len bytes) naming what is wrong (the
 * scheme, the port, the path, the user part, a host other hosts reach). */
int metrics_url_check(const char *url, bool *tls, char *why, size_t len);

/* metrics_http_start serves GET /metrics (metrics.h's exposition) on `url`
 * (checked by metrics_url_check; "" starts nothing), over TLS with `tls`
 * (borrowed; nng keeps its own reference) when the URL is https. One
 * listener per process. Returns 0, or a negative errno (-EADDRINUSE: the
 * port is taken) with a one-line reason in `err`. */
int metrics_http_start(const char *url, tls_conf *tls, char *err, size_t len);

/* metrics_http_stop stops the listener; a no-op when none runs. */
void metrics_http_stop(void);

#endif

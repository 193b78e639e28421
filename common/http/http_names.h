/* http_names: the names an HTTP listener answers to, against DNS rebinding
 * (docs/security.md, "DNS rebinding").
 *
 * A web page whose name re-resolves to 127.0.0.1 reaches a loopback
 * listener with the page's own name in the Host header, and its script may
 * read the answers (the same origin, to the browser). So a listener answers
 * only a request whose Host is one of its own names:
 *   - its listen address as given (the URL's host, with its port);
 *   - localhost, 127.0.0.1 and [::1] with its port, when it listens on
 *     loopback or on every address (0.0.0.0, [::]);
 *   - the entries of --http-allowed-hosts: "host" (any port: a name behind
 *     a port mapping) or "host:port" (that port only).
 * A state-changing request (POST, PUT, DELETE, PATCH) carrying an Origin
 * header is answered only when that origin's host is one of those names too
 * (no Origin, as from curl: allowed). Names compare without case and
 * without a final dot; IPv6 addresses by value.
 *
 * Pure functions, no I/O: the unit tests call what the listener calls.
 */
#ifndef SAGA_HTTP_NAMES_H
#define SAGA_HTTP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* The longest host name kept (DNS: 253), plus brackets of an IPv6 one. */
#define HTTP_NAME_MAX 256
/* The most names one listener has: its own four plus the configured ones. */
#define HTTP_NAMES_MAX 36

/* One name: a host (lowercase, IPv6 in brackets, canonical) and a port
 * (0: any). */
typedef struct http_name {
	char host[HTTP_NAME_MAX];
	unsigned port;
} http_name;

/* The names of one listener (http_names_init). Plain data: no free. */
typedef struct http_names {
	http_name name[HTTP_NAMES_MAX];
	size_t n;
	bool tls; /* the listener is https: a Host without a port means 443 */
} http_names;

/* http_hosts_check checks an --http-allowed-hosts value (borrowed): ""
 * or comma-separated entries "host" or "host:port" (a DNS name, an IPv4
 * address or a bracketed IPv6 one; port 1 to 65535; spaces around entries
 * ignored; no "*"), at most HTTP_NAMES_MAX - 4 of them. Returns 0, or
 * -EINVAL with a one-line reason naming the entry in `why` (len bytes). */
int http_hosts_check(const char *list, char *why, size_t len);

/* http_names_init fills *n with the names of a listener on `url` (an
 * http:// or https:// URL already checked by http_url_check) and the
 * entries of `allowed` (an --http-allowed-hosts value; "" or NULL: none).
 * Returns 0, or -EINVAL with a one-line reason in `why` (a URL or an entry
 * that does not parse). */
int http_names_init(http_names *n, const char *url, const char *allowed, char *why, size_t len);

/* http_names_host_ok is true when `host`, a request's Host header value
 * ("name", "name:port", "[v6]:port"; borrowed), is one of n's names. A Host
 * without a port has the scheme's default (80, or 443 when n->tls). NULL
 * (no Host header), "" and a value that does not parse are false. */
bool http_names_host_ok(const http_names *n, const char *host);

/* http_names_origin_ok is true when `origin`, a request's Origin header
 * value ("http://name:port", "https://name"; borrowed), names a host that
 * is one of n's names (the origin's scheme gives the default port: 80 for
 * http, 443 for https). "null", another scheme, a path or anything that
 * does not parse is false. */
bool http_names_origin_ok(const http_names *n, const char *origin);

/* http_method_changes is true for the methods that change state and so are
 * checked against their Origin: POST, PUT, DELETE, PATCH (any case). */
bool http_method_changes(const char *method);

#endif

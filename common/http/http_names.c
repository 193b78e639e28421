/* http_names: the names an HTTP listener answers to (http_names.h). */
#include "http_names.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nng/nng.h>

#include "tls.h"

/* parse_authority parses "host", "host:port" or "[v6]:port" (`len` bytes
 * of `s`) into `host` (HTTP_NAME_MAX bytes: lowercase, no final dot, an
 * IPv6 address canonical and in brackets) and *port (0 when none). Returns
 * 0, or -1 when it does not parse. */
static int parse_authority(const char *s, size_t len, char *host, unsigned *port)
{
	size_t hl;
	const char *rest;
	*port = 0;
	if (len == 0)
		return -1;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		char v6[INET6_ADDRSTRLEN + 1];
		struct in6_addr a;
		hl = close ? (size_t)(close - s) - 1 : 0;
		if (close == NULL || hl == 0 || hl >= sizeof v6)
			return -1;
		memcpy(v6, s + 1, hl);
		v6[hl] = '\0';
		if (inet_pton(AF_INET6, v6, &a) != 1
		    || inet_ntop(AF_INET6, &a, v6, sizeof v6) == NULL)
			return -1;
		snprintf(host, HTTP_NAME_MAX, "[%s]", v6);
		rest = close + 1;
	} else {
		const char *colon = memchr(s, ':', len);
		hl = colon ? (size_t)(colon - s) : len;
		if (hl == 0 || hl > 254)
			return -1;
		for (size_t i = 0; i < hl; i++) {
			unsigned char c = (unsigned char)s[i];
			if (!isalnum(c) && c != '-' && c != '.' && c != '_')
				return -1;
			host[i] = (char)tolower(c);
		}
		if (hl > 1 && host[hl - 1] == '.')
			hl--;
		host[hl] = '\0';
		if (host[0] == '.' || strstr(host, "..") != NULL || hl > 253)
			return -1;
		rest = s + (colon ? (size_t)(colon - s) : len);
	}
	size_t left = len - (size_t)(rest - s);
	if (left == 0)
		return 0;
	if (rest[0] != ':' || left < 2 || left > 6)
		return -1;
	unsigned p = 0;
	for (size_t i = 1; i < left; i++) {
		if (rest[i] < '0' || rest[i] > '9')
			return -1;
		p = p * 10 + (unsigned)(rest[i] - '0');
	}
	if (p < 1 || p > 65535)
		return -1;
	*port = p;
	return 0;
}

/* names_add appends a name; false when full. */
static bool names_add(http_names *n, const char *host, unsigned port)
{
	if (n->n >= HTTP_NAMES_MAX)
		return false;
	snprintf(n->name[n->n].host, HTTP_NAME_MAX, "%s", host);
	n->name[n->n].port = port;
	n->n++;
	return true;
}

/* hosts_walk parses each entry of an --http-allowed-hosts list, adding it
 * to `n` (NULL: only checks). Returns 0 or -EINVAL with `why`. */
static int hosts_walk(http_names *n, const char *list, char *why, size_t len)
{
	size_t count = 0;
	const char *p = list ? list : "";
	if (*p == '\0')
		return 0;
	for (;;) {
		size_t el = strcspn(p, ",");
		const char *e = p;
		while (el > 0 && (*e == ' ' || *e == '\t'))
			e++, el--;
		while (el > 0 && (e[el - 1] == ' ' || e[el - 1] == '\t'))
			el--;
		char host[HTTP_NAME_MAX];
		unsigned port;
		if (el == 0) {
			snprintf(why, len, "an empty entry (hosts are separated by single commas)");
			return -EINVAL;
		}
		if (parse_authority(e, el, host, &port) != 0) {
			snprintf(why, len,
			    "\"%.*s\" is not a host or host:port (a DNS name, an IPv4 address or "
			    "[an IPv6 one], port 1-65535; no \"*\")",
			    (int)(el > 200 ? 200 : el), e);
			return -EINVAL;
		}
		if (++count > HTTP_NAMES_MAX - 4) {
			snprintf(why, len, "more than %d hosts", HTTP_NAMES_MAX - 4);
			return -EINVAL;
		}
		if (n != NULL)
			names_add(n, host, port);
		p += strcspn(p, ",");
		if (*p == '\0')
			return 0;
		p++;
	}
}

int http_hosts_check(const char *list, char *why, size_t len)
{
	return hosts_walk(NULL, list, why, len);
}

/* is_wildcard is true for an address that means every address. */
static bool is_wildcard(const char *host)
{
	return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0;
}

int http_names_init(http_names *n, const char *url, const char *allowed, char *why, size_t len)
{
	memset(n, 0, sizeof *n);
	nng_url *u = NULL;
	if (nng_url_parse(&u, url) != 0) {
		snprintf(why, len, "\"%s\" is not a URL", url);
		return -EINVAL;
	}
	char host[HTTP_NAME_MAX], auth[HTTP_NAME_MAX + 8];
	unsigned port = 0;
	bool v6 = u->u_hostname[0] != '[' && strchr(u->u_hostname, ':') != NULL;
	snprintf(auth, sizeof auth, v6 ? "[%s]" : "%s", u->u_hostname);
	int rc = parse_authority(auth, strlen(auth), host, &port);
	port = (unsigned)strtoul(u->u_port, NULL, 10);
	bool local = tls_host_local(u->u_hostname);
	n->tls = strcmp(u->u_scheme, "https") == 0;
	nng_url_free(u);
	if (rc != 0 || port < 1 || port > 65535) {
		snprintf(why, len, "\"%s\": a host and port it cannot take as its name", url);
		return -EINVAL;
	}
	if (!is_wildcard(host))
		names_add(n, host, port);
	if (local || is_wildcard(host)) {
		names_add(n, "localhost", port);
		names_add(n, "127.0.0.1", port);
		names_add(n, "[::1]", port);
	}
	return hosts_walk(n, allowed, why, len);
}

/* names_match is true when host:port is one of n's names. */
static bool names_match(const http_names *n, const char *host, unsigned port)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->name[i].host, host) == 0
		    && (n->name[i].port == 0 || n->name[i].port == port))
			return true;
	return false;
}

bool http_names_host_ok(const http_names *n, const char *hv)
{
	char host[HTTP_NAME_MAX];
	unsigned port;
	if (hv == NULL || parse_authority(hv, strlen(hv), host, &port) != 0)
		return false;
	return names_match(n, host, port ? port : n->tls ? 443 : 80);
}

bool http_names_origin_ok(const http_names *n, const char *origin)
{
	if (origin == NULL)
		return false;
	unsigned dflt;
	const char *a;
	if (strncasecmp(origin, "http://", 7) == 0)
		a = origin + 7, dflt = 80;
	else if (strncasecmp(origin, "https://", 8) == 0)
		a = origin + 8, dflt = 443;
	else
		return false; /* "null", file:, chrome-extension:, ... */
	char host[HTTP_NAME_MAX];
	unsigned port;
	if (parse_authority(a, strlen(a), host, &port) != 0)
		return false;
	return names_match(n, host, port ? port : dflt);
}

bool http_method_changes(const char *method)
{
	return strcasecmp(method, "POST") == 0 || strcasecmp(method, "PUT") == 0
	    || strcasecmp(method, "DELETE") == 0 || strcasecmp(method, "PATCH") == 0;
}

/* rpc_urls: lists of URLs, the replicas of one service (rpc.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "config.h"
#include "tls.h"

/* Room for "\"url\" (entry i of n)". */
#define RPC_URL_WHERE_MAX (CONFIG_STR_MAX + 64)

/* rpc_urls_where writes into buf (len bytes) how an error names entry i
 * (0-based) of `u`: "\"url\"" alone, or "\"url\" (entry i+1 of n)". */
static void rpc_urls_where(const char *url, size_t i, size_t n, char *buf, size_t len)
{
	if (n == 1)
		snprintf(buf, len, "\"%s\"", url);
	else
		snprintf(buf, len, "\"%s\" (entry %zu of %zu)", url, i + 1, n);
}

/* The one query a TLS URL may have: the name its server's certificate must
 * hold when that is not the URL's host (a service reached by address). */
#define RPC_URL_SERVER_NAME "?server_name="

/* rpc_urls_split_name takes "?server_name=NAME" off entry i of `u` into
 * u->server_name[i] (where: how errors name the entry). Returns 0, or
 * -EINVAL with `err` filled. */
static int rpc_urls_split_name(rpc_urls *u, size_t i, const char *where, char *err, size_t len)
{
	if (!tls_url(u->url[i])) {
		if (strstr(u->url[i], RPC_URL_SERVER_NAME) == NULL)
			return 0; /* nng judges the rest of a plain URL */
		snprintf(err, len, "%s: server_name= is for tls+tcp:// URLs", where);
		return -EINVAL;
	}
	char *q = strchr(u->url[i], '?');
	if (q == NULL)
		return 0;
	if (strncmp(q, RPC_URL_SERVER_NAME, strlen(RPC_URL_SERVER_NAME)) != 0) {
		snprintf(err, len, "%s: the only query a URL takes is ?server_name=NAME", where);
		return -EINVAL;
	}
	const char *name = q + strlen(RPC_URL_SERVER_NAME);
	if (!tls_name_ok(name)) {
		snprintf(
		    err, len, "%s: bad server_name (letters, digits, '.', '-' and '_')", where);
		return -EINVAL;
	}
	*q = '\0';
	u->server_name[i] = name;
	return 0;
}

int rpc_urls_parse(rpc_urls *out, const char *list, char *err, size_t len)
{
	memset(out, 0, sizeof *out);
	if (list == NULL)
		list = "";
	size_t total = 1;
	for (const char *p = list; *p; p++)
		total += *p == ',';
	if (total > RPC_URLS_MAX) {
		snprintf(err, len, "\"%s\": %zu URLs: at most %d", list, total, RPC_URLS_MAX);
		return -EINVAL;
	}
	out->buf = strdup(list);
	if (out->buf == NULL)
		return -ENOMEM;
	char *s = out->buf;
	for (size_t i = 0; i < total; i++) {
		char *end = strchr(s, ',');
		if (end != NULL)
			*end = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		size_t l = strlen(s);
		while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
			s[--l] = '\0';
		out->url[out->n++] = s;
		s = end != NULL ? end + 1 : s + l;
	}
	char where[RPC_URL_WHERE_MAX];
	for (size_t i = 0; i < out->n; i++) {
		rpc_urls_where(out->url[i], i, out->n, where, sizeof where);
		if (rpc_urls_split_name(out, i, where, err, len) != 0)
			return -EINVAL;
		if (out->url[i][0] == '\0' && out->n > 1) {
			snprintf(err, len, "%s: empty", where);
			return -EINVAL;
		}
		if (!rpc_url_ok(out->url[i])) {
			snprintf(err, len,
			    "%s: expected tls+tcp://HOST:PORT, tcp://HOST:PORT or ipc://PATH",
			    where);
			return -EINVAL;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(out->url[k], out->url[i]) == 0) {
				snprintf(err, len, "%s: the same URL as entry %zu", where, k + 1);
				return -EINVAL;
			}
	}
	return 0;
}

const char *rpc_urls_tls_entry(const rpc_urls *u)
{
	for (size_t i = 0; i < u->n; i++)
		if (tls_url(u->url[i]))
			return u->url[i];
	return NULL;
}

bool rpc_urls_all_tls(const rpc_urls *u)
{
	for (size_t i = 0; i < u->n; i++)
		if (!tls_url(u->url[i]))
			return false;
	return u->n > 0;
}

int rpc_urls_tls(rpc_urls *u, const tls_files *f, char *err, size_t len)
{
	for (size_t i = 0; i < u->n; i++) {
		if (!tls_url(u->url[i]) || u->tls[i] != NULL)
			continue;
		char why[512];
		int rc = u->server_name[i] != NULL
		    ? tls_client_new_name(&u->tls[i], u->server_name[i], f, why, sizeof why)
		    : tls_client_new(&u->tls[i], u->url[i], f, why, sizeof why);
		if (rc != 0) {
			u->tls[i] = NULL;
			if (u->n == 1)
				snprintf(err, len, "%s", why);
			else
				snprintf(err, len, "%s (entry %zu of %zu): %s", u->url[i], i + 1,
				    u->n, why);
			return rc;
		}
	}
	return 0;
}

void rpc_urls_free(rpc_urls *u)
{
	if (u == NULL)
		return;
	for (size_t i = 0; i < RPC_URLS_MAX; i++)
		tls_conf_free(u->tls[i]);
	free(u->buf);
	memset(u, 0, sizeof *u);
}

const char *rpc_urls_text(const rpc_urls *u, char *buf, size_t len)
{
	size_t at = 0;
	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < u->n && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? "," : "", u->url[i]);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	return buf;
}

/* tls: nng TLS configurations from PEM files (tls.h). */
#include "tls.h"

#include <errno.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

/* The largest PEM file read (a certificate chain or a CA bundle). */
#define TLS_FILE_MAX (1 << 20)

struct tls_conf {
	nng_tls_config *cfg;
};

bool tls_url(const char *url)
{
	return strncmp(url, "tls+", 4) == 0 || strncmp(url, "wss", 3) == 0;
}

bool tls_host_local(const char *h)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, h, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return strcmp(h, "localhost") == 0;
}

bool tls_url_local(const char *url)
{
	if (strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0
	    || strncmp(url, "abstract://", 11) == 0)
		return true;
	nng_url *u = NULL;
	if (nng_url_parse(&u, url) != 0)
		return false;
	bool local = tls_host_local(u->u_hostname ? u->u_hostname : "");
	nng_url_free(u);
	return local;
}

bool tls_files_any(const tls_files *f)
{
	return (f->cert && f->cert[0]) || (f->key && f->key[0]) || (f->ca && f->ca[0]);
}

/* tls_read reads the whole file `path` (what names it in errors) into a
 * malloc'd NUL-terminated string. Returns it, or NULL with `err` filled. */
char *tls_read(const char *path, const char *what, char *err, size_t len)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(
		    err, len, "could not read %s file \"%s\": %s", what, path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(TLS_FILE_MAX + 1);
	size_t n = buf ? fread(buf, 1, TLS_FILE_MAX + 1, f) : 0;
	bool bad = ferror(f) != 0;
	fclose(f);
	if (buf == NULL || bad || n > TLS_FILE_MAX || n == 0) {
		snprintf(err, len, "could not read %s file \"%s\": %s", what, path,
		    buf == NULL  ? "out of memory"
		        : n == 0 ? "empty"
		        : bad    ? "read error"
		                 : "larger than 1 MiB");
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* tls_check_pair checks what nng does not: that the key is the
 * certificate's, and that the certificate is valid now (mbedTLS, the
 * library under Debian's nng). Returns 0, or -EINVAL with `err` filled. */
static int tls_check_pair(
    const char *cert, const char *key, const tls_files *f, bool dates, char *err, size_t len)
{
	mbedtls_x509_crt crt;
	mbedtls_pk_context pk;
	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&pk);
	int rc = -EINVAL;
	if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert, strlen(cert) + 1) != 0)
		snprintf(
		    err, len, "could not load certificate \"%s\": not a PEM certificate", f->cert);
	else if (mbedtls_pk_parse_key(&pk, (const unsigned char *)key, strlen(key) + 1, NULL, 0)
	    != 0)
		snprintf(err, len,
		    "could not load key \"%s\": not a PEM private key, or an encrypted one",
		    f->key);
	else if (mbedtls_pk_check_pair(&crt.pk, &pk) != 0)
		snprintf(err, len, "the key \"%s\" is not the key of the certificate \"%s\"",
		    f->key, f->cert);
	else if (dates && mbedtls_x509_time_is_past(&crt.valid_to))
		snprintf(err, len, "the certificate \"%s\" expired on %04d-%02d-%02d", f->cert,
		    crt.valid_to.year, crt.valid_to.mon, crt.valid_to.day);
	else if (dates && mbedtls_x509_time_is_future(&crt.valid_from))
		snprintf(err, len, "the certificate \"%s\" is not valid before %04d-%02d-%02d",
		    f->cert, crt.valid_from.year, crt.valid_from.mon, crt.valid_from.day);
	else
		rc = 0;
	mbedtls_pk_free(&pk);
	mbedtls_x509_crt_free(&crt);
	return rc;
}

/* tls_new makes a configuration of `mode` from `f`; cert and key are
 * optional for a client. */
static int tls_new(tls_conf **out, nng_tls_mode mode, const char *server_name, const tls_files *f,
    char *err, size_t len)
{
	bool have_cert = f->cert && f->cert[0], have_key = f->key && f->key[0];
	if (!f->ca || !f->ca[0]) {
		snprintf(err, len,
		    "a TLS %s needs a CA file (the CA of the other end's certificates)",
		    mode == NNG_TLS_MODE_SERVER ? "listener" : "dialer");
		return -EINVAL;
	}
	if ((mode == NNG_TLS_MODE_SERVER && (!have_cert || !have_key)) || have_cert != have_key) {
		snprintf(err, len,
		    "a TLS %s needs both a certificate file and its key file (--tls-cert and "
		    "--tls-key)",
		    mode == NNG_TLS_MODE_SERVER ? "listener" : "client certificate");
		return -EINVAL;
	}
	char *ca = tls_read(f->ca, "CA", err, len);
	char *cert = ca && have_cert ? tls_read(f->cert, "certificate", err, len) : NULL;
	char *key = cert ? tls_read(f->key, "key", err, len) : NULL;
	int rc = 0;
	tls_conf *c = NULL;
	if (ca == NULL || (have_cert && (cert == NULL || key == NULL))) {
		rc = -EINVAL;
		goto out;
	}
	/* the pair always; the dates only for a server's own certificate (a
	 * client's is the server's to judge, and the tests show it does) */
	if (have_cert
	    && (rc = tls_check_pair(cert, key, f, mode == NNG_TLS_MODE_SERVER, err, len)) != 0)
		goto out;
	c = calloc(1, sizeof *c);
	if (c == NULL || nng_tls_config_alloc(&c->cfg, mode) != 0) {
		snprintf(err, len, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	int rv = nng_tls_config_auth_mode(c->cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	if (rv == 0 && nng_tls_config_version(c->cfg, NNG_TLS_1_2, NNG_TLS_1_3) != 0)
		rv = nng_tls_config_version(c->cfg, NNG_TLS_1_2, NNG_TLS_1_2);
	if (rv != 0) {
		snprintf(err, len, "could not set up TLS: %s", nng_strerror(rv));
		rc = -EINVAL;
		goto out;
	}
	if ((rv = nng_tls_config_ca_chain(c->cfg, ca, NULL)) != 0) {
		snprintf(err, len, "could not load CA file \"%s\": %s (not a PEM certificate?)",
		    f->ca, nng_strerror(rv));
		rc = -EINVAL;
		goto out;
	}
	if (have_cert && (rv = nng_tls_config_own_cert(c->cfg, cert, key, NULL)) != 0) {
		snprintf(err, len,
		    "could not load certificate \"%s\" with key \"%s\": %s (not PEM, an encrypted "
		    "key, or a key that does not match?)",
		    f->cert, f->key, nng_strerror(rv));
		rc = -EINVAL;
		goto out;
	}
	if (server_name && (rv = nng_tls_config_server_name(c->cfg, server_name)) != 0) {
		snprintf(err, len, "could not set the TLS server name: %s", nng_strerror(rv));
		rc = -EINVAL;
		goto out;
	}
out:
	if (key)
		memset(key, 0, strlen(key)); /* no copy of a private key left behind */
	free(key);
	free(cert);
	free(ca);
	if (rc != 0) {
		tls_conf_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int tls_server_new(tls_conf **out, const tls_files *f, char *err, size_t len)
{
	return tls_new(out, NNG_TLS_MODE_SERVER, NULL, f, err, len);
}

int tls_client_new(tls_conf **out, const char *url, const tls_files *f, char *err, size_t len)
{
	nng_url *u = NULL;
	if (nng_url_parse(&u, url) != 0 || u->u_hostname == NULL || u->u_hostname[0] == '\0') {
		snprintf(err, len, "could not take a host name from \"%s\"", url);
		if (u != NULL)
			nng_url_free(u);
		return -EINVAL;
	}
	int rc = tls_new(out, NNG_TLS_MODE_CLIENT, u->u_hostname, f, err, len);
	nng_url_free(u);
	return rc;
}

bool tls_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 253 || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		        || c == '.' || c == '-' || c == '_'))
			return false;
	}
	return true;
}

int tls_client_new_name(tls_conf **out, const char *name, const tls_files *f, char *err, size_t len)
{
	if (!tls_name_ok(name)) {
		snprintf(err, len,
		    "\"%s\" is not a server name (letters, digits, '.', '-' and '_')",
		    name ? name : "");
		return -EINVAL;
	}
	return tls_new(out, NNG_TLS_MODE_CLIENT, name, f, err, len);
}

void tls_conf_free(tls_conf *c)
{
	if (c == NULL)
		return;
	if (c->cfg)
		nng_tls_config_free(c->cfg);
	free(c);
}

void *tls_conf_nng(tls_conf *c)
{
	return c->cfg;
}

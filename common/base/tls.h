/* tls: mutual TLS for the nng links (docs/security.md).
 *
 * Certificates, keys and CAs are PEM files. A server (listener) presents its
 * certificate and requires a client certificate signed by the CA of the
 * listener's role; a client (dialer) presents its certificate and verifies
 * the server's against its CA and the host name of the URL it dials. TLS
 * 1.2 or later. Built on nng's TLS (mbedTLS in Debian's libnng).
 */
#ifndef SAGA_TLS_H
#define SAGA_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* An nng TLS configuration, opaque outside tls.c and the rpc modules. */
typedef struct tls_conf tls_conf;

/* The files of one end of a link; each a path, "" for none. */
typedef struct tls_files {
	const char *cert; /* this end's certificate (PEM, may hold its chain) */
	const char *key;  /* its private key (PEM, unencrypted) */
	const char *ca;   /* the CA (PEM) that signs the other end's certificate */
} tls_files;

/* tls_url is true when `url` uses nng's TLS transport (tls+tcp://,
 * tls+tcp4://, tls+tcp6://, wss://). */
bool tls_url(const char *url);

/* tls_url_local is true when `url` cannot be reached from another host: a
 * tcp:// or ws:// URL whose host is tls_host_local, or an
 * ipc://, inproc:// or abstract:// URL. */
bool tls_url_local(const char *url);

/* tls_host_local is true when `host` (a URL's host name, without brackets
 * or port) is a loopback address written as one (127.0.0.0/8, ::1) or
 * "localhost". A name that merely starts with "127." ("127.evil.example") is
 * not: DNS may send it anywhere. */
bool tls_host_local(const char *host);

/* tls_files_any is true when any of the files is given. */
bool tls_files_any(const tls_files *f);

/* tls_read reads the whole PEM file `path` (at most 1 MiB; `what` names it
 * in errors: "certificate") into a malloc'd NUL-terminated string (the
 * caller frees it). Returns it, or NULL with a one-line reason in `err`. */
char *tls_read(const char *path, const char *what, char *err, size_t len);

/* tls_server_new makes the configuration of a TLS listener from `f`
 * (cert, key and ca all required). `err` (len bytes) receives a one-line
 * reason on failure ("could not read CA file x: ..."). Returns 0 and *out
 * (free with tls_conf_free), or a negative errno (-EINVAL: a file missing,
 * unreadable or not valid PEM, a key that is not the certificate's, a
 * certificate expired or not yet valid; -ENOMEM). */
int tls_server_new(tls_conf **out, const tls_files *f, char *err, size_t len);

/* tls_client_new makes the configuration of a TLS dialer of `url` from `f`:
 * ca required (the server's certificate is verified against it and its name
 * against the URL's host), cert and key given together or not at all (a
 * server of this project refuses a client without one). Returns 0 and *out,
 * or a negative errno as tls_server_new, with `err` filled. */
int tls_client_new(tls_conf **out, const char *url, const tls_files *f, char *err, size_t len);

/* tls_client_new_name is tls_client_new for a server whose certificate must
 * name `name` (a DNS name, tls_name_ok) whatever address is dialed: the
 * handshake fails unless the certificate, verified against f->ca, lists
 * `name` in its subjectAltName (mbedTLS compares DNS entries only). */
int tls_client_new_name(
    tls_conf **out, const char *name, const tls_files *f, char *err, size_t len);

/* tls_name_ok is true when `name` can be a server name to check: 1 to 253
 * bytes of letters, digits, '.', '-' and '_', not starting with '.' or
 * '-'. */
bool tls_name_ok(const char *name);

/* tls_conf_free frees a configuration (nng keeps its own reference while a
 * listener or dialer uses it). NULL is ignored. */
void tls_conf_free(tls_conf *c);

/* tls_conf_nng returns the nng_tls_config * behind `c` (as void *, so that
 * this header needs no nng header). */
void *tls_conf_nng(tls_conf *c);

#endif

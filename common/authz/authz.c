/* authz: the refusal log and counts (authz.h); the table is authz_table.c. */
#include "authz.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"

/* ---- refusals: counted, and logged at most once per peer per interval ---- */

/* The most keys remembered; past it, one line per interval speaks for all
 * the others (a flood from many addresses must not grow memory). */
#define AUTHZ_LOG_KEYS 1024
#define AUTHZ_KEY_MAX  96
/* The most lines of all keys together per AUTHZ_LOG_INTERVAL_MS: a flood
 * from many addresses (a whole network prefix) logs this many, then one
 * line for the rest. */
#define AUTHZ_LOG_BURST 32

typedef struct authz_seen {
	char key[AUTHZ_KEY_MAX]; /* kind + " " + address without the port */
	int64_t logged_ms;       /* clock_mono_ms of the last line */
	uint64_t held;           /* refusals not logged since */
	UT_hash_handle hh;
} authz_seen;

static pthread_mutex_t authz_mu = PTHREAD_MUTEX_INITIALIZER;
static authz_seen *authz_log_table; /* under authz_mu */
static authz_seen authz_overflow;   /* under authz_mu: every key past the cap */
static unsigned authz_nkeys;        /* under authz_mu */
static int64_t authz_burst_ms;      /* under authz_mu: the interval's start */
static unsigned authz_burst;        /* under authz_mu: lines logged in it */
static atomic_uint_fast64_t authz_unauthenticated, authz_denied;

/* authz_key writes `kind` and the address of `peer` without its port. */
static void authz_key(char *key, const char *kind, const char *peer)
{
	snprintf(key, AUTHZ_KEY_MAX, "%s %s", kind, peer ? peer : "?");
	char *colon = strrchr(key, ':');
	char *space = strchr(key, ' ');
	if (colon != NULL && colon > space && strchr(space, '.') != NULL)
		*colon = '\0'; /* "1.2.3.4:5678": IPv4 with a port */
	else if (colon != NULL && colon > space && colon[-1] == ']')
		*colon = '\0'; /* "[::1]:5678" */
}

/* authz_forget_old drops keys not logged for an interval (under authz_mu). */
static void authz_forget_old(int64_t now)
{
	authz_seen *e, *tmp;
	HASH_ITER(hh, authz_log_table, e, tmp)
	{
		if (now - e->logged_ms >= AUTHZ_LOG_INTERVAL_MS && e->held == 0) {
			HASH_DEL(authz_log_table, e);
			free(e);
			authz_nkeys--;
		}
	}
}

void authz_log_limited(const char *kind, const char *peer, const char *what)
{
	char key[AUTHZ_KEY_MAX];
	authz_key(key, kind, peer);
	int64_t now = clock_mono_ms();
	uint64_t held = 0;
	bool log = false;
	pthread_mutex_lock(&authz_mu);
	authz_seen *e = NULL;
	HASH_FIND_STR(authz_log_table, key, e);
	if (e == NULL && authz_nkeys >= AUTHZ_LOG_KEYS)
		authz_forget_old(now);
	if (e == NULL && authz_nkeys < AUTHZ_LOG_KEYS && (e = calloc(1, sizeof *e)) != NULL) {
		memcpy(e->key, key, sizeof e->key);
		e->logged_ms = now - AUTHZ_LOG_INTERVAL_MS;
		HASH_ADD_STR(authz_log_table, key, e);
		authz_nkeys++;
	}
	if (now - authz_burst_ms >= AUTHZ_LOG_INTERVAL_MS) {
		authz_burst_ms = now;
		authz_burst = 0;
	}
	if (e == NULL
	    || (authz_burst >= AUTHZ_LOG_BURST && now - e->logged_ms >= AUTHZ_LOG_INTERVAL_MS))
		e = &authz_overflow; /* full: one line per interval for all the rest */
	if (now - e->logged_ms >= AUTHZ_LOG_INTERVAL_MS) {
		log = true;
		authz_burst++;
		held = e->held;
		e->held = 0;
		e->logged_ms = now;
	} else {
		e->held++;
	}
	pthread_mutex_unlock(&authz_mu);
	if (!log)
		return;
	if (held > 0)
		log_warn(NULL, "%s (peer %s; %llu more like it in the last %d s not logged)", what,
		    peer ? peer : "unknown", (unsigned long long)held,
		    AUTHZ_LOG_INTERVAL_MS / 1000);
	else
		log_warn(NULL, "%s (peer %s)", what, peer ? peer : "unknown");
}

void authz_note_refusal(enum authz_verdict v, const char *method, unsigned roles, const char *peer)
{
	char have[64], need[64], what[320];
	authz_role_names(roles, have, sizeof have);
	authz_role_names(authz_method_roles(method), need, sizeof need);
	if (v == AUTHZ_UNAUTHENTICATED) {
		atomic_fetch_add_explicit(&authz_unauthenticated, 1, memory_order_relaxed);
		authz_count_refusal("unauthenticated", 1);
		snprintf(what, sizeof what, "refused %s: UNAUTHENTICATED (no verified identity)",
		    method);
	} else {
		atomic_fetch_add_explicit(&authz_denied, 1, memory_order_relaxed);
		authz_count_refusal("permission_denied", 1);
		snprintf(what, sizeof what,
		    "refused %s: PERMISSION_DENIED (caller's role %s; allowed: %s)", method, have,
		    need);
	}
	authz_log_limited("refused", peer, what);
}

static const metric_def AUTHZ_REFUSALS = {"sagas_rpc_refusals_total",
    "Calls and connections refused before any handler ran, by reason (docs/security.md)",
    METRIC_COUNTER, "reason", NULL, 0};

void authz_count_refusal(const char *reason, int64_t n)
{
	metric_add(metric_get1(&AUTHZ_REFUSALS, reason), n);
}

void authz_metrics_init(void)
{
	static const char *const reasons[] = AUTHZ_REFUSAL_REASONS;
	for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
		authz_count_refusal(reasons[i], 0);
}

void authz_refused(uint64_t *unauthenticated, uint64_t *denied)
{
	if (unauthenticated)
		*unauthenticated
		    = atomic_load_explicit(&authz_unauthenticated, memory_order_relaxed);
	if (denied)
		*denied = atomic_load_explicit(&authz_denied, memory_order_relaxed);
}

#include "fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "config.h"
#include "log.h"

#define FAULT_LAST FAULT_DUPLICATE_REPLY

#define FAULT_MAX        32
#define FAULT_METHOD_MAX 64

typedef struct fault {
	fault_kind kind;
	char method[FAULT_METHOD_MAX];
	int64_t delay_ms;
	int32_t remaining; /* 0 = unlimited */
} fault;

static nng_mtx *fault_mtx;
static fault fault_table[FAULT_MAX];
static int fault_count;
static atomic_int fault_armed; /* fast path: any fault at all */

static const char *const fault_names[]
    = {"", "delay", "drop_reply", "unavailable", "exit_after_commit", "fail_before_commit",
        "exit_after_send", "drop_request", "duplicate_reply"};

const char *fault_kind_name(fault_kind kind)
{
	if (kind < FAULT_DELAY || kind > FAULT_LAST)
		return "unknown";
	return fault_names[kind];
}

static void fault_lock(void)
{
	/* lazily made: the first arm happens in main before threads start */
	if (fault_mtx == NULL && nng_mtx_alloc(&fault_mtx) != 0)
		abort();
	nng_mtx_lock(fault_mtx);
}

static const char *fault_short(const char *method)
{
	const char *slash = method ? strrchr(method, '/') : NULL;
	return slash ? slash + 1 : method;
}

int fault_arm(fault_kind kind, const char *method, int64_t delay_ms, int32_t count)
{
	if (kind < FAULT_DELAY || kind > FAULT_LAST || delay_ms < 0 || delay_ms > 600000
	    || count < 0 || method == NULL || strlen(method) >= FAULT_METHOD_MAX)
		return -EINVAL;
	fault_lock();
	int rc = -ENOSPC;
	if (fault_count < FAULT_MAX) {
		fault *f = &fault_table[fault_count++];
		f->kind = kind;
		snprintf(f->method, sizeof f->method, "%s", fault_short(method));
		f->delay_ms = delay_ms;
		f->remaining = count;
		atomic_store(&fault_armed, 1);
		rc = 0;
	}
	nng_mtx_unlock(fault_mtx);
	if (rc == 0)
		log_warn(NULL, "fault armed: %s%s%s (count %d, delay %lld ms)",
		    fault_kind_name(kind), *method ? " on " : "", method, count,
		    (long long)delay_ms);
	return rc;
}

void fault_clear(void)
{
	fault_lock();
	fault_count = 0;
	atomic_store(&fault_armed, 0);
	nng_mtx_unlock(fault_mtx);
	log_warn(NULL, "faults cleared");
}

bool fault_any(void)
{
	return atomic_load_explicit(&fault_armed, memory_order_relaxed) != 0;
}

bool fault_check(fault_kind kind, const char *method, int64_t *delay_ms)
{
	if (!atomic_load_explicit(&fault_armed, memory_order_relaxed))
		return false;
	const char *name = fault_short(method);
	bool hit = false;
	int64_t ms = 0;
	fault_lock();
	for (int i = 0; i < fault_count && !hit; i++) {
		fault *f = &fault_table[i];
		if (f->kind != kind)
			continue;
		if (f->method[0] != '\0' && (name == NULL || strcmp(f->method, name) != 0))
			continue;
		hit = true;
		ms = f->delay_ms;
		if (f->remaining > 0 && --f->remaining == 0) {
			/* used up: remove it, keep the order of the others */
			memmove(f, f + 1, (size_t)(fault_count - i - 1) * sizeof *f);
			fault_count--;
		}
	}
	if (fault_count == 0)
		atomic_store(&fault_armed, 0);
	nng_mtx_unlock(fault_mtx);
	if (hit) {
		log_warn(
		    NULL, "fault injected: %s on %s", fault_kind_name(kind), name ? name : "*");
		if (delay_ms)
			*delay_ms = ms;
	}
	return hit;
}

void fault_exit_if(fault_kind kind, const char *method)
{
	if (fault_check(kind, method, NULL))
		_exit(FAULT_EXIT_CODE);
}

int fault_parse(const char *spec)
{
	char buf[1024];
	if (strlen(spec) >= sizeof buf) {
		config_error("invalid value for fault: longer than %zu bytes\n", sizeof buf - 1);
		return -EINVAL;
	}
	strcpy(buf, spec);
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *isave = NULL;
		char *kind_s = strtok_r(item, ":", &isave);
		fault_kind kind = 0;
		for (int k = FAULT_DELAY; k <= FAULT_LAST; k++)
			if (kind_s && strcmp(kind_s, fault_names[k]) == 0)
				kind = (fault_kind)k;
		if (kind == 0) {
			char kinds[256] = "";
			for (int k = FAULT_DELAY; k <= FAULT_LAST; k++) {
				size_t used = strlen(kinds);
				snprintf(kinds + used, sizeof kinds - used, "%s%s",
				    k == FAULT_DELAY ? "" : ", ", fault_names[k]);
			}
			config_error("invalid value for fault: unknown kind \"%s\" (%s)\n",
			    kind_s ? kind_s : "", kinds);
			return -EINVAL;
		}
		const char *method = "";
		long long ms = 0, count = 0;
		for (char *part = strtok_r(NULL, ":", &isave); part;
		     part = strtok_r(NULL, ":", &isave)) {
			char *end = NULL;
			if (!strncmp(part, "ms=", 3)) {
				ms = strtoll(part + 3, &end, 10);
			} else if (!strncmp(part, "count=", 6)) {
				count = strtoll(part + 6, &end, 10);
			} else {
				method = part;
				continue;
			}
			if (end == NULL || *end != '\0' || end == part) {
				config_error(
				    "invalid value for fault: bad number in \"%s\"\n", part);
				return -EINVAL;
			}
		}
		if (ms < 0 || ms > 600000 || count < 0 || count > 1000000000
		    || fault_arm(kind, method, ms, (int32_t)count) != 0) {
			config_error("invalid value for fault: \"%s\" out of range\n", kind_s);
			return -EINVAL;
		}
	}
	return 0;
}

/* sagactl watch: follows the history feed (WatchHistory; docs/protocol.md,
 * "The history feed"), a page at a time, printing every transition once,
 * and keeps its place in a cursor file so that a follower restarted from
 * it misses nothing and repeats nothing it saved. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "methods.h"
#include "sagactl.h"

/* the feed's cursors (orchestrator/core/feed_cursor.h FEED_CURSOR_MAX) */
#define CTL_CURSOR_MAX 24000

static volatile sig_atomic_t ctl_watch_stop;

static void ctl_watch_on_signal(int sig)
{
	(void)sig;
	ctl_watch_stop = 1;
}

/* ctl_cursor_ok is true when `s` looks like a cursor: 1 or more
 * base64url characters (the orchestrator checks the rest). */
static bool ctl_cursor_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0
	    && strspn(s,
	           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	           "0123456789-_")
	    == n;
}

/* ctl_cursor_read reads the cursor saved in `path` into buf (len bytes):
 * 0 with "" when the file does not exist, 0 with the cursor, or an exit
 * code after printing the error. A file that exists holds one cursor and
 * its newline: an empty, overlong or garbled one is an error, not a start
 * from now (which would skip what happened since it was saved). */
static int ctl_cursor_read(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return errno == ENOENT
		    ? 0
		    : ctl_error("could not read --cursor-file %s: %s", path, strerror(errno));
	size_t n = fread(buf, 1, len - 1, f);
	bool overlong = n == len - 1 && fgetc(f) != EOF;
	fclose(f);
	buf[n] = '\0';
	bool nul = memchr(buf, '\0', n) != NULL;
	size_t end = strcspn(buf, "\r\n");
	bool tail = buf[end] != '\0' && buf[end + strspn(buf + end, "\r\n")] != '\0';
	buf[end] = '\0';
	if (overlong || tail || nul || !ctl_cursor_ok(buf)) {
		buf[0] = '\0';
		return ctl_error("--cursor-file %s does not hold a cursor of sagactl watch (remove "
		                 "it to start again, from now or with --from-start)",
		    path);
	}
	return 0;
}

/* ctl_cursor_save writes `cursor` to `path` through a new temporary file
 * of its directory (mkstemp: never one that is there already, such as a
 * symbolic link another user left) and a rename, so the file holds one
 * whole cursor whenever the process stops. Returns 0 or an exit code after
 * printing the error. */
static int ctl_cursor_save(const char *path, const char *cursor)
{
	char tmp[CONFIG_STR_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		int e = errno;
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return ctl_error("could not save the cursor in %s: %s", path, strerror(e));
	}
	bool ok = fprintf(f, "%s\n", cursor) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
	int e = errno;
	if (fclose(f) != 0 && ok)
		ok = false, e = errno;
	if (ok && rename(tmp, path) != 0)
		ok = false, e = errno;
	if (!ok) {
		unlink(tmp);
		return ctl_error("could not save the cursor in %s: %s", path, strerror(e));
	}
	return 0;
}

/* ctl_watch_print prints the entries of one reply: a table row or a JSON
 * line each, and flushes them. Returns 0, or -EIO when an entry could not
 * be made into JSON or written (stdout closed, a full disk): the caller
 * then keeps its cursor, so the page comes again at the next start. */
static int ctl_watch_print(const ctl_ctx *c, const Sagas__V1__WatchHistoryReply *rep)
{
	for (size_t i = 0; i < rep->n_entries; i++) {
		const Sagas__V1__FeedEntry *f = rep->entries[i];
		const Sagas__V1__HistoryEntry *e = f->entry;
		if (e == NULL)
			continue;
		char at[32];
		const char *from = ctl_hist_state(e, true);
		const char *to = ctl_hist_state(e, false);
		if (c->o.json) {
			json_t *j = json_pack("{s:s, s:I, s:I, s:s, s:s?, s:s, s:s, s:s}",
			    "saga_id", f->saga_id, "version", (json_int_t)e->version, "at_unix_ms",
			    (json_int_t)e->at_unix_ms, "at",
			    ctl_iso_ms(e->at_unix_ms, at, sizeof at), "from_state", from,
			    "to_state", to, "event", e->event, "reason", e->reason);
			char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
			int w = s ? printf("%s\n", s) : -1;
			free(s);
			json_decref(j);
			if (w < 0)
				return -EIO;
		} else {
			printf("%s  %s  %3" PRId64 "  %s -> %s  %s%s%s\n",
			    ctl_iso_ms(e->at_unix_ms, at, sizeof at), ctl_esc(f->saga_id),
			    (int64_t)e->version, from ? from : "-", to, ctl_esc(e->event),
			    e->reason[0] ? "  " : "", ctl_esc(e->reason));
		}
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
}

/* ctl_watch_page asks for one page after `cursor` (updated to the reply's)
 * and prints it. *got is the count of entries, *more whether more are
 * ready. Returns 0 or an exit code. */
static int ctl_watch_page(ctl_ctx *c, char *cursor, bool from_now, size_t *got, bool *more)
{
	Sagas__V1__WatchHistoryRequest req = SAGAS__V1__WATCH_HISTORY_REQUEST__INIT;
	req.after = cursor;
	req.limit = (int32_t)c->o.limit;
	req.from_now = from_now && cursor[0] == '\0';
	rpc_result res;
	int rc = ctl_call(c, CTL_SVC_ORCHESTRATOR, METHOD_PATH(METHOD_Orchestrator_WatchHistory),
	    &req.base, "watch the history", c->o.timeout_ms, false, &res);
	if (rc != 0)
		return rc;
	Sagas__V1__WatchHistoryReply *rep
	    = sagas__v1__watch_history_reply__unpack(NULL, res.payload_len, res.payload);
	rpc_result_clear(&res);
	if (rep == NULL || rep->cursor == NULL || !ctl_cursor_ok(rep->cursor)
	    || strlen(rep->cursor) >= CTL_CURSOR_MAX) {
		if (rep)
			sagas__v1__watch_history_reply__free_unpacked(rep, NULL);
		return ctl_bad_reply(c, CTL_SVC_ORCHESTRATOR, "WatchHistory");
	}
	if (ctl_watch_print(c, rep) != 0) {
		sagas__v1__watch_history_reply__free_unpacked(rep, NULL);
		return ctl_error("watch: could not write the history rows to stdout; the "
		                 "cursor stays before them");
	}
	snprintf(cursor, CTL_CURSOR_MAX, "%s", rep->cursor);
	*got = rep->n_entries;
	*more = rep->more;
	sagas__v1__watch_history_reply__free_unpacked(rep, NULL);
	return 0;
}

/* ctl_sleep_ms sleeps `ms` unless a stop signal comes. */
static void ctl_sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (!ctl_watch_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int ctl_watch(ctl_ctx *c, char **args)
{
	(void)args;
	char *cursor = calloc(1, CTL_CURSOR_MAX);
	if (cursor == NULL)
		return ctl_error("out of memory");
	const char *file = c->o.cursor_file;
	int rc = file[0] ? ctl_cursor_read(file, cursor, CTL_CURSOR_MAX) : 0;
	if (rc == 0 && cursor[0] == '\0' && c->o.after[0])
		snprintf(cursor, CTL_CURSOR_MAX, "%s", c->o.after);
	struct sigaction sa = {.sa_handler = ctl_watch_on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a reply is printed and its cursor saved before the next page: a stop
	 * between the two repeats that page at the next start (at least once);
	 * a stop by signal waits for both */
	while (rc == 0 && !ctl_watch_stop) {
		size_t got = 0;
		bool more = false;
		rc = ctl_watch_page(c, cursor, !c->o.from_start, &got, &more);
		if (rc != 0 && c->o.follow && (c->transient || c->refused || c->unreached)
		    && ctl_watch_stop) {
			/* stopped (SIGINT, SIGTERM) while a call that failed as
			 * --follow outlives was in flight: a clean stop, the
			 * cursor unchanged (it exited 1 when the stop came during
			 * a call that then timed out) */
			rc = 0;
			break;
		}
		if (rc != 0 && c->o.follow && (c->transient || c->refused || c->unreached)
		    && !ctl_watch_stop) {
			/* --follow outlives an orchestrator that does not answer (a
			 * restart, a failover; a connection refused, or reset
			 * while it was set up): the cursor is unchanged, so
			 * nothing is missed; a refusal still ends the watch */
			int64_t wait = c->o.poll_ms > 1000 ? c->o.poll_ms : 1000;
			fprintf(stderr,
			    "sagactl: note: still following: trying again in %" PRId64 " ms\n",
			    wait);
			ctl_sleep_ms(wait);
			rc = 0;
			continue;
		}
		if (rc == 0 && file[0])
			rc = ctl_cursor_save(file, cursor);
		if (rc != 0 || more)
			continue;
		if (!c->o.follow)
			break; /* caught up */
		ctl_sleep_ms(c->o.poll_ms);
	}
	if (rc == 0 && !file[0])
		fprintf(stderr, "cursor: %s\n", ctl_esc(cursor));
	free(cursor);
	return rc;
}

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_prog = "sagas";
static enum log_level log_min = LOG_LEVEL_INFO;

void log_init(const char *prog, enum log_level min_level)
{
	log_prog = prog;
	log_min = min_level;
}

int log_level_parse(const char *text, enum log_level *out)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++) {
		if (strcmp(text, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* This thread's held lines (log_hold): at most PIPE_BUF bytes, so that one
 * write(2) of them is never interleaved with another thread's lines, even
 * on a pipe. */
static __thread struct {
	int depth;
	size_t len;
	char buf[4096];
} log_held;

static void log_write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* stderr gone: nothing better to do with the line */
		p += w;
		n -= (size_t)w;
	}
}

static void log_flush_held(void)
{
	log_write_all(log_held.buf, log_held.len);
	log_held.len = 0;
}

void log_hold(void)
{
	log_held.depth++;
}

void log_release(void)
{
	if (log_held.depth > 0 && --log_held.depth == 0)
		log_flush_held();
}

void log_msg(enum log_level level, const char *saga_id, const char *fmt, ...)
{
	static const char *tags[] = {"DEBUG", "LOG", "WARNING", "ERROR"};
	if (level < log_min)
		return;
	int saved = errno; /* callers may log between a call and its errno check */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	/* one entry, one line: libpq's messages end in (and hold) newlines */
	size_t tl = strlen(text);
	while (tl > 0 && (text[tl - 1] == '\n' || text[tl - 1] == '\r' || text[tl - 1] == ' '))
		text[--tl] = '\0';
	for (char *c = text; *c; c++)
		if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	char line[1280];
	int n = snprintf(line, sizeof line, "%s.%03ldZ %s %s: %s%s%s%s\n", when,
	    ts.tv_nsec / 1000000L, log_prog, tags[level], saga_id ? "saga=" : "",
	    saga_id ? saga_id : "", saga_id ? " " : "", text);
	if (n < 0) {
		errno = saved;
		return;
	}
	size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	if (len == sizeof line - 1)
		line[len - 1] = '\n'; /* cut short: still one line */
	if (log_held.depth > 0) {
		if (log_held.len + len > sizeof log_held.buf)
			log_flush_held();
		memcpy(log_held.buf + log_held.len, line, len);
		log_held.len += len;
		if (level >= LOG_LEVEL_WARN)
			log_flush_held(); /* warnings never wait (a fault may _exit next) */
	} else {
		log_write_all(line, len);
	}
	errno = saved;
}

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

void log_msg(enum log_level level, const char *saga_id, const char *fmt, ...)
{
	static const char *tags[] = {"DEBUG", "LOG", "WARNING", "ERROR"};
	if (level < log_min)
		return;
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
	fprintf(stderr, "%s.%03ldZ %s %s: %s%s%s%s\n", when, ts.tv_nsec / 1000000L, log_prog,
	    tags[level], saga_id ? "saga=" : "", saga_id ? saga_id : "", saga_id ? " " : "", text);
}

/* log: leveled logging to stderr, PostgreSQL message style.
 *
 * Lines look like `2026-11-30T19:40:00.123Z orchestrator LOG: saga=<id> ...`.
 * Messages are lowercase with no full stop ("could not reserve stock: %s").
 * Thread-safe: each line goes out in one write(2) to stderr, or, between
 * log_hold and log_release, with the thread's other held lines.
 */
#ifndef SAGA_LOG_H
#define SAGA_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO = 1,
	LOG_LEVEL_WARN = 2,
	LOG_LEVEL_ERROR = 3,
};

/* log_init sets the program name shown on each line (borrowed, must outlive
 * logging) and the lowest level printed. Call once before threads start. */
void log_init(const char *prog, enum log_level min_level);

/* log_level_parse maps "debug", "info", "warn", "error" to a level.
 * Returns 0 and sets *out, or -EINVAL for any other text. */
int log_level_parse(const char *text, enum log_level *out);

/* log_msg prints one line at `level`. `saga_id` (may be NULL) is shown as a
 * `saga=<id> ` prefix so every line about one saga can be grepped. */
void log_msg(enum log_level level, const char *saga_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* log_hold makes this thread's next lines wait in a 4 KiB buffer until
 * log_release, which writes them with one write(2) (a full buffer is
 * written early). For loops that log a line per saga of a batch right after
 * its commit (engine, API): one system call instead of one per line. A
 * warning or an error is written at once, with the lines held before it. A
 * held line keeps the time it was logged at, so lines of two threads can
 * come out a few ms out of time order (never one thread's). Calls nest; every log_hold needs its
 * log_release on the same thread, before the thread blocks for long, so that lines are never held
 * back. */
void log_hold(void);
void log_release(void);

#define log_debug(saga, ...) log_msg(LOG_LEVEL_DEBUG, (saga), __VA_ARGS__)
#define log_info(saga, ...)  log_msg(LOG_LEVEL_INFO, (saga), __VA_ARGS__)
#define log_warn(saga, ...)  log_msg(LOG_LEVEL_WARN, (saga), __VA_ARGS__)
#define log_error(saga, ...) log_msg(LOG_LEVEL_ERROR, (saga), __VA_ARGS__)

#endif

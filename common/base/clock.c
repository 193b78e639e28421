#include "clock.h"

#include <errno.h>
#include <time.h>

static int64_t clock_read_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_ms(void)
{
	return clock_read_ms(CLOCK_MONOTONIC);
}

int64_t clock_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_wall_ms(void)
{
	return clock_read_ms(CLOCK_REALTIME);
}

int64_t clock_remaining_ms(int64_t deadline_ms)
{
	int64_t left = deadline_ms - clock_wall_ms();
	return left > 0 ? left : 0;
}

void clock_sleep_us(int64_t us)
{
	if (us <= 0)
		return;
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

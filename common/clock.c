#include "clock.h"

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

int64_t clock_wall_ms(void)
{
	return clock_read_ms(CLOCK_REALTIME);
}

int64_t clock_remaining_ms(int64_t deadline_ms)
{
	int64_t left = deadline_ms - clock_wall_ms();
	return left > 0 ? left : 0;
}

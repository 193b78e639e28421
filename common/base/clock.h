/* clock: monotonic and wall time in milliseconds, and deadlines. */
#ifndef SAGA_CLOCK_H
#define SAGA_CLOCK_H

#include <stdint.h>

/* clock_mono_ms returns CLOCK_MONOTONIC in ms: for measuring intervals. */
int64_t clock_mono_ms(void);

/* clock_mono_us is clock_mono_ms in microseconds (durations of a commit). */
int64_t clock_mono_us(void);

/* clock_wall_ms returns CLOCK_REALTIME in ms since the Unix epoch: for
 * deadlines stored in databases and sent in envelopes. */
int64_t clock_wall_ms(void);

/* clock_remaining_ms returns how many ms are left until the absolute wall
 * deadline `deadline_ms` (ms since epoch), 0 if it has passed. */
int64_t clock_remaining_ms(int64_t deadline_ms);

/* clock_sleep_us sleeps `us` microseconds (<= 0: returns at once), the whole
 * time even when a signal interrupts it. nng's sleeps count whole ms. */
void clock_sleep_us(int64_t us);

#endif

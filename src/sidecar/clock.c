/*
 * clock.c - the sidecar's clocks: wall clock ms (what the state stores:
 * digests are timed out from their first read across restarts) and a
 * monotonic clock for rates and intervals.
 */
#include <time.h>

#include "sidecar_internal.h"

int64_t cf_sc_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cf_sc_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

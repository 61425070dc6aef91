/* A stand-in for librdkafka's internal rdtime.h: a monotonic clock in microseconds. */
#ifndef WIREKAFKA_RDTIME_H
#define WIREKAFKA_RDTIME_H

#include "rd.h"

static inline rd_ts_t rd_clock(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (rd_ts_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif

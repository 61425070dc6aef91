/* A stand-in for librdkafka's internal rd.h: the little of it that the
 * example programs Debian's librdkafka-dev ships (rdkafka_performance.c) use,
 * so they build against the installed library alone. */
#ifndef WIREKAFKA_RD_H
#define WIREKAFKA_RD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strndup(), as the examples expect */
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int64_t rd_ts_t; /* microseconds */

#define rd_snprintf snprintf
#define RD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RD_MIN(a, b) ((a) < (b) ? (a) : (b))

#endif

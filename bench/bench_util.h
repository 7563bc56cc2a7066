/*
 * bench_util.h - what the benchmark programs of bench/ share: the clock
 * their timings read, and the median of a set of times.
 */
#ifndef CONVOLVE_BENCH_UTIL_H
#define CONVOLVE_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock, from an arbitrary start. */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same in milliseconds. */
static inline double bench_now_ms(void)
{
    return bench_now_s() * 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1; for even n the mean of the middle two);
 * sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif

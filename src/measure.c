/*
 * measure.c - convolve_plan_benchmark (the median of timed runs on resident
 * data, through the plan's backend: host memory for CPU plans, device
 * memory and CUDA events for CUDA plans) and the device copy bandwidth that
 * benchmarks are compared with.
 */
#include "backend.h"
#include "internal.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cvi_summarise_times(double *times, int runs, convolve_timing *t)
{
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    t->runs = runs;
    t->min_ms = times[0];
    t->max_ms = times[runs - 1];
    t->median_ms = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
}

convolve_status convolve_plan_benchmark(convolve_plan *plan, int warmup, int runs,
                                        convolve_timing *timing)
{
    if (!plan)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (!timing)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_plan_benchmark: timing is NULL");
    if (runs < 1 || warmup < 0)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "benchmark needs runs >= 1 and warmup >= 0 (got %d and %d)", runs, warmup);
    double *times = malloc((size_t)runs * sizeof *times);
    if (!times)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
    convolve_status st = plan->backend->benchmark(plan->ctx, plan->state, warmup, runs, times);
    if (st == CONVOLVE_OK) {
        cvi_summarise_times(times, runs, timing);
        cvi_ok(plan->ctx);
    }
    free(times);
    return st;
}

convolve_status convolve_device_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs,
                                               double *gb_per_s)
{
    if (!ctx || !gb_per_s || bytes == 0 || runs < 1)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_device_copy_bandwidth: bad argument");
    if (!cvi_cuda_usable(ctx))
        return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "no usable GPU: %s",
                         ctx->cuda.info.reason);
    convolve_status st = cvcu_backend.copy_bandwidth(ctx, bytes, runs, gb_per_s);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

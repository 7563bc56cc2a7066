/*
 * measure.c - convolve_plan_benchmark (median of timed runs on resident data:
 * host memory for CPU plans, device memory and CUDA events for CUDA plans)
 * and the device copy bandwidth that benchmarks are compared with.
 */
#include "internal.h"
#include "layout.h"
#include "cpu/cpu_backend.h"
#include "cuda/backend.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Fills n bytes with pseudo-random values that are finite in every dtype:
 * a float32/64 array gets values in [-1, 1), integer arrays random bits. */
static void fill_random(convolve_dtype t, void *data, size_t bytes)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    size_t esize = convolve_dtype_size(t), n = bytes / esize;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        char *p = (char *)data + i * esize;
        switch (t) {
        case CONVOLVE_FLOAT32: *(float *)p = (float)u; break;
        case CONVOLVE_FLOAT64: *(double *)p = u; break;
        case CONVOLVE_UINT8: *(uint8_t *)p = (uint8_t)(s >> 56); break;
        default: *(uint16_t *)p = (uint16_t)(s >> 48); break;
        }
    }
}

static convolve_status benchmark_cpu(convolve_plan *plan, int warmup, int runs, double *times)
{
    convolve_context *ctx = plan->ctx;
    ptrdiff_t ilo, ihi, olo, ohi;
    cvi_layout_span(&plan->in, &ilo, &ihi);
    cvi_layout_span(&plan->out, &olo, &ohi);
    char *in = malloc((size_t)(ihi - ilo)), *out = malloc((size_t)(ohi - olo));
    convolve_status st = CONVOLVE_OK;
    if (!in || !out) {
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for benchmark arrays");
        goto done;
    }
    fill_random(plan->in.dtype, in, (size_t)(ihi - ilo));
    memset(out, 0, (size_t)(ohi - olo));
    for (int i = 0; i < warmup + runs && st == CONVOLVE_OK; i++) {
        double t0 = now_ms();
        st = cvi_cpu_execute(ctx, plan->strategy, &plan->problem, in - ilo, out - olo);
        if (i >= warmup)
            times[i - warmup] = now_ms() - t0;
    }
done:
    free(in);
    free(out);
    return st;
}

convolve_status convolve_plan_benchmark(convolve_plan *plan, int warmup, int runs,
                                        convolve_timing *timing)
{
    if (!plan || !timing)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (runs < 1 || warmup < 0)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "benchmark needs runs >= 1 and warmup >= 0 (got %d and %d)", runs, warmup);
    double *times = malloc((size_t)runs * sizeof *times);
    if (!times)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
    convolve_status st =
        plan->strategy->backend == CONVOLVE_BACKEND_CUDA
            ? cvcu_benchmark(plan->ctx, plan->backend_state, warmup, runs, times)
            : benchmark_cpu(plan, warmup, runs, times);
    if (st == CONVOLVE_OK) {
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        timing->runs = runs;
        timing->min_ms = times[0];
        timing->max_ms = times[runs - 1];
        timing->median_ms = runs % 2 ? times[runs / 2]
                                     : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
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
                         ctx->device.reason);
    convolve_status st = cvcu_copy_bandwidth(ctx, bytes, runs, gb_per_s);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

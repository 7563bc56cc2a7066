/*
 * unavailable.c - the CUDA backend's entry points for a build without CUDA:
 * no strategies, no device, and every call reports BACKEND_UNAVAILABLE.
 */
#include "backend.h"

#include <stdio.h>
#include <string.h>

const cvi_strategy *cvcu_strategies(size_t *count)
{
    *count = 0;
    return NULL;
}

void cvcu_probe(convolve_device_info *info, size_t *shared_memory_per_block)
{
    memset(info, 0, sizeof *info);
    snprintf(info->reason, sizeof info->reason, "libconvolve was built without CUDA");
    *shared_memory_per_block = 0;
}

const cvi_strategy *cvcu_pick(const convolve_context *ctx, const cvi_problem *p, char *why,
                              size_t why_size)
{
    (void)ctx;
    (void)p;
    snprintf(why, why_size, "libconvolve was built without CUDA");
    return NULL;
}

convolve_status cvcu_prepare(convolve_context *ctx, const cvi_strategy *s,
                             const cvi_problem *p, void **state)
{
    (void)s;
    (void)p;
    *state = NULL;
    return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "libconvolve was built without CUDA");
}

convolve_status cvcu_execute_device(convolve_context *ctx, void *state, const void *in,
                                    void *out, void *stream)
{
    (void)state, (void)in, (void)out, (void)stream;
    return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "libconvolve was built without CUDA");
}

convolve_status cvcu_execute_host(convolve_context *ctx, void *state, const void *in,
                                  void *out)
{
    (void)state, (void)in, (void)out;
    return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "libconvolve was built without CUDA");
}

void cvcu_release(void *state)
{
    (void)state;
}

convolve_status cvcu_benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                               double *times_ms)
{
    (void)state, (void)warmup, (void)runs, (void)times_ms;
    return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "libconvolve was built without CUDA");
}

convolve_status cvcu_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs,
                                    double *gb_per_s)
{
    (void)bytes, (void)runs, (void)gb_per_s;
    return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "libconvolve was built without CUDA");
}

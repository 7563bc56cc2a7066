/*
 * backend.h - what the core asks of the CUDA backend, in plain C. Implemented
 * by the sources of src/cuda/ when CUDA is built, and by
 * src/cuda/unavailable.c (every call reports BACKEND_UNAVAILABLE) otherwise.
 */
#ifndef CONVOLVE_CUDA_BACKEND_H
#define CONVOLVE_CUDA_BACKEND_H

#include "../internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA strategies; *count receives their number (0 without CUDA). */
const cvi_strategy *cvcu_strategies(size_t *count);

/* Fills *info (available = 0 with a reason when no device can be used) and
 * the opt-in shared-memory limit per block. Never fails. */
void cvcu_probe(convolve_device_info *info, size_t *shared_memory_per_block);

/* The strategy "auto" picks on the GPU for p; NULL if none can serve it
 * (why says what limits were hit). */
const cvi_strategy *cvcu_pick(const convolve_context *ctx, const cvi_problem *p, char *why,
                              size_t why_size);

/* Makes the device-side plan for strategy s and problem p (weights uploaded).
 * p's strides describe the caller's arrays; *state owns copies of all it needs. */
convolve_status cvcu_prepare(convolve_context *ctx, const cvi_strategy *s,
                             const cvi_problem *p, void **state);

/* Runs on device memory laid out as the problem says, on a cudaStream_t. */
convolve_status cvcu_execute_device(convolve_context *ctx, void *state, const void *in,
                                    void *out, void *stream);

/* Runs on host memory: copies in (packed and pitched), computes, copies out,
 * and returns when out is written. */
convolve_status cvcu_execute_host(convolve_context *ctx, void *state, const void *in,
                                  void *out);

/* Frees a state from cvcu_prepare; NULL is accepted. */
void cvcu_release(void *state);

/* Times `runs` executions on device buffers of random data after `warmup`,
 * with CUDA events; times_ms[0..runs-1] receives each. */
convolve_status cvcu_benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                               double *times_ms);

/* Device-to-device copy bandwidth (bytes read + written per second, in GB/s). */
convolve_status cvcu_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs,
                                    double *gb_per_s);

#ifdef __cplusplus
}
#endif

#endif

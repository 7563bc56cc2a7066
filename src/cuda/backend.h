/*
 * backend.h - the functions behind the CUDA backend's table (cvcu_backend,
 * src/backend.h; the table itself is in backend.c), in plain C:
 * strategies.c has the strategies and the pick, plan.c makes and frees
 * plans, runtime.c probes the device and runs and times plans. A build
 * without CUDA has none of these, only the empty table of unavailable.c.
 */
#ifndef CONVOLVE_CUDA_BACKEND_H
#define CONVOLVE_CUDA_BACKEND_H

#include "../backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The strategy table: CVK_STRATEGY_COUNT entries, indexed by id. */
extern const cvi_strategy cvcu_strategies[];

/* The entries of cvi_backend (src/backend.h), as documented there. */
void cvcu_probe(cvi_device *dev);
const cvi_strategy *cvcu_pick(const cvi_device *dev, const cvi_problem *p, char *why,
                              size_t why_size);
convolve_status cvcu_prepare(convolve_context *ctx, const cvi_device *dev, const cvi_strategy *s,
                             const cvi_problem *p, void **state);
convolve_status cvcu_execute_host(convolve_context *ctx, void *state, const void *in, void *out);
convolve_status cvcu_execute_device(convolve_context *ctx, void *state, const void *in, void *out,
                                    void *stream);
convolve_status cvcu_benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                               double *times_ms);
void cvcu_release(void *state);
/* cvi_backend.window_cost: streamed slabs of an FFT plan start on its
 * groups of tiles (cvk_fft_slab_align); other strategies anywhere. */
void cvcu_window_cost(void *state, size_t *align, size_t *extra);
void cvcu_device_key(const cvi_device *dev, const cvi_problem *p, char *key, size_t size);

/* The estimate of backend.h's estimate_ms for the GPU (strategies.c). */
double cvcu_estimate_ms(const cvi_problem *p, int started);
convolve_status cvcu_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs,
                                    double *gb_per_s);
int cvcu_device_count(void);
void cvcu_probe_index(int index, cvi_device *dev);
convolve_status cvcu_memory_info(convolve_context *ctx, int index, size_t *free_bytes,
                                 size_t *total_bytes);
convolve_status cvcu_execute_host_streamed(convolve_context *ctx, cvi_stream_job *job);
/* The streamed executor's idle pipelines the process holds and how many
 * pipelines it has made (for tests). */
void cvcu_stream_pipes_stats(int *idle, unsigned long *made);
/* How many slot device buffers the streamed executor has allocated (for
 * tests). */
unsigned long cvcu_stream_buffers_made(void);
/* Frees the idle pipelines (streams, events, device buffers) the process
 * keeps for `device`, when an allocation there found no room; returns how
 * many. */
int cvcu_stream_release_idle(int device);
convolve_status cvcu_host_register(convolve_context *ctx, void *ptr, size_t bytes);
convolve_status cvcu_host_unregister(convolve_context *ctx, void *ptr);
convolve_status cvcu_host_alloc(convolve_context *ctx, size_t bytes, int pooled_only, void **ptr);

#ifdef __cplusplus
}
#endif

#endif

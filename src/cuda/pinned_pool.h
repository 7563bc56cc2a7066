/*
 * pinned_pool.h - the process's pool of pinned host buffers (the streamed
 * executor's staging, src/cuda/stream.c): taken for an execution, given
 * back after it, kept for the next execution of any plan: pinning is slow
 * (docs/architecture.md, "Measured choices"), and a plan's
 * first execution paid it for its own buffers before the pool.
 */
#ifndef CONVOLVE_CUDA_PINNED_POOL_H
#define CONVOLVE_CUDA_PINNED_POOL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

/* *ptr = a pinned buffer of at least `bytes` bytes (bytes > 0), *size its
 * size: the smallest free one of the pool that holds it (or one being
 * pinned by cvcu_pinned_prime's thread that will, waited for), else a new
 * one of cvcu_pinned_class of the larger of bytes and
 * cvi_stream_staging_bytes() (mapped, faulted in by several threads and
 * registered; cudaMallocHost where registering is not supported).
 * Thread-safe. Errors:
 * cudaErrorMemoryAllocation, or those of cudaHostRegister or cudaMallocHost
 * (*ptr is then NULL). */
cudaError_t cvcu_pinned_take(size_t bytes, void **ptr, size_t *size);

/* Queues `count` buffers of cvcu_pinned_class(bytes) to be pinned into
 * the pool by a background thread, the first time it is called in the
 * process (later calls do nothing), unless they would pass the pool's
 * limit: the first streamed execution then finds its staging pinned, or
 * waits only for what is left of it (cvcu_pinned_take). Thread-safe. */
void cvcu_pinned_prime(size_t bytes, int count);

/* Waits until the background thread of cvcu_pinned_prime has pinned what is
 * queued (tests; the library's unload). */
void cvcu_pinned_settle(void);

/* The size of a new buffer for `bytes`: the whole 2 MiB (huge pages) of
 * bytes, plus what is left rounded up to a power of two from 64 KiB to
 * 2 MiB: at most twice that tail, never more than the pool's old rule of
 * whole 2 MiB (faulting in and pinning cost about 0.3 ms a MiB on the H100
 * host). Six classes a 2 MiB step: sizes a little apart share one, and
 * best fit lets a smaller request take a larger class; a request just past
 * a class takes the next (a 2048^2 float32 slab's 4.125 MiB of staging, 16
 * halo rows, is its own class; a 2000^2 one's 3.94 MiB takes 4 MiB, and the
 * first fits the second, not the reverse). Sizes past SIZE_MAX - 2 MiB are
 * returned as they are. */
size_t cvcu_pinned_class(size_t bytes);

/* Gives back a buffer from cvcu_pinned_take (no copy may still use it;
 * NULL is ignored): the pool keeps it for the next take. */
void cvcu_pinned_give(void *ptr, size_t size);

/* Frees the buffers given back longest ago while the free ones pass the
 * larger of `keep` (an execution's own staging, given back last: kept for
 * its next run) and the pool's limit (CONVOLVE_PINNED_POOL_MIB, default an
 * eighth of the host's memory). Thread-safe. */
void cvcu_pinned_trim(size_t keep);

/* convolve_host_alloc's memory: *ptr = a pinned buffer of at least `bytes`
 * (bytes > 0) for the caller, held until cvcu_pinned_free: a free buffer
 * of the pool that holds it and is at most twice its size class, else (not
 * pooled_only) a new one; pooled_only and none free: *ptr = NULL and
 * cudaSuccess. Thread-safe. Errors: those of cvcu_pinned_take, and
 * cudaErrorMemoryAllocation when the list of handed buffers cannot grow. */
cudaError_t cvcu_pinned_alloc(size_t bytes, int pooled_only, void **ptr);

/* Gives back memory of cvcu_pinned_alloc (ptr as it returned it; NULL and
 * other pointers are ignored) to the pool, then trims the pool to its
 * limit. Thread-safe. */
void cvcu_pinned_free(void *ptr);

/* Queues one buffer of cvcu_pinned_class(bytes) to be pinned into the pool
 * by the background thread (returns at once), so that a later
 * cvcu_pinned_alloc(bytes, 1, ...) finds it; nothing when the pool holds a
 * free buffer that would serve it, one is queued that would, the queue is
 * full, or it would take the pool's free, queued and handed buffers past
 * the pool's limit. Thread-safe. */
void cvcu_pinned_reserve(size_t bytes);

#endif

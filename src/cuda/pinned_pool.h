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
 * size: the smallest free one of the pool that holds it, else a new one
 * (mapped, faulted in by several threads and registered; cudaMallocHost
 * where registering is not supported). Thread-safe. Errors:
 * cudaErrorMemoryAllocation, or those of cudaHostRegister or cudaMallocHost
 * (*ptr is then NULL). */
cudaError_t cvcu_pinned_take(size_t bytes, void **ptr, size_t *size);

/* Gives back a buffer from cvcu_pinned_take (no copy may still use it;
 * NULL is ignored): the pool keeps it for the next take. */
void cvcu_pinned_give(void *ptr, size_t size);

/* Frees the buffers given back longest ago while the free ones pass the
 * larger of `keep` (an execution's own staging, given back last: kept for
 * its next run) and the pool's limit (CONVOLVE_PINNED_POOL_MIB, default an
 * eighth of the host's memory). Thread-safe. */
void cvcu_pinned_trim(size_t keep);

#endif

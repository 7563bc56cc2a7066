/*
 * fast.h - the fast GPU strategies (direct, separable, fft) as the CUDA
 * backend's runtime sees them: their checks, the "auto" model that chooses
 * among all CUDA strategies, and per-plan state with one launch call
 * (src/cuda/fast.c). Plain C.
 */
#ifndef CONVOLVE_CUDA_FAST_H
#define CONVOLVE_CUDA_FAST_H

#include "../internal.h"
#include "kernels.h"

#include <cuda_runtime_api.h>

/* cvi_strategy.id of the fast strategies (after the chapter's CVS_*). */
enum { CVS_DIRECT = 16, CVS_SEPARABLE, CVS_FFT };

/* 1 for the ids above. */
int cvf_is_fast(int sid);

/* The strategy checks (cvi_check_fn). */
convolve_status cvf_check(const cvi_strategy *s, const cvi_problem *p, const convolve_context *ctx,
                          char *why, size_t why_size);

typedef struct cvf_plan cvf_plan;

/* Makes the state a fast strategy needs for p (weights copied, cuFFT plans
 * and buffers for fft). Errors: OUT_OF_MEMORY, DEVICE, DEVICE_OUT_OF_MEMORY,
 * UNSUPPORTED, with the message on ctx. */
convolve_status cvf_prepare(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p,
                            cvf_plan **plan);

/* Runs on the device arrays of a (pointers and element strides as the
 * chapter's kernels take them) on stream. A layout the fast kernel cannot
 * take (it wants interleaved, contiguous rows) runs the chapter's constant
 * or basic kernel instead. On failure, cvf_message says what failed. */
cudaError_t cvf_launch(cvf_plan *plan, const cvk_args *a, cudaStream_t stream);
const char *cvf_message(const cvf_plan *plan);

void cvf_release(cvf_plan *plan);

/* "auto" on the GPU: the fast strategy the roofline model prefers for p, or
 * NULL to let the chapter's order decide. `table` holds the CUDA strategies. */
const cvi_strategy *cvf_pick(const convolve_context *ctx, const cvi_problem *p,
                             const cvi_strategy *table, size_t count);

#endif

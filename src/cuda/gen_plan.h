/*
 * gen_plan.h - plans of the generated direct kernels (gen.c), as the CUDA
 * backend's runtime sees them: prepared once per convolve_plan, launched on
 * any layout of device memory. Plain C.
 */
#ifndef CONVOLVE_CUDA_GEN_PLAN_H
#define CONVOLVE_CUDA_GEN_PLAN_H

#include "../problem.h"
#include "gen.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest filter extent per axis the direct kernels take: dense filters,
 * and separable ones (each axis's taps; also a filter along x only, such as
 * any 1-D filter). Larger filters go to the FFT. */
#define CVCU_GEN_MAX_TAPS 64
#define CVCU_GEN_MAX_SEP_TAPS 257

typedef struct cvcu_gen_plan cvcu_gen_plan;

/* 1 if the direct kernels serve p (dense, or separable when `separable`);
 * else 0 with the reason in why. */
int cvcu_gen_serves(const cvi_problem *p, int separable, char *why, size_t why_size);

/* Prepares the kernel for p (separable: the fused separable kernels, which
 * need p->separable; else dense): chooses its family and geometry, gets it
 * specialised (NVRTC, or a cache) or precompiled, and uploads the weights
 * where they do not fit the parameter bank. Errors: OUT_OF_MEMORY, DEVICE,
 * DEVICE_OUT_OF_MEMORY, UNSUPPORTED (tiles too large for shared memory). */
convolve_status cvcu_gen_prepare(convolve_context *ctx, const cvi_problem *p, int separable,
                                 cvcu_gen_plan **plan);

/* Launches on device arrays: element strides per axis (z, y, x) and between
 * channels, in elements of each array's own type; asynchronous on stream.
 * Returns the launch's error. */
cudaError_t cvcu_gen_launch(const cvcu_gen_plan *plan, const void *in, void *out,
                            const long long is[3], long long ics, const long long os[3],
                            long long ocs, cudaStream_t stream);

/* Frees a plan; NULL is accepted. */
void cvcu_gen_release(cvcu_gen_plan *plan);

#ifdef __cplusplus
}
#endif

#endif

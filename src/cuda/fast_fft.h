/*
 * fast_fft.h - convolution through cuFFT for large filters (fast_fft.cu),
 * with the same semantics as the direct kernels: the input is first extended
 * by the boundary mode, so every mode and origin is exact.
 */
#ifndef CONVOLVE_CUDA_FAST_FFT_H
#define CONVOLVE_CUDA_FAST_FFT_H

#include "../problem.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cvk_fft_plan cvk_fft_plan;

/* Device bytes a plan for p would hold (transform buffer, filter spectrum);
 * 0 if the sizes overflow. */
size_t cvk_fft_workspace_bytes(const cvi_problem *p);

/* Makes cuFFT plans and buffers and the filter's spectrum for p (weights in
 * correlation form). float64 data transforms in double, the rest in float.
 * Errors: DEVICE_OUT_OF_MEMORY, DEVICE, UNSUPPORTED (a transform size cuFFT
 * cannot take), with a message in err. */
convolve_status cvk_fft_create(const cvi_problem *p, cvk_fft_plan **plan, char *err,
                               size_t err_size);

/* Runs on device memory laid out as `p` (shape, types and mode as planned;
 * strides may differ from the plan's) on `stream`, asynchronously. */
convolve_status cvk_fft_execute(cvk_fft_plan *plan, const cvi_problem *p, const void *in,
                                void *out, cudaStream_t stream, char *err, size_t err_size);

/* Frees a plan; NULL is accepted. */
void cvk_fft_destroy(cvk_fft_plan *plan);

#ifdef __cplusplus
}
#endif

#endif

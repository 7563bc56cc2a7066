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

/* A streamed slab of the whole array (p->whole_rows set when planned):
 * its input rows along the slowest axis are the whole array's extended rows
 * lo, lo + 1, ... (lo may be negative), and the outputs wanted the whole
 * array's [r0, r1), r0 a multiple of cvk_fft_slab_align, r1 too or the
 * array's end. */
typedef struct cvk_fft_window {
    long long lo, r0, r1;
} cvk_fft_window;

/* Rows a streamed slab of p must start on for its outputs to have the bytes
 * of the whole array's one-shot run (the FFT's groups of tiles along the
 * slowest axis); 1 if the sizes overflow. */
size_t cvk_fft_slab_align(const cvi_problem *p);

/* Runs on device memory laid out as `p` (shape, types and mode as planned;
 * strides may differ from the plan's) on `stream`, asynchronously: the
 * whole problem (w NULL), or the outputs [w->r0, w->r1) of a slab.
 * Errors: DEVICE, DEVICE_OUT_OF_MEMORY; UNSUPPORTED for a slab not on the
 * groups (a caller's fault). */
convolve_status cvk_fft_execute(cvk_fft_plan *plan, const cvi_problem *p, const void *in, void *out,
                                const cvk_fft_window *w, cudaStream_t stream, char *err,
                                size_t err_size);

/* Frees a plan; NULL is accepted. */
void cvk_fft_destroy(cvk_fft_plan *plan);

#ifdef __cplusplus
}
#endif

#endif

/*
 * fast_direct3d.h - the 2.5-D streaming 3-D kernels (fast_direct3d.cu) for
 * volumes of one channel and cubic odd filters, reached from C through this
 * launcher: float32, uint8 and uint16 dense (summed in float), float32
 * separable (in float) and float64 separable (in double); any output type.
 */
#ifndef CONVOLVE_CUDA_FAST_DIRECT3D_H
#define CONVOLVE_CUDA_FAST_DIRECT3D_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest filter extents the kernels are compiled for (odd sizes 3..these):
 * dense, separable. */
#define CVK_DIRECT3D_MAX_K 9
#define CVK_SEP3D_MAX_K 17

typedef struct cvk_direct3d_args {
    const void *in; /* element (0, 0, 0) */
    void *out;
    ptrdiff_t in_strides[2]; /* bytes between planes, rows (columns are contiguous) */
    ptrdiff_t out_strides[2];
    long long depth, height, width;
    int channels; /* must be 1 */
    int ksize;    /* K: the filter is K x K x K, odd, 3..CVK_DIRECT3D_MAX_K
                     (separable: 3..CVK_SEP3D_MAX_K) */
    int koffz, koffy, koffx;
    int mode;
    double cval;                            /* rounded to float for float32 input */
    int in_type, out_type;                  /* convolve_dtype */
    int separable;                          /* 1: taps_z, taps_y, taps_x; 0: weights */
    const double *weights;                  /* K^3, correlation form, C order */
    const double *taps_z, *taps_y, *taps_x; /* K each, correlation form */
    int multiprocessors;
} cvk_direct3d_args;

/* 1 if a kernel serves this input element type, channel count, extent and
 * kind (separable 1 or dense 0): float32, uint8 or uint16 dense K <=
 * CVK_DIRECT3D_MAX_K, float32 or float64 separable K <= CVK_SEP3D_MAX_K, K
 * odd, one channel. uint8 and uint16 under CONSTANT take a cval that is
 * one of their values (the tiles hold the input's elements). */
int cvk_direct3d_supports(int in_type, int channels, int ksize, int separable);

/* Launches on `stream`; returns the launch's error (cudaErrorInvalidValue
 * for a combination cvk_direct3d_supports refuses, cudaErrorInvalidConfiguration
 * for a grid past the device's limits). */
cudaError_t cvk_direct3d_launch(const cvk_direct3d_args *args, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/*
 * fast_sep_int.h - the fused separable 2-D kernels for uint8 and uint16
 * images of interleaved channels (fast_sep_int.cu), reached from C through
 * these launchers; they take the fast direct kernels' arguments
 * (fast_direct.h).
 */
#ifndef CONVOLVE_CUDA_FAST_SEP_INT_H
#define CONVOLVE_CUDA_FAST_SEP_INT_H

#include "fast_direct.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest filter extent (odd sizes 3..this, the same along y and x). */
#define CVK_ISEP_MAX_K 11

/* 1 if the kernels serve this element type, channel count and extent
 * (separable and square): uint8 and uint16 with 1, 3 or 4 channels,
 * K = 3..11 odd. */
int cvk_isep2d_supports(int in_type, int channels, int ksize);

/* Launches on `stream` (a->separable, height_taps == ksize, a served case);
 * returns the launch's error (cudaSuccess when queued). Every mode and
 * origin; any row pitch (rows not 4-byte aligned are read element by
 * element); every output type. */
cudaError_t cvk_isep2d_launch(const cvk_direct_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

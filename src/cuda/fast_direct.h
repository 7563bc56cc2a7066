/*
 * fast_direct.h - the register-streaming kernels (fast_direct.cu): 2-D square
 * filters (odd; dense float32 also K = 2, 4, 6, and a few non-square
 * sizes), dense or separable, on rows
 * of interleaved channels (or a batch of such images: a stack of planes, or
 * planar channels), and 1-D filters; reached from C through these launchers.
 */
#ifndef CONVOLVE_CUDA_FAST_DIRECT_H
#define CONVOLVE_CUDA_FAST_DIRECT_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest filter extents the kernels are compiled for (odd sizes 3..these;
 * dense float32 gray also 2, 4, 6): dense float32 gray; separable float32
 * gray; 1-D float32. uint8 and uint16 gray, RGB and RGBA: dense 3 and 5
 * (separable filters on them take fast_sep_int.cu's kernel). */
#define CVK_DIRECT2D_MAX_K 17
#define CVK_DIRECT2D_MAX_SEP_K 33
#define CVK_DIRECT1D_MAX_K 33

typedef struct cvk_direct_args {
    const void *in; /* element (0, 0, channel 0) */
    void *out;
    ptrdiff_t in_row; /* bytes between rows */
    ptrdiff_t out_row;
    long long height, width; /* pixels */
    int channels;            /* interleaved; neighbours along x are `channels` elements apart */
    int ksize;               /* K: the filter's extent along x (odd but for dense float32) */
    int height_taps;         /* its extent along y: K (2-D), 1 (1-D) */
    int koffy, koffx;        /* correlation offsets, 0 <= koff < K */
    int mode;                /* CVI_MODE_* */
    float cval;
    int in_type, out_type;         /* convolve_dtype */
    int separable;                 /* 1: taps_y and taps_x; 0: weights */
    const double *weights;         /* K*K, correlation form, C order */
    const double *taps_y, *taps_x; /* K each, correlation form */
    int multiprocessors;           /* of the device, to size the grid */
    /* 2-D: images filtered alike, in_plane / out_plane bytes apart (a
     * stack's planes, or planar channels with channels = 1); 0 or 1: one */
    long long batch;
    ptrdiff_t in_plane, out_plane;
} cvk_direct_args;

/* 1 if a 2-D kernel serves this element type, channel count, extent and kind. */
int cvk_direct2d_supports(int in_type, int channels, int ksize, int separable);
/* 1 if a 2-D kernel serves a dense non-square ky x kx filter (ky rows of
 * kx weights) of this element type and channel count. */
int cvk_direct2d_rect_supports(int in_type, int channels, int ky, int kx);
/* 1 if a batched 2-D kernel (cvk_direct_args.batch > 1, channels 1)
 * serves this element type, extent and kind. */
int cvk_direct2d_batch_supports(int in_type, int ksize, int separable);
/* 1 if the 1-D kernel serves this element type, channel count and extent
 * (float32, one channel, K odd 3..CVK_DIRECT1D_MAX_K). */
int cvk_direct1d_supports(int in_type, int channels, int ksize);

/* Launch on `stream`; return the launch's error (cudaSuccess when queued).
 * 2-D: a height_taps x K filter over height x width (K x K but for the
 * dense filters cvk_direct2d_rect_supports names; batch images of it, at
 * most 65535); 1-D: height 1, height_taps 1. */
cudaError_t cvk_direct2d_launch(const cvk_direct_args *args, cudaStream_t stream);
cudaError_t cvk_direct1d_launch(const cvk_direct_args *args, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

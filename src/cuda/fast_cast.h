/*
 * fast_cast.h - the integer-image kernel of scipy's cast (fast_cast.cu):
 * uint8 or uint16 images of 1 to 4 interleaved channels (any strides),
 * filtered by a separable filter (taps along y then x, either of one tap)
 * with every sum in double and each output cast as cvi_truncate_u8/u16 do
 * (CVI_CAST_TRUNCATE); reached from C through this launcher.
 */
#ifndef CONVOLVE_CUDA_FAST_CAST_H
#define CONVOLVE_CUDA_FAST_CAST_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most taps along each of y and x. */
#define CVK_CAST_MAX_K 64
/* Most interleaved channels. */
#define CVK_CAST_MAX_CHANNELS 4

typedef struct cvk_cast_args {
    const void *in; /* element (plane 0, row 0, pixel 0, channel 0) */
    void *out;
    long long planes, height, width; /* planes are independent (a 3-D problem with
                                        one tap along its slowest axis) */
    long long is[3], ics;            /* input strides (plane, row, pixel; channel) in elements */
    long long os[3], ocs;            /* output strides */
    int channels;                    /* 1..CVK_CAST_MAX_CHANNELS */
    int type;                        /* CVI_DTYPE_UINT8 or CVI_DTYPE_UINT16, input and output */
    int ky, kx;                      /* taps along y and x, 1..CVK_CAST_MAX_K */
    int koffy, koffx;                /* out[y][x] reads in[y + k - koffy][x + k - koffx] */
    int mode;                        /* CVI_MODE_* */
    double cval;
    double divisor, snap;      /* the cast's (cvi_truncate_u8/u16) */
    double ty[CVK_CAST_MAX_K]; /* correlation form */
    double tx[CVK_CAST_MAX_K];
    int multiprocessors; /* of the device, to size grids (0: unknown) */
} cvk_cast_args;

/*
 * Computes, for every plane, row y, pixel x and channel c,
 *   out = cast( sum_kx tx[kx] * ( sum_ky ty[ky] * ext[y + ky - koffy][x + kx - koffx][c] ) )
 * where ext is the input extended by `mode` (cval wherever an axis is
 * outside: the dense outer product's meaning), both sums in double with
 * fused multiply-adds in tap order, and cast is cvi_truncate_u8/u16 with
 * the divisor and snap. Queues the kernel on `stream`; returns the launch's
 * error (cudaErrorInvalidValue for arguments outside the limits above).
 */
cudaError_t cvk_cast_launch(const cvk_cast_args *args, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/*
 * kernels.h - the plain-C face of the CUDA kernels: the strategy ids (one
 * enum for every CUDA strategy), the argument block the chapter's kernels
 * (src/cuda/kernels_*.cu) receive, the filter bank passed as a
 * __grid_constant__ kernel parameter (the "constant memory" of the chapter),
 * the tile and block extents of each strategy, and the extern "C" launchers.
 * The fast kernels have launchers of their own (fast_direct.h,
 * fast_direct3d.h, fast_fft.h). Included by the C host code of src/cuda/
 * and by the .cu files.
 */
#ifndef CONVOLVE_CUDA_KERNELS_H
#define CONVOLVE_CUDA_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the strategies ------------------------------------------------------ *
 * The id (cvi_strategy.id) of every CUDA strategy; the table of
 * src/cuda/strategies.c lists them in this order. The first six are the
 * chapter's kernel families, which cvk_launch runs for 1-, 2- or 3-D
 * arguments (each family serves the dimensionalities of its table entry);
 * the last three are the fast kernels.                                     */
enum {
    CVK_BASIC = 0, /* one output per thread, weights in global memory */
    CVK_CONSTANT,  /* one output per thread, weights in the bank */
    CVK_TILED,     /* 1-D and 3-D: blocks the size of the output tile */
    CVK_TILED_IN,  /* 2-D: blocks the size of the input tile */
    CVK_TILED_OUT, /* 2-D: blocks the size of the output tile */
    CVK_CACHED,    /* only the tile's own elements staged */
    CVK_DIRECT,    /* fast: register-streaming direct (fast_direct*.cu) */
    CVK_SEPARABLE, /* fast: fused separable 2-D (fast_direct*.cu) */
    CVK_FFT,       /* fast: cuFFT (fast_fft.cu) */
    CVK_STRATEGY_COUNT
};

/* ---- the strategies' geometry ------------------------------------------ *
 * A strategy's tile[] record (src/cuda/strategies.c) repeats these; a
 * d-dimensional problem uses the first d extents (x fastest).             */

/* basic and constant: one output per thread; blocks of these extents. */
#define CVK_BASIC1_X 256 /* 1-D */
#define CVK_BASIC2_X 32  /* 2-D: 32 x 8 */
#define CVK_BASIC2_Y 8
#define CVK_BASIC3_X 32 /* 3-D: 32 x 8 x 1, one z plane per block */
#define CVK_BASIC3_Y 8

/* tiled (1-D and 3-D): the block is the output tile (64, or 64 x 4 x 4);
 * its threads loop to stage the input tile (tile + K - 1 per axis). */
#define CVK_TILED_X 64
#define CVK_TILED_Y 4
#define CVK_TILED_Z 4

/* tiled-in (2-D): the block is the 32 x 32 input tile; the output tile is
 * (33 - K2) x (33 - K1), so each filter extent must be at most 31. */
#define CVK_TILED_IN_X 32
#define CVK_TILED_IN_Y 32
#define CVK_TILED_IN_MAX_K (CVK_TILED_IN_X - 1)

/* tiled-out (2-D): the block is the 32 x 32 output tile; its threads loop to
 * stage the (31 + K2) x (31 + K1) input tile. */
#define CVK_TILED_OUT_X 32
#define CVK_TILED_OUT_Y 32

/* cached (1-D, 2-D, 3-D): the block is the tile (64; 64 x 8; 64 x 8 x 2);
 * only the tile's own elements are staged, halo cells come through the
 * caches from global memory. */
#define CVK_CACHED_X 64
#define CVK_CACHED_Y 8
#define CVK_CACHED_Z 2

/* Shared memory a block may use without opting in. */
#define CVK_DEFAULT_SHARED 49152

/* ---- the filter bank ---------------------------------------------------- *
 * The constant, tiled and cached kernels take the weights by value in this
 * struct, a `const __grid_constant__` parameter: kernel parameters live in
 * the constant bank, so the threads of a warp reading the same weight are
 * served by the constant cache, and every launch carries its own copy
 * (plans on different streams never share a __constant__ symbol).
 * 16 KiB: 4096 float weights or 2048 double weights. sm_70+ with CUDA 12.1+
 * accept kernel parameters up to 32764 bytes.                              */
#define CVK_BANK_BYTES 16384
#define CVK_BANK_FLOATS (CVK_BANK_BYTES / 4)
#define CVK_BANK_DOUBLES (CVK_BANK_BYTES / 8)

typedef struct cvk_bank {
    union {
        float f[CVK_BANK_FLOATS];
        double d[CVK_BANK_DOUBLES];
    } w;
} cvk_bank;

/* ---- the arguments ------------------------------------------------------ */

/* Everything a kernel needs, by value. Axes are the canonical problem's three
 * (0 slowest, 2 fastest); strides are in elements of the array's own type
 * (input or output) and may be negative or zero for the input. Accumulation
 * is in double for float64 input and under CVI_CAST_TRUNCATE, else in float; weights (the basic kernels'
 * `weights`, and the bank) are of the accumulation type. */
typedef struct cvk_args {
    const void *in;       /* element 0 of the input (device memory) */
    void *out;            /* element 0 of the output */
    const void *weights;  /* basic: kcount weights in device memory */
    long long n[3];       /* extents */
    long long is[3], ics; /* input strides per axis and per channel */
    long long os[3], ocs; /* output strides */
    long long channels;
    long long tiles[3];    /* set by the launcher: the grid-stride loop bounds */
    int k[3];              /* filter extents */
    int koff[3];           /* 0 <= koff < k: out[i] reads in[i + k - koff] */
    int in_type, out_type; /* convolve_dtype */
    int mode;              /* CVI_MODE_* */
    int ndim;              /* 1, 2 or 3: the launchers' dispatch (kernels ignore it) */
    double cval;
    /* A streamed slab (the FFT reads these; other kernels need not): its
     * rows along the slowest axis are the whole array's extended rows
     * [slab_lo, slab_lo + n) (slab_lo may be negative: rows past the edge,
     * gathered by the mode), and its exact outputs the whole array's rows
     * [slab_r0, slab_r1). slab = 0: the whole array. */
    int slab;
    long long slab_lo, slab_r0, slab_r1;
    int cast;       /* CVI_CAST_*: TRUNCATE (basic and constant only) sums
                                   integer data in double and truncates */
    double divisor; /* under TRUNCATE: sums are divided by it before the cast */
    double snap;    /* and snapped to integers within snap * max(|n|, 1) */
} cvk_args;

/* Launches the chapter kernel of family `strategy` (CVK_BASIC .. CVK_CACHED)
 * for a->ndim dimensions with a copy of *a on `stream`; `bank` is used by
 * the constant, tiled and cached kernels (NULL for basic); `smem` is the
 * dynamic shared memory in bytes (the tiled kernels; 0 for others), opted in
 * first when over the default 48 KiB. Returns the launch's error
 * (cudaGetLastError after it), not the kernel's: it runs asynchronously;
 * cudaErrorInvalidValue for a family the dimensionality has not.
 * kernels_1d.cu, kernels_2d.cu and kernels_3d.cu each serve their kernels;
 * cvk_launch dispatches. */
cudaError_t cvk_launch(int strategy, const cvk_args *a, const cvk_bank *bank, size_t smem,
                       cudaStream_t stream);
cudaError_t cvk_launch_2d(int strategy, const cvk_args *a, const cvk_bank *bank, size_t smem,
                          cudaStream_t stream);
cudaError_t cvk_launch_3d(int strategy, const cvk_args *a, const cvk_bank *bank, size_t smem,
                          cudaStream_t stream);

/* Fills n elements of dtype `type` at p with pseudo-random values (floats in
 * [-1, 1), integers over their range) derived from seed, on stream (util.cu). */
cudaError_t cvk_fill_random(void *p, long long n, int type, unsigned long long seed,
                            cudaStream_t stream);

/* cudaSuccess when the current device can run this build's kernels (there is
 * machine code or PTX for it); else the error that says why (util.cu). */
cudaError_t cvk_check_kernel_image(void);

#ifdef __cplusplus
}
#endif

#endif

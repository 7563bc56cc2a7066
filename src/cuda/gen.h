/*
 * gen.h - the generated direct kernels (gen_kernels.cuh) as host C sees them:
 * the argument block every launch receives, the compile-time shape of one
 * kernel (its specialisation key), and the launchers of the precompiled
 * instances (gen_precompiled.cu). The run-time compiled instances are made
 * and launched by gen.c through jit.c.
 *
 * One kernel template family serves every element type, channel count,
 * layout, filter shape (odd, even, non-square, per axis different), mode,
 * cval and origin in 1-D, 2-D and 3-D:
 *   tile   a 2-D output tile per block (x: elements of interleaved channels,
 *          y: rows) streaming along z through rolling accumulators; dense
 *          filters, and separable 3-D filters (x and y fused per plane)
 *   strip  separable 1-D/2-D filters: a column strip per block walking down
 *          its rows, the x-filtered rows kept in a shared-memory ring, so
 *          every input element is staged and x-filtered once
 * A kernel is specialised at plan time (NVRTC) to the exact filter extents,
 * channel count, element types and horizontal offset; where NVRTC is missing
 * the generic instances (extents and channels at run time) serve instead.
 */
#ifndef CONVOLVE_CUDA_GEN_H
#define CONVOLVE_CUDA_GEN_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "gen_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel families. */
enum { CVK_GEN_TILE = 0, CVK_GEN_STRIP = 1 };

/* Weights a launch may carry in its parameter bank (bytes); more go to
 * device memory and the generic kernel. Kernel parameters may take 32764
 * bytes on sm_70+ with CUDA 12.1+. */
#define CVK_GEN_PARAM_WEIGHT_BYTES 28672

/* The compile-time shape of a kernel: a key for the caches, and the
 * template arguments. Zero extents (and C = 0, ox = -1) mean "at run time"
 * (the generic instances). */
typedef struct cvk_gen_shape {
    int family;         /* CVK_GEN_TILE or CVK_GEN_STRIP */
    int in_type;        /* convolve_dtype of the input */
    int out_type;       /* of the output, or -1: chosen at run time */
    int acc_double;     /* accumulate in double (float64 input) */
    int C;              /* interleaved channels, or 0 */
    int kx, ky, kz;     /* extents, or 0 */
    int ox;             /* horizontal offset koff[2], or -1 */
    int sep;            /* separable */
    int bx, by, tx, ty; /* elements and rows a thread; threads along x, y */
    int nw;             /* weights in the parameter bank (0: device memory) */
} cvk_gen_shape;

/* Launches a precompiled instance: the parameter block, the weights for
 * its parameter bank (nw of them; one when nw is 0), the weights in device
 * memory (nw 0), the grid, the block's threads, dynamic shared memory.
 * With `occupancy` not NULL it launches nothing and stores there how many
 * such blocks a multiprocessor holds. */
typedef cudaError_t (*cvk_gen_launch_fn)(const cvk_gen_params *p, const void *bank, const void *gw,
                                         const unsigned grid[3], unsigned block, size_t smem,
                                         cudaStream_t stream, int *occupancy);

/* The launcher of the precompiled instance for s, or NULL when none was
 * compiled: the generic instances (zero extents, C 0, ox -1, out_type -1)
 * of every input type and family, and a few specialised ones. */
cvk_gen_launch_fn cvk_gen_precompiled(const cvk_gen_shape *s);

/* cudaLaunchKernel for a run-time compiled kernel (a cudaKernel_t). */
cudaError_t cvk_gen_launch_kernel(const void *fn, const unsigned grid[3], unsigned block,
                                  void **args, size_t smem, cudaStream_t stream);

/* The source of gen_kernels.cuh and the headers it includes, for NVRTC
 * (gen_source.c, generated at build time). */
extern const char *const cvk_gen_sources[];
extern const char *const cvk_gen_source_names[];
extern const int cvk_gen_source_count;

#ifdef __cplusplus
}
#endif

#endif

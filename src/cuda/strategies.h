/*
 * strategies.h - what the CUDA backend's strategy table (strategies.c)
 * tells its host runtime (runtime.c): the strategy numbers, the kernel that
 * serves a strategy for a dimensionality, the accumulation type's size and
 * the dynamic shared memory a kernel needs.
 */
#ifndef CONVOLVE_CUDA_STRATEGIES_H
#define CONVOLVE_CUDA_STRATEGIES_H

#include "../internal.h"

/* cvi_strategy.id of the CUDA strategies. */
enum {
    CVS_BASIC = 0,
    CVS_CONSTANT,
    CVS_TILED,
    CVS_TILED_IN,
    CVS_TILED_OUT,
    CVS_CACHED
};

/* The kernel (CVK_*) that runs strategy id `sid` on ndim-D problems, or -1. */
int cvc_kernel_for(int sid, int ndim);

/* Bytes of one weight and one staged value: 8 for float64 input, else 4. */
size_t cvc_acc_size(const cvi_problem *p);

/* Dynamic shared memory (bytes) kernel `kernel` needs for p; 0 for kernels
 * with none or only static shared memory; SIZE_MAX if it overflows. */
size_t cvc_dynamic_shared(int kernel, const cvi_problem *p);

#endif

/*
 * strategies.h - what the CUDA strategy table (strategies.c) tells the rest
 * of the CUDA backend's host code: the accumulation type's size and the
 * dynamic shared memory a chapter kernel needs. The strategy ids are the
 * CVK_* of kernels.h.
 */
#ifndef CONVOLVE_CUDA_STRATEGIES_H
#define CONVOLVE_CUDA_STRATEGIES_H

#include "../problem.h"

/* Bytes of one weight and one staged value: 8 for float64 input, else 4. */
size_t cvcu_acc_size(const cvi_problem *p);

/* Dynamic shared memory (bytes) the kernel of strategy `strategy` (CVK_*)
 * needs for p; 0 for kernels with none or only static shared memory;
 * SIZE_MAX if it overflows. */
size_t cvcu_dynamic_shared(int strategy, const cvi_problem *p);

/* 1 if p is a 2-D separable filter, square and odd, on an image the fused
 * integer kernel (fast_sep_int.cu) serves, in rows of interleaved channels
 * contiguous along x in and out (the layout it needs; others take the
 * generated kernels; a streamed slab, packed, goes by the whole array's
 * layout, so that it runs what the one-shot run does). */
int cvcu_fused_int_serves(const cvi_problem *p);

/* 1 if the integer-image kernel of scipy's cast (fast_cast.cu), which the
 * strategies direct and separable run under CONVOLVE_CAST_TRUNCATE, serves
 * p (a truncating problem): uint8 to uint8 or uint16 to uint16, 1 to
 * CVK_CAST_MAX_CHANNELS channels, any strides, one tap along axis 0, up to
 * CVK_CAST_MAX_K taps along each of axes 1 and 2 (not folded), separable or
 * with taps along one axis only. Else 0, and why says why. */
int cvcu_cast_serves(const cvi_problem *p, char *why, size_t n);

#endif

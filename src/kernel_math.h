/*
 * kernel_math.h - the arithmetic every backend shares, written once for C and
 * CUDA: boundary index mapping (the ghost cells of every mode) and the
 * conversion of a floating-point result to an output element (integers are
 * rounded to nearest, ties to even, and saturated; NaN becomes 0).
 *
 * Included by C sources and by CUDA sources; CVI_HD marks the functions for
 * both host and device there.
 */
#ifndef CONVOLVE_KERNEL_MATH_H
#define CONVOLVE_KERNEL_MATH_H

#ifdef __CUDACC_RTC__ /* NVRTC (src/cuda/jit.c) has no standard headers */
typedef long ptrdiff_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __CUDACC__
#define CVI_HD __host__ __device__ __forceinline__
#else
#define CVI_HD static inline
#endif

/* Mirrors convolve_mode (include/convolve.h); kept numerically equal. */
enum {
    CVI_MODE_REFLECT = 0,
    CVI_MODE_CONSTANT = 1,
    CVI_MODE_NEAREST = 2,
    CVI_MODE_MIRROR = 3,
    CVI_MODE_WRAP = 4
};

/*
 * Maps index j along an axis of n elements (n >= 1) to the index whose value
 * the extended input holds there, following scipy.ndimage: every mode is
 * periodic past the edges, so filters longer than the input keep extending.
 * Returns -1 in CONSTANT mode when j is outside [0, n): the value is cval.
 */
CVI_HD ptrdiff_t cvi_boundary_index(ptrdiff_t j, ptrdiff_t n, int mode)
{
    if (j >= 0 && j < n)
        return j;
    switch (mode) {
    case CVI_MODE_CONSTANT:
        return -1;
    case CVI_MODE_NEAREST:
        return j < 0 ? 0 : n - 1;
    case CVI_MODE_WRAP: {
        ptrdiff_t m = j % n;
        return m < 0 ? m + n : m;
    }
    case CVI_MODE_MIRROR: {
        /* d c b | a b c d | c b a: period 2n-2, the edge sample not repeated */
        if (n == 1)
            return 0;
        ptrdiff_t p = 2 * n - 2;
        ptrdiff_t m = j % p;
        if (m < 0)
            m += p;
        return m < n ? m : p - m;
    }
    default: { /* CVI_MODE_REFLECT: d c b a | a b c d | d c b a: period 2n */
        ptrdiff_t p = 2 * n;
        ptrdiff_t m = j % p;
        if (m < 0)
            m += p;
        return m < n ? m : p - 1 - m;
    }
    }
}

/* Round to nearest, ties to even (the default rounding mode), then clamp. */
CVI_HD uint8_t cvi_saturate_u8(double v)
{
    if (!(v > 0.0)) /* also NaN */
        return 0;
    if (v >= 255.0)
        return 255;
#ifdef __CUDA_ARCH__
    return (uint8_t)__double2int_rn(v);
#else
    return (uint8_t)__builtin_rint(v);
#endif
}

CVI_HD uint16_t cvi_saturate_u16(double v)
{
    if (!(v > 0.0))
        return 0;
    if (v >= 65535.0)
        return 65535;
#ifdef __CUDA_ARCH__
    return (uint16_t)__double2int_rn(v);
#else
    return (uint16_t)__builtin_rint(v);
#endif
}

#ifdef __CUDACC__
/* Single-precision twins for device code that accumulates in float. */
__device__ __forceinline__ uint8_t cvi_saturate_u8f(float v)
{
    if (!(v > 0.0f))
        return 0;
    if (v >= 255.0f)
        return 255;
    return (uint8_t)__float2int_rn(v);
}

__device__ __forceinline__ uint16_t cvi_saturate_u16f(float v)
{
    if (!(v > 0.0f))
        return 0;
    if (v >= 65535.0f)
        return 65535;
    return (uint16_t)__float2int_rn(v);
}
#endif

#endif /* CONVOLVE_KERNEL_MATH_H */

/*
 * kernel_math.h - the arithmetic every backend shares, written once for C and
 * CUDA: boundary index mapping (the ghost cells of every mode), element
 * loads, and the conversion of a floating-point result to an output element
 * (integers are rounded to nearest, ties to even, and saturated, NaN
 * becoming 0; or truncated with wrap-around as scipy's cast).
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

/* Mirror convolve_dtype and convolve_mode (include/convolve.h) for code that
 * does not include the public header (the kernels); kept numerically equal
 * (static assertions in src/names.c). */
enum { CVI_DTYPE_FLOAT32 = 0, CVI_DTYPE_FLOAT64 = 1, CVI_DTYPE_UINT8 = 2, CVI_DTYPE_UINT16 = 3 };

enum {
    CVI_MODE_REFLECT = 0,
    CVI_MODE_CONSTANT = 1,
    CVI_MODE_NEAREST = 2,
    CVI_MODE_MIRROR = 3,
    CVI_MODE_WRAP = 4
};

/* Bytes of an element of dtype t (CVI_DTYPE_*). */
CVI_HD int cvi_dtype_bytes(int t)
{
    return t == CVI_DTYPE_FLOAT64 ? 8 : t == CVI_DTYPE_UINT8 ? 1 : t == CVI_DTYPE_UINT16 ? 2 : 4;
}

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
    case CVI_MODE_CONSTANT: return -1;
    case CVI_MODE_NEAREST: return j < 0 ? 0 : n - 1;
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

/* Mirrors convolve_integer_cast. */
enum { CVI_CAST_ROUND_SATURATE = 0, CVI_CAST_TRUNCATE = 1 };

/* scipy's cast of a double to a machine integer (CONVOLVE_CAST_TRUNCATE):
 * v within tol * max(|n|, 1) of an integer n (tol: the order of
 * summation's rounding, cvi_problem.snap) is taken as n, then truncated
 * toward zero; NaN, infinities and values outside the 64-bit range give
 * INT64_MIN, as x86-64's cvttsd2si. */
CVI_HD long long cvi_truncate_i64(double v, double tol)
{
    const double a = v < 0.0 ? -v : v;
    if (a < 4503599627370496.0) { /* below 2^52 (larger values are integers) */
#ifdef __CUDA_ARCH__
        const double r = (double)__double2ll_rn(v);
#else
        const double r = __builtin_rint(v);
#endif
        const double d = v > r ? v - r : r - v, m = r < 0.0 ? -r : r;
        if (d <= tol * (m > 1.0 ? m : 1.0))
            v = r;
    }
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0))
        return (long long)(-9223372036854775807LL - 1);
    return (long long)v;
}

/* The low bits of the truncated v / divisor (CONVOLVE_CAST_TRUNCATE). */
CVI_HD uint8_t cvi_truncate_u8(double v, double divisor, double tol)
{
    return (uint8_t)(unsigned long long)cvi_truncate_i64(v / divisor, tol);
}

CVI_HD uint16_t cvi_truncate_u16(double v, double divisor, double tol)
{
    return (uint16_t)(unsigned long long)cvi_truncate_i64(v / divisor, tol);
}

/* Reads the element of dtype t (CVI_DTYPE_*) at p as double. */
CVI_HD double cvi_load_double(int t, const void *p)
{
    switch (t) {
    case CVI_DTYPE_FLOAT32: return (double)*(const float *)p;
    case CVI_DTYPE_FLOAT64: return *(const double *)p;
    case CVI_DTYPE_UINT8: return (double)*(const unsigned char *)p;
    default: return (double)*(const unsigned short *)p;
    }
}

/* Writes v to the element of dtype t (CVI_DTYPE_*) at p: float types are
 * cast, integer types rounded to nearest (ties to even) and saturated, NaN
 * to 0. */
CVI_HD void cvi_store_double(int t, void *p, double v)
{
    switch (t) {
    case CVI_DTYPE_FLOAT32: *(float *)p = (float)v; break;
    case CVI_DTYPE_FLOAT64: *(double *)p = v; break;
    case CVI_DTYPE_UINT8: *(unsigned char *)p = cvi_saturate_u8(v); break;
    default: *(unsigned short *)p = cvi_saturate_u16(v); break;
    }
}

/* cvi_store_double, with the integer cast `cast` (CVI_CAST_*) and, under
 * TRUNCATE, the divisor and snapping tolerance for integer outputs. */
CVI_HD void cvi_store_cast(int t, int cast, double divisor, double tol, void *p, double v)
{
    if (cast == CVI_CAST_TRUNCATE && t == CVI_DTYPE_UINT8)
        *(unsigned char *)p = cvi_truncate_u8(v, divisor, tol);
    else if (cast == CVI_CAST_TRUNCATE && t == CVI_DTYPE_UINT16)
        *(unsigned short *)p = cvi_truncate_u16(v, divisor, tol);
    else
        cvi_store_double(t, p, v);
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

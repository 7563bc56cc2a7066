/*
 * device_common.cuh - device-side helpers shared by the kernels of
 * kernels_1d.cu, kernels_2d.cu and kernels_3d.cu: loads converted to the
 * accumulation type, ghost-cell fetches through cvi_boundary_index, the
 * output store (a switch on the output type, with rounding and saturation
 * for integers), the filter bank's typed view, the grid-stride helpers and
 * the instantiation of a kernel template for each input type.
 */
#ifndef CONVOLVE_CUDA_DEVICE_COMMON_CUH
#define CONVOLVE_CUDA_DEVICE_COMMON_CUH

#include "kernels.h"
#include "../kernel_math.h"

#include <cuda_runtime.h>
#include <stdint.h>

typedef long long i64;

/* The largest grid extents a launch may have; kernels loop past them. (The
 * CPU emulation of tests/emu/ lowers them to exercise those loops.) */
#ifndef CVK_GRID_X_MAX
#define CVK_GRID_X_MAX 2147483647LL
#endif
#ifndef CVK_GRID_YZ_MAX
#define CVK_GRID_YZ_MAX 65535LL
#endif

/* The block's dynamic shared memory, as bytes named `name`. */
#ifndef CVK_DYNAMIC_SHARED
#define CVK_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

/* Launches kernel K (a template instance K<T, A> when T is given) with the
 * given configuration and the parenthesised argument list ARGS. */
#ifndef CVK_LAUNCH
#define CVK_LAUNCH(K, grid, block, smem, stream, ARGS) K<<<grid, block, smem, stream>>> ARGS
#define CVK_LAUNCH_T(K, T, A, grid, block, smem, stream, ARGS)                                \
    K<T, A><<<grid, block, smem, stream>>> ARGS
#endif

/* Input element at p, converted to the accumulation type A (read-only path). */
template <typename T, typename A>
__device__ __forceinline__ A cvk_ld(const T *p)
{
    return (A)__ldg(p);
}

/* The ghost-cell rule: input value at index j along the fastest axis of the
 * row `row` (whose own index is in range), or cval (CONSTANT outside). */
template <typename T, typename A>
__device__ __forceinline__ A cvk_fetch_x(const cvk_args &a, const T *row, i64 j)
{
    const i64 r = cvi_boundary_index(j, a.n[2], a.mode);
    return r < 0 ? (A)a.cval : cvk_ld<T, A>(row + r * a.is[2]);
}

/* Value at (j1, j2) of the plane at src (axes 1 and 2), ghost cells included. */
template <typename T, typename A>
__device__ __forceinline__ A cvk_fetch_yx(const cvk_args &a, const T *src, i64 j1, i64 j2)
{
    const i64 r1 = cvi_boundary_index(j1, a.n[1], a.mode);
    const i64 r2 = cvi_boundary_index(j2, a.n[2], a.mode);
    return (r1 | r2) < 0 ? (A)a.cval : cvk_ld<T, A>(src + r1 * a.is[1] + r2 * a.is[2]);
}

/* Value at (j0, j1, j2) of the volume at src, ghost cells included. */
template <typename T, typename A>
__device__ __forceinline__ A cvk_fetch_zyx(const cvk_args &a, const T *src, i64 j0, i64 j1,
                                           i64 j2)
{
    const i64 r0 = cvi_boundary_index(j0, a.n[0], a.mode);
    const i64 r1 = cvi_boundary_index(j1, a.n[1], a.mode);
    const i64 r2 = cvi_boundary_index(j2, a.n[2], a.mode);
    return (r0 | r1 | r2) < 0 ? (A)a.cval
                              : cvk_ld<T, A>(src + r0 * a.is[0] + r1 * a.is[1] + r2 * a.is[2]);
}

__device__ __forceinline__ uint8_t cvk_sat_u8(float v) { return cvi_saturate_u8f(v); }
__device__ __forceinline__ uint8_t cvk_sat_u8(double v) { return cvi_saturate_u8(v); }
__device__ __forceinline__ uint16_t cvk_sat_u16(float v) { return cvi_saturate_u16f(v); }
__device__ __forceinline__ uint16_t cvk_sat_u16(double v) { return cvi_saturate_u16(v); }

/* Writes the result v to output element `off` (in output elements). The
 * switch is uniform across the grid. */
template <typename A>
__device__ __forceinline__ void cvk_store(const cvk_args &a, i64 off, A v)
{
    switch (a.out_type) {
    case 0: /* CONVOLVE_FLOAT32 */
        ((float *)a.out)[off] = (float)v;
        break;
    case 1: /* CONVOLVE_FLOAT64 */
        ((double *)a.out)[off] = (double)v;
        break;
    case 2: /* CONVOLVE_UINT8 */
        ((uint8_t *)a.out)[off] = cvk_sat_u8(v);
        break;
    default: /* CONVOLVE_UINT16 */
        ((uint16_t *)a.out)[off] = cvk_sat_u16(v);
        break;
    }
}

/* The bank's weights as the accumulation type (the argument only selects). */
__device__ __forceinline__ const float *cvk_bank_weights(const cvk_bank &b, float)
{
    return b.w.f;
}
__device__ __forceinline__ const double *cvk_bank_weights(const cvk_bank &b, double)
{
    return b.w.d;
}

/* min/max on 64-bit integers, clamped into [0, hi] and returned as int. */
__device__ __forceinline__ int cvk_clamp_int(i64 v, int hi)
{
    return v < 0 ? 0 : v > (i64)hi ? hi : (int)v;
}
__device__ __forceinline__ i64 cvk_min64(i64 a, i64 b) { return a < b ? a : b; }

/* Grid extent for `tiles` block tiles along x, or along y/z. */
static inline unsigned cvk_grid_x(long long tiles)
{
    return (unsigned)(tiles < CVK_GRID_X_MAX ? tiles : CVK_GRID_X_MAX);
}
static inline unsigned cvk_grid_yz(long long tiles)
{
    return (unsigned)(tiles < CVK_GRID_YZ_MAX ? tiles : CVK_GRID_YZ_MAX);
}

static inline long long cvk_ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/* Launches kernel template K for the input type of a (float, double, uint8,
 * uint16 with float, double, float, float accumulation). ARGS is the
 * parenthesised argument list. */
#define CVK_LAUNCH_TYPED(K, a, grid, block, smem, stream, ARGS)                               \
    do {                                                                                      \
        switch ((a).in_type) {                                                                \
        case 0: CVK_LAUNCH_T(K, float, float, grid, block, smem, stream, ARGS); break;        \
        case 1: CVK_LAUNCH_T(K, double, double, grid, block, smem, stream, ARGS); break;      \
        case 2: CVK_LAUNCH_T(K, uint8_t, float, grid, block, smem, stream, ARGS); break;      \
        default: CVK_LAUNCH_T(K, uint16_t, float, grid, block, smem, stream, ARGS); break;    \
        }                                                                                     \
    } while (0)

/* Raises the dynamic shared-memory limit of kernel template K's instance for
 * a's input type to smem bytes, when smem is over the default. */
#define CVK_OPT_IN_SHARED(K, a, smem, err)                                                    \
    do {                                                                                      \
        (err) = cudaSuccess;                                                                  \
        if ((smem) > CVK_DEFAULT_SHARED) {                                                    \
            const void *f_;                                                                   \
            switch ((a).in_type) {                                                            \
            case 0: f_ = (const void *)K<float, float>; break;                                \
            case 1: f_ = (const void *)K<double, double>; break;                              \
            case 2: f_ = (const void *)K<uint8_t, float>; break;                              \
            default: f_ = (const void *)K<uint16_t, float>; break;                            \
            }                                                                                 \
            (err) = cudaFuncSetAttribute(f_, cudaFuncAttributeMaxDynamicSharedMemorySize,     \
                                         (int)(smem));                                        \
        }                                                                                     \
    } while (0)

#endif

/*
 * device_common.cuh - device-side helpers shared by every kernel of
 * src/cuda/: the grid limits, loads converted to the accumulation type,
 * ghost-cell fetches through cvi_boundary_index, the output stores (a switch
 * on the output type, with rounding and saturation for integers), the
 * filter bank's typed view, the grid-stride helpers, the instantiation of a
 * kernel template for each input type, and the cp.async wrappers of the
 * fast kernels.
 *
 * The one place where a build may override what the kernels see: the CPU
 * emulation of tests/emu/ defines CVK_LAUNCH, CVK_DYNAMIC_SHARED and the
 * cp.async wrappers in its cuda_runtime.h, and lowers CVK_GRID_X_MAX and
 * CVK_GRID_YZ_MAX so that the grid-stride loops run.
 */
#ifndef CONVOLVE_CUDA_DEVICE_COMMON_CUH
#define CONVOLVE_CUDA_DEVICE_COMMON_CUH

#include "kernels.h"
#include "../kernel_math.h"

#include <cuda_runtime.h>
#include <stdint.h>

typedef long long i64;

/* The device's largest grid extents (x; y and z). Kernels that fold a row
 * index into blockIdx.y + blockIdx.z * CVK_DEVICE_GRID_YZ use them. */
#define CVK_DEVICE_GRID_X 2147483647LL
#define CVK_DEVICE_GRID_YZ 65535LL

/* The largest grid extents the grid-stride kernels launch with; they loop
 * past them. (The CPU emulation of tests/emu/ lowers them to exercise those
 * loops.) */
#ifndef CVK_GRID_X_MAX
#define CVK_GRID_X_MAX CVK_DEVICE_GRID_X
#endif
#ifndef CVK_GRID_YZ_MAX
#define CVK_GRID_YZ_MAX CVK_DEVICE_GRID_YZ
#endif

/* The block's dynamic shared memory, as bytes named `name`. */
#ifndef CVK_DYNAMIC_SHARED
#define CVK_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

/* Launches kernel K (a template instance K<T, A> when T is given) with the
 * given configuration and the parenthesised argument list ARGS. */
#ifndef CVK_LAUNCH
#define CVK_LAUNCH(K, grid, block, smem, stream, ARGS) K<<<grid, block, smem, stream>>> ARGS
#define CVK_LAUNCH_T(K, T, A, grid, block, smem, stream, ARGS) \
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

__device__ __forceinline__ uint8_t cvk_sat_u8(float v)
{
    return cvi_saturate_u8f(v);
}
__device__ __forceinline__ uint8_t cvk_sat_u8(double v)
{
    return cvi_saturate_u8(v);
}
__device__ __forceinline__ uint16_t cvk_sat_u16(float v)
{
    return cvi_saturate_u16f(v);
}
__device__ __forceinline__ uint16_t cvk_sat_u16(double v)
{
    return cvi_saturate_u16(v);
}

/* The float of byte I of w without a conversion instruction (those issue
 * at an eighth of the FMA rate): a byte permute builds the float
 * 2^23 + byte (bits 0x4B0000bb) and one subtraction leaves the byte. */
template <int I>
__device__ __forceinline__ float cvk_u8_float(unsigned w)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440 | I)) - 8388608.0f;
}
/* The float of halfword I of w, likewise (bits 0x4B00hhhh). */
template <int I>
__device__ __forceinline__ float cvk_u16_float(unsigned w)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7400 | (2 * I + 1) << 4 | 2 * I)) -
           8388608.0f;
}

/* v rounded to nearest (ties to even) and saturated to [0, top] (NaN ->
 * 0), in the low bits of the result: clamped, then 2^23 added, which
 * rounds to the integer in the low bits (top < 2^23); no conversion. */
__device__ __forceinline__ unsigned cvk_round_low(float v, float top)
{
    return __float_as_uint(fminf(fmaxf(v, 0.0f), top) + 8388608.0f);
}

/* Four floats rounded and saturated to uint8 (cvk_round_low:
 * cvi_saturate_u8f's results), packed in a word, first in the low byte. */
__device__ __forceinline__ unsigned cvk_u8_pack4(float a, float b, float c, float d)
{
    return __byte_perm(__byte_perm(cvk_round_low(a, 255.0f), cvk_round_low(b, 255.0f), 0x0040),
                       __byte_perm(cvk_round_low(c, 255.0f), cvk_round_low(d, 255.0f), 0x0040),
                       0x5410);
}

/* Two floats rounded and saturated to uint16 (cvk_round_low:
 * cvi_saturate_u16f's results), packed in a word, first in the low half. */
__device__ __forceinline__ unsigned cvk_u16_pack2(float a, float b)
{
    return __byte_perm(cvk_round_low(a, 65535.0f), cvk_round_low(b, 65535.0f), 0x5410);
}

/* Writes the result v to output element `off` (in output elements). The
 * switch is uniform across the grid. */
template <typename A>
__device__ __forceinline__ void cvk_store(const cvk_args &a, i64 off, A v)
{
    switch (a.out_type) {
    case CVI_DTYPE_FLOAT32: ((float *)a.out)[off] = (float)v; break;
    case CVI_DTYPE_FLOAT64: ((double *)a.out)[off] = (double)v; break;
    case CVI_DTYPE_UINT8:
        if (a.cast == CVI_CAST_TRUNCATE) /* the sum is double here (CVK_LAUNCH_TYPED_CAST) */
            ((uint8_t *)a.out)[off] = cvi_truncate_u8((double)v, a.divisor, a.snap);
        else
            ((uint8_t *)a.out)[off] = cvk_sat_u8(v);
        break;
    default: /* CVI_DTYPE_UINT16 */
        if (a.cast == CVI_CAST_TRUNCATE)
            ((uint16_t *)a.out)[off] = cvi_truncate_u16((double)v, a.divisor, a.snap);
        else
            ((uint16_t *)a.out)[off] = cvk_sat_u16(v);
        break;
    }
}

/* Stores the float result v as element e of an output row of dtype `type`
 * (the fast kernels, which accumulate in float). */
__device__ __forceinline__ void cvk_store_float(int type, char *row, long long e, float v)
{
    switch (type) {
    case CVI_DTYPE_FLOAT32: ((float *)row)[e] = v; break;
    case CVI_DTYPE_FLOAT64: ((double *)row)[e] = (double)v; break;
    case CVI_DTYPE_UINT8: ((unsigned char *)row)[e] = cvi_saturate_u8f(v); break;
    default: ((unsigned short *)row)[e] = cvi_saturate_u16f(v); break;
    }
}

/* Stores the double result v as element e of an output row of dtype `type`
 * (the fast kernels that accumulate in double): float32 cast once, integers
 * rounded to nearest and saturated in double (cvi_store_double). */
__device__ __forceinline__ void cvk_store_double(int type, char *row, long long e, double v)
{
    switch (type) {
    case CVI_DTYPE_FLOAT32: ((float *)row)[e] = (float)v; break;
    case CVI_DTYPE_FLOAT64: ((double *)row)[e] = v; break;
    case CVI_DTYPE_UINT8: ((unsigned char *)row)[e] = cvi_saturate_u8(v); break;
    default: ((unsigned short *)row)[e] = cvi_saturate_u16(v); break;
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
__device__ __forceinline__ i64 cvk_min64(i64 a, i64 b)
{
    return a < b ? a : b;
}

/* Grid extent for `tiles` block tiles along x, or along y/z. */
static inline unsigned cvk_grid_x(long long tiles)
{
    return (unsigned)(tiles < CVK_GRID_X_MAX ? tiles : CVK_GRID_X_MAX);
}
static inline unsigned cvk_grid_yz(long long tiles)
{
    return (unsigned)(tiles < CVK_GRID_YZ_MAX ? tiles : CVK_GRID_YZ_MAX);
}

__host__ __device__ static inline long long cvk_ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

/* Blocks a grid-stride kernel over a flat range needs at most: enough for
 * every multiprocessor of a large GPU many times over. */
#define CVK_FLAT_MAX_BLOCKS 65536LL

/* Multiprocessors to size grids for: the device's count, or an H200's 132
 * when it is not known (0). */
static inline long long cvk_multiprocessors(int known)
{
    return known > 0 ? known : 132;
}

/* Row grids: `xblocks` blocks along x and `rows` rows folded into grid y
 * and z (row = blockIdx.y + blockIdx.z * CVK_DEVICE_GRID_YZ, cvk_grid_row).
 * Returns 0 when that is past the device's limits. */
static inline int cvk_row_grid(long long xblocks, long long rows, dim3 *grid)
{
    const long long gz = (rows + CVK_DEVICE_GRID_YZ - 1) / CVK_DEVICE_GRID_YZ;
    if (gz > CVK_DEVICE_GRID_YZ || xblocks > CVK_DEVICE_GRID_X)
        return 0;
    *grid = dim3((unsigned)xblocks,
                 (unsigned)(rows < CVK_DEVICE_GRID_YZ ? rows : CVK_DEVICE_GRID_YZ),
                 (unsigned)(gz < 1 ? 1 : gz));
    return 1;
}
__device__ __forceinline__ long long cvk_grid_row()
{
    return (long long)blockIdx.y + (long long)blockIdx.z * CVK_DEVICE_GRID_YZ;
}

/* Launches kernel template K for the input type of a (float, double, uint8,
 * uint16 with float, double, float, float accumulation). ARGS is the
 * parenthesised argument list. */
#define CVK_LAUNCH_TYPED(K, a, grid, block, smem, stream, ARGS)                            \
    do {                                                                                   \
        switch ((a).in_type) {                                                             \
        case CVI_DTYPE_FLOAT32:                                                            \
            CVK_LAUNCH_T(K, float, float, grid, block, smem, stream, ARGS);                \
            break;                                                                         \
        case CVI_DTYPE_FLOAT64:                                                            \
            CVK_LAUNCH_T(K, double, double, grid, block, smem, stream, ARGS);              \
            break;                                                                         \
        case CVI_DTYPE_UINT8:                                                              \
            CVK_LAUNCH_T(K, uint8_t, float, grid, block, smem, stream, ARGS);              \
            break;                                                                         \
        default: CVK_LAUNCH_T(K, uint16_t, float, grid, block, smem, stream, ARGS); break; \
        }                                                                                  \
    } while (0)

/* CVK_LAUNCH_TYPED, with double accumulation for every input under
 * scipy's cast (a.cast == CVI_CAST_TRUNCATE): the basic and constant
 * kernels, the ones that serve it. */
#define CVK_LAUNCH_TYPED_CAST(K, a, grid, block, smem, stream, ARGS)                \
    do {                                                                            \
        if ((a).cast == CVI_CAST_TRUNCATE && (a).in_type == CVI_DTYPE_UINT8)        \
            CVK_LAUNCH_T(K, uint8_t, double, grid, block, smem, stream, ARGS);      \
        else if ((a).cast == CVI_CAST_TRUNCATE && (a).in_type == CVI_DTYPE_UINT16)  \
            CVK_LAUNCH_T(K, uint16_t, double, grid, block, smem, stream, ARGS);     \
        else if ((a).cast == CVI_CAST_TRUNCATE && (a).in_type == CVI_DTYPE_FLOAT32) \
            CVK_LAUNCH_T(K, float, double, grid, block, smem, stream, ARGS);        \
        else                                                                        \
            CVK_LAUNCH_TYPED(K, a, grid, block, smem, stream, ARGS);                \
    } while (0)

/* Raises the dynamic shared-memory limit of kernel template K's instance for
 * a's input type to smem bytes, when smem is over the default. */
#define CVK_OPT_IN_SHARED(K, a, smem, err)                                                \
    do {                                                                                  \
        (err) = cudaSuccess;                                                              \
        if ((smem) > CVK_DEFAULT_SHARED) {                                                \
            const void *f_;                                                               \
            switch ((a).in_type) {                                                        \
            case CVI_DTYPE_FLOAT32: f_ = (const void *)K<float, float>; break;            \
            case CVI_DTYPE_FLOAT64: f_ = (const void *)K<double, double>; break;          \
            case CVI_DTYPE_UINT8: f_ = (const void *)K<uint8_t, float>; break;            \
            default: f_ = (const void *)K<uint16_t, float>; break;                        \
            }                                                                             \
            (err) = cudaFuncSetAttribute(f_, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                         (int)(smem));                                    \
        }                                                                                 \
    } while (0)

/* Readies kernel fn for blocks of `threads` with smem bytes of dynamic
 * shared memory: raises its limit when smem is over the default (the
 * launch's error if that fails), and sets *per_sm to the blocks a
 * multiprocessor holds, asked once for the cache slot *held (0 until
 * asked; the first device's answer serves every device, as it only sizes
 * grids; a failed query counts 1 and is not the launch's error). */
static inline cudaError_t cvk_launch_ready(const void *fn, int threads, size_t smem, int *held,
                                           int *per_sm)
{
    if (smem > CVK_DEFAULT_SHARED) {
        const cudaError_t err = cudaFuncSetAttribute(
            fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess)
            return err;
    }
    int n = __atomic_load_n(held, __ATOMIC_RELAXED);
    if (n == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, threads, smem) != cudaSuccess) {
            (void)cudaGetLastError();
            n = 1;
        }
        n = n < 1 ? 1 : n;
        __atomic_store_n(held, n, __ATOMIC_RELAXED);
    }
    *per_sm = n;
    return cudaSuccess;
}

/* ---- asynchronous copies global -> shared (cp.async, sm_80+) ------------ *
 * cvk_cp16 copies 16 bytes (both addresses 16-byte aligned), cvk_cp8 8
 * bytes (both 8-byte aligned), cvk_cp4 4 bytes (cvk_cp_chunk one of the
 * three by size); cvk_cp_commit closes a group of copies, cvk_cp_wait<N> waits until
 * at most N groups are in flight. The fast kernels (fast_direct.cuh,
 * fast_direct3d.cu) fill their shared-memory buffers with them. A build
 * that defines CVK_CP_ASYNC_DEFINED supplies its own (tests/emu/).        */
#ifndef CVK_CP_ASYNC_DEFINED
__device__ __forceinline__ void cvk_cp16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cvk_cp8(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cvk_cp4(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cvk_cp_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cvk_cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

/* cp.async of ch = 16, 8 or 4 bytes (both addresses aligned to it). */
__device__ __forceinline__ void cvk_cp_chunk(void *smem, const void *gmem, int ch)
{
    if (ch == 16)
        cvk_cp16(smem, gmem);
    else if (ch == 8)
        cvk_cp8(smem, gmem);
    else
        cvk_cp4(smem, gmem);
}

#endif

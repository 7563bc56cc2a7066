/*
 * cuda_runtime.h (CPU emulation) - what the .cu files of src/cuda/ need to
 * compile as plain C++ and run on the CPU: the CUDA keywords as no-ops or
 * their host meaning (__shared__ arrays become statics, shared by the
 * emulated threads of the one block that runs at a time), thread and block
 * indices per host thread, __syncthreads as a barrier, launches through
 * cvk_emu_launch (one host thread per CUDA thread, blocks one after
 * another), the cp.async wrappers of src/cuda/device_common.cuh (copies at
 * once) and the float saturation helpers. Used only by the build with
 * -DCONVOLVE_CUDA_EMULATOR=ON (tests/emu/run.sh wraps it).
 */
#ifndef CVK_EMU_CUDA_RUNTIME_H
#define CVK_EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#include <cmath>
#include <cstdint>
#include <functional>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

extern thread_local dim3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

void __syncthreads();

template <typename T>
inline T __ldg(const T *p)
{
    return *p;
}
/* st.global.wb: a plain store here */
template <typename T>
inline void __stwb(T *p, T v)
{
    *p = v;
}

/* Vector types and intrinsics the fast kernels use. */
struct __attribute__((aligned(16))) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(8))) float2 {
    float x, y;
};
struct __attribute__((aligned(16))) double2 {
    double x, y;
};
struct __attribute__((aligned(8))) uint2 {
    unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
    unsigned x, y, z, w;
};

/* Run-time compiled kernels are never loaded here (cudaLibraryLoadData fails). */
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t stream);
inline float4 make_float4(float x, float y, float z, float w)
{
    return float4{x, y, z, w};
}
inline double2 make_double2(double x, double y)
{
    return double2{x, y};
}
inline uint2 make_uint2(unsigned x, unsigned y)
{
    return uint2{x, y};
}
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    return uint4{x, y, z, w};
}

/* Waits for the warp's lanes (all 32 must call). */
void __syncwarp(unsigned mask = 0xffffffffu);

/* A warp's lanes exchange v; returns lane src's (all 32 lanes must call). */
float __shfl_sync(unsigned mask, float v, int src);

/* Adds val to *address atomically (the emulated threads of a block run at
 * once); returns the value before. */
inline int atomicAdd(int *address, int val)
{
    return __atomic_fetch_add(address, val, __ATOMIC_SEQ_CST);
}

/* Position of the least significant set bit, from 1 (0 for none). */
inline int __ffs(int x)
{
    return __builtin_ffs(x);
}

/* The float whose bits are x. */
inline float __uint_as_float(unsigned x)
{
    float f;
    __builtin_memcpy(&f, &x, sizeof f);
    return f;
}

/* The bits of x. */
inline unsigned __float_as_uint(float x)
{
    unsigned u;
    __builtin_memcpy(&u, &x, sizeof u);
    return u;
}

/* Byte j (0..7) of y:x selected for each result byte by a nibble of s. */
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
    const unsigned long long v = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int b = 0; b < 4; b++)
        r |= (unsigned)(v >> (8 * ((s >> (4 * b)) & 7)) & 0xffu) << (8 * b);
    return r;
}

/* The low word of (hi:lo) >> (shift & 31). */
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift)
{
    return (unsigned)(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}

/* x rounded to nearest (ties to even) as an unsigned, saturated; NaN -> 0. */
inline unsigned __float2uint_rn(float x)
{
    if (!(x > 0.0f))
        return 0;
    const float r = std::nearbyint(x);
    return r >= 4294967296.0f ? 0xffffffffu : (unsigned)r;
}

inline size_t __cvta_generic_to_shared(const void *p)
{
    return (size_t)p;
}

/* The running block's dynamic shared memory (poisoned with 0xFF bytes). */
unsigned char *cvk_emu_dynamic_shared();

/* Runs body once per thread of every block of the grid; checks the
 * configuration as the device would (block size, grid extents, dynamic
 * shared memory against the function's opt-in). Records failures for
 * cudaGetLastError. */
cudaError_t cvk_emu_launch(const void *fn, dim3 grid, dim3 block, size_t smem,
                           std::function<void()> body);

#define CVK_DYNAMIC_SHARED(name) unsigned char *name = cvk_emu_dynamic_shared()
#define CVK_LAUNCH(K, grid, block, smem, stream, ARGS) \
    cvk_emu_launch((const void *)K, grid, block, smem, [=]() { K ARGS; })
#define CVK_LAUNCH_T(K, T, A, grid, block, smem, stream, ARGS) \
    cvk_emu_launch((const void *)K<T, A>, grid, block, smem, [=]() { K<T, A> ARGS; })

/* cp.async (src/cuda/device_common.cuh): here the copies happen at once, so
 * commit and wait have nothing to do. */
#define CVK_CP_ASYNC_DEFINED 1
inline void cvk_cp16(void *smem, const void *gmem)
{
    for (int i = 0; i < 16; i++)
        ((char *)smem)[i] = ((const char *)gmem)[i];
}
inline void cvk_cp8(void *smem, const void *gmem)
{
    for (int i = 0; i < 8; i++)
        ((char *)smem)[i] = ((const char *)gmem)[i];
}
inline void cvk_cp4(void *smem, const void *gmem)
{
    for (int i = 0; i < 4; i++)
        ((char *)smem)[i] = ((const char *)gmem)[i];
}
inline void cvk_cp_commit() {}
template <int N>
inline void cvk_cp_wait()
{
}

/* kernel_math.h defines these for nvcc only */
static inline uint8_t cvi_saturate_u8f(float v)
{
    if (!(v > 0.0f))
        return 0;
    if (v >= 255.0f)
        return 255;
    return (uint8_t)std::nearbyint(v);
}

static inline uint16_t cvi_saturate_u16f(float v)
{
    if (!(v > 0.0f))
        return 0;
    if (v >= 65535.0f)
        return 65535;
    return (uint16_t)std::nearbyint(v);
}

#endif

/*
 * gen_precompiled.cu - the generated direct kernels compiled ahead of time:
 * the generic instances of every input type and family (filter extents,
 * channels and offsets read at run time), which serve wherever NVRTC is
 * missing or fails, and a few specialised instances of the commonest
 * shapes. Each is reached through a launcher of one C signature
 * (cvk_gen_precompiled, gen.h).
 */
#include "gen.h"
#include "gen_kernels.cuh"
#include "device_common.cuh"

#include <string.h>

/* The launcher of one instance: raises its shared-memory limit when needed,
 * then launches it with the parameter block and weights by value. */
#define CVK_GEN_LAUNCHER(NAME, KERNEL, A, NW)                                                    \
    static cudaError_t NAME(const cvk_gen_params *p, const void *bank, const void *gw,           \
                            const unsigned g3[3], unsigned block, size_t smem,                   \
                            cudaStream_t stream, int *occupancy)                                 \
    {                                                                                            \
        if (smem > CVK_DEFAULT_SHARED) {                                                         \
            cudaError_t e = cudaFuncSetAttribute(                                                \
                (const void *)(KERNEL), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem); \
            if (e != cudaSuccess)                                                                \
                return e;                                                                        \
        }                                                                                        \
        if (occupancy)                                                                           \
            return cudaOccupancyMaxActiveBlocksPerMultiprocessor(                                \
                occupancy, (const void *)(KERNEL), (int)block, smem);                            \
        const dim3 grid(g3[0], g3[1], g3[2]);                                                    \
        const cvk_gen_params q = *p;                                                             \
        const cvk_gen_wbank<A, NW> b = *(const cvk_gen_wbank<A, NW> *)bank;                      \
        const A *g = (const A *)gw;                                                              \
        void (*kfn)(cvk_gen_params, cvk_gen_wbank<A, NW>, const A *) = KERNEL;                   \
        CVK_LAUNCH(kfn, grid, block, smem, stream, (q, b, g));                                   \
        return cudaGetLastError();                                                               \
    }

/* Template arguments of cvk_gen_tile and cvk_gen_strip, as a table row:
 * family, input type, acc double, C, kx, ky, kz, ox, sep, bx, by, tx, ty, nw. */
#define CVK_GEN_TILE_I(ID, T, A, TI, AD, C, KX, KY, KZ, OX, SEP, BX, BY, TX, TY, NW)              \
    CVK_GEN_LAUNCHER(ID, (cvk_gen_tile<T, A, -1, C, KX, KY, KZ, OX, SEP, BX, BY, TX, TY, NW>), A, \
                     NW)
#define CVK_GEN_STRIP_I(ID, T, A, TI, AD, C, KX, KY, OX, BX, BY, TX, TY, NW) \
    CVK_GEN_LAUNCHER(ID, (cvk_gen_strip<T, A, -1, C, KX, KY, OX, BX, BY, TX, TY, NW>), A, NW)

/* The generic instances: per input type, a 1-D tile (a row of 256 threads),
 * a 2-D/3-D tile, dense and separable, and a strip. */
#define CVK_GEN_GENERIC(P, T, A, TI, AD, BX)                                  \
    CVK_GEN_TILE_I(P##_t1, T, A, TI, AD, 0, 0, 0, 0, -1, 0, BX, 1, 256, 1, 0) \
    CVK_GEN_TILE_I(P##_t2, T, A, TI, AD, 0, 0, 0, 0, -1, 0, BX, 2, 32, 8, 0)  \
    CVK_GEN_TILE_I(P##_s2, T, A, TI, AD, 0, 0, 0, 0, -1, 1, BX, 2, 32, 8, 0)  \
    CVK_GEN_STRIP_I(P##_r2, T, A, TI, AD, 0, 0, 0, -1, BX, 2, 32, 8, 0)

CVK_GEN_GENERIC(g_f32, float, float, 0, 0, 4)
CVK_GEN_GENERIC(g_f64, double, double, 1, 1, 2)
CVK_GEN_GENERIC(g_u8, unsigned char, float, 2, 0, 4)
CVK_GEN_GENERIC(g_u16, unsigned short, float, 3, 0, 4)

/* Specialised instances of the commonest shapes (also how the CPU emulation
 * exercises the specialised code): float32 gray 3x3 dense, a 5-tap
 * separable strip, uint8 RGB 3x3, a 3x3x3 volume and a 1-D 31-tap filter. */
CVK_GEN_TILE_I(s_f32_3x3, float, float, 0, 0, 1, 3, 3, 1, 1, 0, 4, 4, 32, 8, 9)
CVK_GEN_STRIP_I(s_f32_sep5, float, float, 0, 0, 1, 5, 5, 2, 4, 4, 32, 8, 10)
CVK_GEN_TILE_I(s_u8c3_3x3, unsigned char, float, 2, 0, 3, 3, 3, 1, 1, 0, 12, 2, 32, 8, 9)
CVK_GEN_TILE_I(s_f32_3x3x3, float, float, 0, 0, 1, 3, 3, 3, 1, 0, 4, 2, 32, 8, 27)
CVK_GEN_TILE_I(s_f32_1d31, float, float, 0, 0, 1, 31, 1, 1, 15, 0, 16, 1, 256, 1, 31)

typedef struct {
    cvk_gen_shape s;
    cvk_gen_launch_fn fn;
} cvk_gen_entry;

#define E_T(FN, TI, AD, C, KX, KY, KZ, OX, SEP, BX, BY, TX, TY, NW) \
    {                                                               \
        {                                                           \
            CVK_GEN_TILE, TI, -1, AD, C, KX, KY, KZ, OX, SEP        \
            , BX, BY, TX, TY, NW                                    \
        }                                                           \
        , FN                                                        \
    }
#define E_S(FN, TI, AD, C, KX, KY, OX, BX, BY, TX, TY, NW)                       \
    {                                                                            \
        {CVK_GEN_STRIP, TI, -1, AD, C, KX, KY, 1, OX, 1, BX, BY, TX, TY, NW}, FN \
    }
#define E_GENERIC(P, TI, AD, BX)                                 \
    E_T(P##_t1, TI, AD, 0, 0, 0, 0, -1, 0, BX, 1, 256, 1, 0),    \
        E_T(P##_t2, TI, AD, 0, 0, 0, 0, -1, 0, BX, 2, 32, 8, 0), \
        E_T(P##_s2, TI, AD, 0, 0, 0, 0, -1, 1, BX, 2, 32, 8, 0), \
        E_S(P##_r2, TI, AD, 0, 0, 0, -1, BX, 2, 32, 8, 0)

static const cvk_gen_entry k_entries[] = {
    E_GENERIC(g_f32, 0, 0, 4),
    E_GENERIC(g_f64, 1, 1, 2),
    E_GENERIC(g_u8, 2, 0, 4),
    E_GENERIC(g_u16, 3, 0, 4),
    E_T(s_f32_3x3, 0, 0, 1, 3, 3, 1, 1, 0, 4, 4, 32, 8, 9),
    E_S(s_f32_sep5, 0, 0, 1, 5, 5, 2, 4, 4, 32, 8, 10),
    E_T(s_u8c3_3x3, 2, 0, 3, 3, 3, 1, 1, 0, 12, 2, 32, 8, 9),
    E_T(s_f32_3x3x3, 0, 0, 1, 3, 3, 3, 1, 0, 4, 2, 32, 8, 27),
    E_T(s_f32_1d31, 0, 0, 1, 31, 1, 1, 15, 0, 16, 1, 256, 1, 31),
};

extern "C" cvk_gen_launch_fn cvk_gen_precompiled(const cvk_gen_shape *s)
{
    for (size_t i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++)
        if (memcmp(&k_entries[i].s, s, sizeof *s) == 0)
            return k_entries[i].fn;
    return NULL;
}

extern "C" cudaError_t cvk_gen_launch_kernel(const void *fn, const unsigned g3[3], unsigned block,
                                             void **args, size_t smem, cudaStream_t stream)
{
    return cudaLaunchKernel(fn, dim3(g3[0], g3[1], g3[2]), dim3(block, 1, 1), args, smem, stream);
}

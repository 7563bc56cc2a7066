/*
 * gen_kernels.cuh - the generated direct kernels (see gen.h): templates
 * compiled three ways from this one source: by NVRTC at plan time,
 * specialised to the exact filter extents, channels, types and horizontal
 * offset (jit.c); by nvcc for the generic instances, whose extents and
 * channels are read at run time (gen_precompiled.cu); and by g++ for the
 * CPU emulation (tests/emu). So it includes nothing but plain headers.
 *
 * Both families stage input into shared memory converted to the
 * accumulation type A (float, or double for float64 input), with 16-byte
 * loads where rows allow, ghost cells mapped through cvi_boundary_index only
 * on tiles that reach past an edge. A thread computes BY rows x BX
 * consecutive elements of interleaved channels (taps C elements apart) in
 * registers; each shared-memory row it reads feeds every output row it
 * contributes to, and weights are operands from the parameter bank at
 * compile-time offsets (in the specialised kernels).
 *
 *   cvk_gen_tile   an output tile of TY*BY rows x TX*BX elements per block;
 *                  3-D streams along z through KZ rolling accumulators, so
 *                  each input plane is staged once; separable 3-D filters
 *                  are applied along x and y per plane, then along z
 *   cvk_gen_strip  separable 1-D/2-D: a strip of TX*BX elements walking down
 *                  `zchunk` rows; rows are staged and x-filtered once into a
 *                  ring of KY + TY*BY - 1 rows, from which the y taps run
 */
#ifndef CONVOLVE_CUDA_GEN_KERNELS_CUH
#define CONVOLVE_CUDA_GEN_KERNELS_CUH

#ifndef __CUDACC_RTC__ /* nvcc, and the CPU emulation's keywords (tests/emu) */
#include <cuda_runtime.h>
#endif
#include "gen_params.h"
#include "../kernel_math.h"

#ifndef CVK_DYNAMIC_SHARED
#define CVK_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

/* Blocks a multiprocessor should hold at once (registers are capped to fit). */
#ifndef CVK_GEN_MIN_BLOCKS
#define CVK_GEN_MIN_BLOCKS 3
#endif
/* 16-byte units each thread loads before storing any while staging. */
#ifndef CVK_GEN_STAGE_UNITS
#define CVK_GEN_STAGE_UNITS 4
#endif

/* Fully unrolled loops may hold this many FMAs; beyond, rows loop at run time. */
#define CVK_GEN_UNROLL 4096
/* Registers a thread spends on one window of a shared-memory row. */
#define CVK_GEN_WINDOW 32

/* Weights in the parameter bank (a `const __grid_constant__` parameter):
 * FMAs read them as constant-bank operands. NW = 0: in device memory. */
template <typename A, int NW>
struct cvk_gen_wbank {
    A w[NW];
};
template <typename A>
struct cvk_gen_wbank<A, 0> {
    A w[1];
};

/* Compile-time value if non-zero, else the run-time one. */
#define CVK_CT(ct, rt) ((ct) ? (ct) : (rt))

__device__ __forceinline__ long long cvk_gen_floordiv(long long a, long long b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* cvi_boundary_index with the in-range test inline and the rest out of line
 * (it is rare, and its divisions are long). */
__device__ __noinline__ long long cvk_gen_map_slow(long long j, long long n, int mode)
{
    return cvi_boundary_index(j, n, mode);
}
__device__ __forceinline__ long long cvk_gen_map(long long j, long long n, int mode)
{
    return j >= 0 && j < n ? j : cvk_gen_map_slow(j, n, mode);
}

/* ---- loads and stores ---------------------------------------------------- */

/* The VW elements of T in 16 loaded bytes, as A. */
template <typename T, typename A, int VW>
__device__ __forceinline__ void cvk_gen_unpack(const uint4 &q, A (&v)[VW])
{
    const unsigned int u[4] = {q.x, q.y, q.z, q.w};
    if (sizeof(T) == 1 && sizeof(A) == 4) {
        /* byte permutes build 2^23 + element (bits 0x4B0000bb) and one
         * subtraction leaves it: no conversion instructions (an eighth of
         * the FMA rate) */
#pragma unroll
        for (int i = 0; i < VW; i++)
            v[i] = (A)(__uint_as_float(__byte_perm(u[i / 4], 0x4B000000u, 0x7440 | (i % 4))) -
                       8388608.0f);
    } else if (sizeof(T) == 2 && sizeof(A) == 4) {
#pragma unroll
        for (int i = 0; i < VW; i++)
            v[i] = (A)(__uint_as_float(
                           __byte_perm(u[i / 2], 0x4B000000u, i % 2 ? 0x7432 : 0x7410)) -
                       8388608.0f);
    } else if (sizeof(T) == 1) {
#pragma unroll
        for (int i = 0; i < VW; i++)
            v[i] = (A)((u[i / 4] >> (8 * (i % 4))) & 0xffu);
    } else if (sizeof(T) == 2) {
#pragma unroll
        for (int i = 0; i < VW; i++)
            v[i] = (A)((u[i / 2] >> (16 * (i % 2))) & 0xffffu);
    } else {
#pragma unroll
        for (int i = 0; i < VW; i++)
            v[i] = (A)((const T *)u)[i];
    }
}

/* N consecutive A at p (aligned to N * sizeof(A) when that is 16 bytes). */
template <typename A, int N>
__device__ __forceinline__ void cvk_gen_lds(const A *p, A *v)
{
    if (sizeof(A) == 4 && N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            float4 q = *(const float4 *)((const float *)p + i);
            v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = p[i];
    }
}

template <typename A, int N>
__device__ __forceinline__ void cvk_gen_sts(A *p, const A *v)
{
    if (sizeof(A) == 4 && N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 4)
            *(float4 *)((float *)p + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < N; i++)
            p[i] = v[i];
    }
}

/* One output element of type TO from the accumulator. */
__device__ __forceinline__ void cvk_gen_put(float *p, float v)
{
    *p = v;
}
__device__ __forceinline__ void cvk_gen_put(float *p, double v)
{
    *p = (float)v;
}
__device__ __forceinline__ void cvk_gen_put(double *p, float v)
{
    *p = (double)v;
}
__device__ __forceinline__ void cvk_gen_put(double *p, double v)
{
    *p = v;
}
/* Float results rounded to nearest (ties to even) and saturated
 * (cvi_saturate_u8f's and cvi_saturate_u16f's results, NaN -> 0) without
 * conversion instructions: clamped, then 2^23 added rounds to the integer
 * in the low bits (device_common.cuh's cvk_round_low, which NVRTC's
 * compile of this header cannot include). */
__device__ __forceinline__ void cvk_gen_put(unsigned char *p, float v)
{
    *p = (unsigned char)__float_as_uint(fminf(fmaxf(v, 0.0f), 255.0f) + 8388608.0f);
}
__device__ __forceinline__ void cvk_gen_put(unsigned char *p, double v)
{
    *p = cvi_saturate_u8(v);
}
__device__ __forceinline__ void cvk_gen_put(unsigned short *p, float v)
{
    *p = (unsigned short)__float_as_uint(fminf(fmaxf(v, 0.0f), 65535.0f) + 8388608.0f);
}
__device__ __forceinline__ void cvk_gen_put(unsigned short *p, double v)
{
    *p = cvi_saturate_u16(v);
}

/* Stores BX results element by element from element e of row `row`
 * (mapped through the x and channel strides when the output is not
 * contiguous); out of line: only edges and unusual layouts come here. */
template <typename A, int BX>
struct cvk_gen_vals {
    A v[BX];
};

template <typename TO, typename A, int BX>
__device__ __noinline__ void cvk_gen_store_elems(const cvk_gen_params &p, TO *row, long long e,
                                                 long long WC, int C, cvk_gen_vals<A, BX> w)
{
    const A *v = w.v;
    for (int i = 0; i < BX; i++) {
        const long long x = e + i;
        if (x >= WC)
            break;
        if (p.out_contig) {
            cvk_gen_put(row + x, v[i]);
        } else {
            const long long pix = x / C, ch = x - pix * C;
            cvk_gen_put(row + pix * p.os[2] + ch * p.ocs, v[i]);
        }
    }
}

/* Stores a thread's BX results at element e of row `row`: one vector
 * store when the row allows, else element by element (mapped through the
 * x and channel strides when the output is not contiguous). */
template <typename TO, typename A, int BX>
__device__ __forceinline__ void cvk_gen_store_as(const cvk_gen_params &p, TO *row, long long e,
                                                 long long WC, int C, const A (&v)[BX])
{
    if (p.out_contig && p.out_vec && e + BX <= WC) {
        TO q[BX];
#pragma unroll
        for (int i = 0; i < BX; i++)
            cvk_gen_put(&q[i], v[i]);
        if (sizeof(TO) * BX == 16)
            *(uint4 *)(row + e) = *(const uint4 *)q;
        else if (sizeof(TO) * BX == 8)
            *(uint2 *)(row + e) = *(const uint2 *)q;
        else if (sizeof(TO) * BX == 4)
            *(unsigned int *)(row + e) = *(const unsigned int *)q;
        else
#pragma unroll
            for (int i = 0; i < BX; i++)
                row[e + i] = q[i];
        return;
    }
    cvk_gen_vals<A, BX> w;
#pragma unroll
    for (int i = 0; i < BX; i++)
        w.v[i] = v[i];
    cvk_gen_store_elems<TO, A, BX>(p, row, e, WC, C, w);
}

/* Stores a thread's BX results at element e of row y of plane z: as the
 * output type OT (convolve_dtype), or the one p names when OT < 0. */
template <int OT, typename A, int BX>
__device__ __forceinline__ void cvk_gen_store(const cvk_gen_params &p, long long boff, long long z,
                                              long long y, long long e, int C, const A (&v)[BX])
{
    const long long WC = p.n[2] * C;
    const long long off = boff + z * p.os[0] + y * p.os[1];
    const int ot = OT >= 0 ? OT : p.out_type;
    if (ot == 0)
        cvk_gen_store_as<float, A, BX>(p, (float *)p.out + off, e, WC, C, v);
    else if (ot == 1)
        cvk_gen_store_as<double, A, BX>(p, (double *)p.out + off, e, WC, C, v);
    else if (ot == 2)
        cvk_gen_store_as<unsigned char, A, BX>(p, (unsigned char *)p.out + off, e, WC, C, v);
    else
        cvk_gen_store_as<unsigned short, A, BX>(p, (unsigned short *)p.out + off, e, WC, C, v);
}

/* ---- staging ------------------------------------------------------------- */

/* Input element g (in elements of interleaved channels, may lie outside the
 * row) of row `row` (NULL: the row is outside in CONSTANT mode). */
template <typename T, typename A>
__device__ __noinline__ A cvk_gen_fetch(const cvk_gen_params &p, const T *row, long long g,
                                        long long WC, int C)
{
    if (!row)
        return (A)p.cval;
    if (p.in_contig && g >= 0 && g < WC)
        return (A)__ldg(row + g);
    const long long pix = cvk_gen_floordiv(g, C), ch = g - pix * C;
    const long long m = cvk_gen_map(pix, p.n[2], p.mode);
    return m < 0 ? (A)p.cval : (A)__ldg(row + m * p.is[2] + ch * p.ics);
}

/* Stages rows [y0, y0 + R) of input plane z (unmapped indices) and
 * elements [g0, g0 + L) of each (g0 a multiple of 16 bytes' elements) into
 * s (R rows of L), as A. `rows` threads-worth of units: 16-byte chunks when
 * the input allows, else elements. */
template <typename T, typename A, int NT>
__device__ __forceinline__ void cvk_gen_stage(const cvk_gen_params &p, const T *base, long long z,
                                              long long y0, int R, long long g0, int L, int C, A *s)
{
    enum { VW = 16 / sizeof(T), U = CVK_GEN_STAGE_UNITS };
    const long long WC = p.n[2] * C;
    const long long zm = cvk_gen_map(z, p.n[0], p.mode);
    const T *plane = zm < 0 ? (const T *)0 : base + zm * p.is[0];
    if (p.in_vec) {
        const int LQ = L / VW, units = R * LQ;
        for (int u0 = threadIdx.x; u0 < units; u0 += NT * U) {
            uint4 raw[U];
            int edge = 0; /* bit k: unit k reaches past an edge (mapped below) */
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int u = u0 + k * NT;
                if (u >= units)
                    break;
                const int r = u / LQ, q = u - r * LQ;
                const long long ym = plane ? cvk_gen_map(y0 + r, p.n[1], p.mode) : -1;
                const long long g = g0 + (long long)q * VW;
                if (ym >= 0 && g >= 0 && g + VW <= WC)
                    raw[k] = __ldg((const uint4 *)(plane + ym * p.is[1] + g));
                else
                    edge |= 1 << k;
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int u = u0 + k * NT;
                if (u >= units)
                    break;
                A v[VW];
                if (edge >> k & 1) {
                    const int r = u / LQ, q = u - r * LQ;
                    const long long ym = plane ? cvk_gen_map(y0 + r, p.n[1], p.mode) : -1;
                    const T *row = ym < 0 ? (const T *)0 : plane + ym * p.is[1];
                    for (int i = 0; i < VW; i++)
                        v[i] = cvk_gen_fetch<T, A>(p, row, g0 + (long long)q * VW + i, WC, C);
                } else {
                    cvk_gen_unpack<T, A, VW>(raw[k], v);
                }
                cvk_gen_sts<A, VW>(s + (long long)u * VW, v);
            }
        }
    } else {
        const int units = R * L;
        for (int u0 = threadIdx.x; u0 < units; u0 += NT * U) {
            A v[U];
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int u = u0 + k * NT;
                if (u >= units)
                    break;
                const int r = u / L, c = u - r * L;
                const long long ym = plane ? cvk_gen_map(y0 + r, p.n[1], p.mode) : -1;
                const T *row = ym < 0 ? (const T *)0 : plane + ym * p.is[1];
                v[k] = cvk_gen_fetch<T, A>(p, row, g0 + c, WC, C);
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                const int u = u0 + k * NT;
                if (u >= units)
                    break;
                s[u] = v[k];
            }
        }
    }
}

/* ---- the taps ------------------------------------------------------------ */

/*
 * acc[o][i] += sum over ky < KY, kx < KX of w[ky * KX + kx] * s[(o + ky) * pitch + D + i + kx * C]
 * for o < BYO, i < BX. Specialised (all of KX, KY, CC, DD known): the rows
 * stream once, each feeding every output row it reaches, through windows
 * of at most CVK_GEN_WINDOW registers; fully unrolled up to CVK_GEN_UNROLL
 * FMAs, else the rows loop at run time. Generic: everything at run time.
 */
template <typename A, int KX, int KY, int CC, int DD, int BYO, int BX>
__device__ __forceinline__ void cvk_gen_taps(const A *s, int pitch, const A *w, A (&acc)[BYO][BX],
                                             int kx_rt, int ky_rt, int c_rt, int d_rt)
{
    if (KX == 0 || KY == 0 || CC == 0 || DD < 0) {
        const int kxn = CVK_CT(KX, kx_rt), kyn = CVK_CT(KY, ky_rt), C = CVK_CT(CC, c_rt);
        const int D = DD >= 0 ? DD : d_rt;
        for (int r = 0; r < BYO + kyn - 1; r++) {
            const A *srow = s + r * pitch + D;
            for (int kx = 0; kx < kxn; kx++) {
                A v[BX];
#pragma unroll
                for (int i = 0; i < BX; i++)
                    v[i] = srow[i + kx * C];
#pragma unroll
                for (int o = 0; o < BYO; o++) {
                    const int ky = r - o;
                    if (ky >= 0 && ky < kyn) {
                        const A wk = w[ky * kxn + kx];
#pragma unroll
                        for (int i = 0; i < BX; i++)
                            acc[o][i] += wk * v[i];
                    }
                }
            }
        }
        return;
    } else {
        enum {
            C = CC > 0 ? CC : 1,
            D = DD > 0 ? DD : 0,
            KXc = KX > 0 ? KX : 1,
            KYc = KY > 0 ? KY : 1
        };
        enum { VA = 16 / sizeof(A) };
        /* taps per window: BX + (TC - 1) * C elements in CVK_GEN_WINDOW registers */
        enum { TC0 = (CVK_GEN_WINDOW - BX) / C + 1, TC = TC0 < 1 ? 1 : TC0 > KXc ? KXc : TC0 };
        enum { FULL = BYO * KYc * KXc * BX <= CVK_GEN_UNROLL };
        const int rows = BYO + KYc - 1;
#pragma unroll(FULL ? BYO + KYc - 1 : 1)
        for (int r = 0; r < rows; r++) {
            const A *srow = s + r * pitch;
#pragma unroll
            for (int k0 = 0; k0 < KXc; k0 += TC) {
                /* the window of taps k0 .. k0 + TC - 1: aligned vector loads */
                const int first = D + k0 * C;
                const int w0 = first / VA * VA;
                const int tcn = KXc - k0 < TC ? KXc - k0 : TC;
                const int wn = first - w0 + BX + (tcn - 1) * C;
                const int nv = (wn + VA - 1) / VA;
                A win[(CVK_GEN_WINDOW + 2 * VA) / VA * VA];
#pragma unroll
                for (int j = 0; j < (CVK_GEN_WINDOW + 2 * VA) / VA; j++)
                    if (j < nv)
                        cvk_gen_lds<A, VA>(srow + w0 + j * VA, win + j * VA);
#pragma unroll
                for (int o = 0; o < BYO; o++) {
                    const int ky = r - o;
                    if (ky >= 0 && ky < KYc) {
#pragma unroll
                        for (int t = 0; t < TC; t++) {
                            if (t < tcn) {
                                const A wk = w[ky * KXc + k0 + t];
#pragma unroll
                                for (int i = 0; i < BX; i++)
                                    acc[o][i] += wk * win[first - w0 + i + t * C];
                            }
                        }
                    }
                }
            }
        }
    }
}

/* ---- staging ahead of use ---------------------------------------------------- *
 * A stage (a plane's rows of a tile, or a chunk of a strip's rows) is R rows
 * of L elements; a thread's share is its 16-byte units u = tid + k * NT.
 * cvk_gen_prefetch issues their loads into registers, so they are in
 * flight while the block computes the stage before; cvk_gen_commit writes
 * them to shared memory as A, units that reach past an edge mapped there. */

template <int UN>
struct cvk_gen_pref {
    uint4 raw[UN > 0 ? UN : 1];
    unsigned edge; /* bit k: unit k reaches past an edge (or is outside the stage) */
};

template <typename T, int NT, int UN>
__device__ __forceinline__ void cvk_gen_prefetch(const cvk_gen_params &p, const T *base,
                                                 long long z, long long y0, int R, long long g0,
                                                 int L, int C, cvk_gen_pref<UN> &pf)
{
    enum { VW = 16 / sizeof(T) };
    const long long WC = p.n[2] * C;
    const int LQ = L / VW, units = R * LQ;
    const long long zm = cvk_gen_map(z, p.n[0], p.mode);
    const T *plane = base + (zm < 0 ? 0 : zm) * p.is[0];
    pf.edge = 0;
#pragma unroll
    for (int k = 0; k < UN; k++) {
        const int u = threadIdx.x + k * NT;
        const int r = u / LQ, q = u - r * LQ;
        const long long ym = cvk_gen_map(y0 + r, p.n[1], p.mode);
        const long long g = g0 + (long long)q * VW;
        if (u < units && zm >= 0 && ym >= 0 && g >= 0 && g + VW <= WC)
            pf.raw[k] = __ldg((const uint4 *)(plane + ym * p.is[1] + g));
        else
            pf.edge |= 1u << k;
    }
}

template <typename T, typename A, int NT, int UN>
__device__ __forceinline__ void cvk_gen_commit(const cvk_gen_params &p, const T *base, long long z,
                                               long long y0, int R, long long g0, int L, int C,
                                               const cvk_gen_pref<UN> &pf, A *s)
{
    enum { VW = 16 / sizeof(T) };
    const long long WC = p.n[2] * C;
    const int LQ = L / VW, units = R * LQ;
#pragma unroll
    for (int k = 0; k < UN; k++) {
        const int u = threadIdx.x + k * NT;
        if (u >= units)
            break;
        A v[VW];
        if (pf.edge >> k & 1) {
            const int r = u / LQ, q = u - r * LQ;
            const long long zm = cvk_gen_map(z, p.n[0], p.mode);
            const long long ym = zm < 0 ? -1 : cvk_gen_map(y0 + r, p.n[1], p.mode);
            const T *row = ym < 0 ? (const T *)0 : base + zm * p.is[0] + ym * p.is[1];
            for (int i = 0; i < VW; i++)
                v[i] = cvk_gen_fetch<T, A>(p, row, g0 + (long long)q * VW + i, WC, C);
        } else {
            cvk_gen_unpack<T, A, VW>(pf.raw[k], v);
        }
        cvk_gen_sts<A, VW>(s + (long long)u * VW, v);
    }
}

/* Units a thread stages ahead (0: the stage is staged when needed). */
#define CVK_GEN_MAX_UNITS 8
#define CVK_GEN_UNITS(R, L, VW, NT) (((R) * ((L) / (VW)) + (NT)-1) / (NT))

/* ---- steps of both kernels (inlined: arrays stay in registers) ----------- */

/* Copies the p.nw weights at gw into shared memory sw (weights outside the
 * parameter bank). */
template <typename A, int NT>
__device__ __forceinline__ void cvk_gen_load_weights(const cvk_gen_params &p, A *sw, const A *gw)
{
    for (int i = threadIdx.x; i < p.nw; i += NT)
        sw[i] = gw[i];
    __syncthreads();
}

template <typename A, int BYO, int BX>
__device__ __forceinline__ void cvk_gen_zero(A (&v)[BYO][BX])
{
#pragma unroll
    for (int o = 0; o < BYO; o++)
#pragma unroll
        for (int i = 0; i < BX; i++)
            v[o][i] = (A)0;
}

/* ---- cvk_gen_tile ---------------------------------------------------------- */

/* Rolling accumulators along z: CVK_GEN_ROLL (gen_params.h). */

/* Where tile t of the flattened grid (x tiles, y tiles, z chunks, batches) lies. */
struct cvk_gen_tpos {
    long long e_tile, y_tile, zs, ze, batch;
};

__device__ __forceinline__ cvk_gen_tpos cvk_gen_tile_at(const cvk_gen_params &p, long long t,
                                                        int SW, int PH)
{
    cvk_gen_tpos q;
    const long long tx = t % p.tiles_x;
    t /= p.tiles_x;
    const long long ty = t % p.tiles_y;
    t /= p.tiles_y;
    const long long zc = t % p.nz;
    q.batch = t / p.nz;
    q.e_tile = tx * SW;
    q.y_tile = ty * PH;
    q.zs = zc * p.zchunk;
    q.ze = q.zs + p.zchunk < p.n[0] ? q.zs + p.zchunk : p.n[0];
    return q;
}

/* Separable cvk_gen_tile, one staged plane: x taps on every staged row
 * (s_in, R rows of L) into s_h (R rows of TX * BX), then the y taps of this
 * thread's BY x BX outputs (thread tx, ty), added into each acc[a] times
 * its z weight: wz[KZR - 1 - a] when rolling, else wz[k]. */
template <typename A, int KX, int KY, int CC, int DD, int ROLL, int KZR, int BX, int BY, int TX,
          int TY>
__device__ __forceinline__ void cvk_gen_tile_sep(const A *s_in, A *s_h, int R, int L, const A *wx,
                                                 const A *wy, const A *wz, int k, int kx, int ky,
                                                 int C, int D, int tx, int ty,
                                                 A (&acc)[KZR][BY][BX])
{
    enum { NT = TX * TY, SW = TX * BX };
    for (int u = threadIdx.x; u < R * TX; u += NT) {
        const int r = u / TX, xb = u - r * TX;
        A h[1][BX];
        cvk_gen_zero<A, 1, BX>(h);
        cvk_gen_taps<A, KX, 1, CC, DD, 1, BX>(s_in + r * L + xb * BX, L, wx, h, kx, 1, C, D);
        cvk_gen_sts<A, BX>(s_h + r * SW + xb * BX, h[0]);
    }
    __syncthreads();
    A pl[BY][BX];
    cvk_gen_zero<A, BY, BX>(pl);
    cvk_gen_taps<A, 1, KY, 1, 0, BY, BX>(s_h + ty * BY * SW + tx * BX, SW, wy, pl, 1, ky, 1, 0);
#pragma unroll
    for (int a = 0; a < KZR; a++) {
        const A wk = wz[ROLL ? KZR - 1 - a : k];
#pragma unroll
        for (int o = 0; o < BY; o++)
#pragma unroll
            for (int i = 0; i < BX; i++)
                acc[a][o][i] += wk * pl[o][i];
    }
}

/* Rolling accumulators move one plane on: acc[a] = acc[a + 1], the last
 * cleared. */
template <typename A, int KZR, int BY, int BX>
__device__ __forceinline__ void cvk_gen_roll(A (&acc)[KZR][BY][BX])
{
#pragma unroll
    for (int a = 0; a + 1 < KZR; a++)
#pragma unroll
        for (int o = 0; o < BY; o++)
#pragma unroll
            for (int i = 0; i < BX; i++)
                acc[a][o][i] = acc[a + 1][o][i];
    cvk_gen_zero<A, BY, BX>(acc[KZR - 1]);
}

template <typename T, typename A, int OT, int CC, int KX, int KY, int KZ, int OX, int SEP
, int BX, int BY, int TX, int TY,
    int NW > __global__ void __launch_bounds__(TX *TY, CVK_GEN_MIN_BLOCKS)
                 cvk_gen_tile(const __grid_constant__ cvk_gen_params p,
                              const __grid_constant__ cvk_gen_wbank<A, NW> wb, const A *gw)
{
    enum { NT = TX * TY, SW = TX * BX, PH = TY * BY, VW = 16 / sizeof(T) };
    enum { SPEC = KX > 0 && KY > 0 && KZ > 0 && CC > 0 && OX >= 0 };
    enum { Cc = CC > 0 ? CC : 1, KXc = KX > 0 ? KX : 1, KYc = KY > 0 ? KY : 1 };
    /* the horizontal window offset and the staged row, known when
     * specialised (as cvk_gen_geometry computes them) */
    enum { HLa_ = (OX * Cc + VW - 1) / VW * VW, DD = SPEC ? HLa_ - OX * Cc : -1 };
    enum { L_ = (HLa_ + SW + (KXc - 1 - OX) * Cc + VW - 1) / VW * VW, R_ = PH + KYc - 1 };
    enum { UN0 = SPEC ? CVK_GEN_UNITS(R_, L_, VW, NT) : 0 };
    enum { UN = UN0 <= CVK_GEN_MAX_UNITS ? UN0 : 0 };
    enum { ROLL = CVK_GEN_ROLL(KZ, BY, BX), KZR = ROLL ? KZ : 1 };
    const int C = CVK_CT(CC, p.C);
    const int kx = CVK_CT(KX, p.k[2]), ky = CVK_CT(KY, p.k[1]), kz = CVK_CT(KZ, p.k[0]);
    const int kk[3] = {kz, ky, kx};
    cvk_gen_geom G;
    cvk_gen_geometry(0, (int)sizeof(T), C, kk, OX >= 0 ? OX : p.koff[2], SEP, BX, BY, TX, TY,
                     NW == 0, &G);
    const int L = G.L, R = G.R, D = G.D, HLa = G.HLa;

    CVK_DYNAMIC_SHARED(smem);
    A *sw = (A *)smem;
    A *s_in = sw + G.W;
    A *s_h = s_in + R * L;
    const A *w = NW ? wb.w : sw;
    if (!NW)
        cvk_gen_load_weights<A, NT>(p, sw, gw);
    /* separable: z taps, then y, then x */
    const A *wz = w, *wy = w + kz, *wx = w + kz + ky;
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const long long WC = p.n[2] * C;
    const long long total = p.tiles_x * p.tiles_y * p.nz * p.nbatch;
    /* stages of a tile: ROLL, its planes and KZ - 1 more; else kz per output plane */
    const long long extra = ROLL ? KZR - 1 : 0, mult = ROLL ? 1 : kz;

    cvk_gen_pref<UN> pf;
    long long t = blockIdx.x, j = 0;
    cvk_gen_tpos q = cvk_gen_tile_at(p, t, SW, PH);
    if (UN && p.in_vec && t < total)
        cvk_gen_prefetch<T, NT, UN>(p, (const T *)p.in + q.batch * p.ibs, q.zs - p.koff[0],
                                    q.y_tile - p.koff[1], R, q.e_tile - HLa, L, C, pf);
    A acc[KZR][BY][BX];
    while (t < total) {
        const T *base = (const T *)p.in + q.batch * p.ibs;
        const long long stages = (q.ze - q.zs) * mult + extra;
        const long long y0 = q.y_tile - p.koff[1], g0 = q.e_tile - HLa;
        /* this stage's output plane z and its kz index k */
        const long long z = ROLL ? q.zs + j - (KZR - 1) : q.zs + j / mult;
        const int k = ROLL ? 0 : (int)(j % mult);
        const long long zin = ROLL ? q.zs - p.koff[0] + j : z - p.koff[0] + k;
        if (j == 0 || (!ROLL && k == 0)) {
#pragma unroll
            for (int a = 0; a < KZR; a++)
                cvk_gen_zero<A, BY, BX>(acc[a]);
        }
        __syncthreads();
        if (UN && p.in_vec)
            cvk_gen_commit<T, A, NT, UN>(p, base, zin, y0, R, g0, L, C, pf, s_in);
        else
            cvk_gen_stage<T, A, NT>(p, base, zin, y0, R, g0, L, C, s_in);
        __syncthreads();
        /* the next stage: its loads fly while this one computes */
        long long tn = t, jn = j + 1;
        cvk_gen_tpos qn = q;
        if (jn >= stages) {
            tn = t + gridDim.x, jn = 0;
            qn = cvk_gen_tile_at(p, tn, SW, PH);
        }
        if (UN && p.in_vec && tn < total) {
            const long long zn = ROLL ? qn.zs - p.koff[0] + jn
                                      : qn.zs + jn / mult - p.koff[0] + jn % mult;
            cvk_gen_prefetch<T, NT, UN>(p, (const T *)p.in + qn.batch * p.ibs, zn,
                                        qn.y_tile - p.koff[1], R, qn.e_tile - HLa, L, C, pf);
        }
        const A *s_me = s_in + ty * BY * L + tx * BX;
        if (SEP) /* x taps on every staged row, then y taps, then z */
            cvk_gen_tile_sep<A, KX, KY, CC, DD, ROLL, KZR, BX, BY, TX, TY>(
                s_in, s_h, R, L, wx, wy, wz, k, kx, ky, C, D, tx, ty, acc);
        else
#pragma unroll
            for (int a = 0; a < KZR; a++)
                cvk_gen_taps<A, KX, KY, CC, DD, BY, BX>(
                    s_me, L, w + (ROLL ? KZR - 1 - a : k) * ky * kx, acc[a], kx, ky, C, D);
        /* acc[0] holds output plane z once its last input plane is in */
        if (ROLL ? z >= q.zs : k == kz - 1) {
            const long long e = q.e_tile + tx * BX, yo = q.y_tile + ty * BY;
#pragma unroll
            for (int o = 0; o < BY; o++)
                if (yo + o < p.n[1] && e < WC)
                    cvk_gen_store<OT, A, BX>(p, q.batch * p.obs, z, yo + o, e, C, acc[0][o]);
        }
        if (ROLL)
            cvk_gen_roll<A, KZR, BY, BX>(acc);
        t = tn, j = jn, q = qn;
    }
}

/* ---- cvk_gen_strip --------------------------------------------------------- */

/* Where strip t of the flattened grid (x strips, row chunks, batches) lies:
 * elements from e_tile, rows [ys, ye) of the H. */
struct cvk_gen_spos {
    long long e_tile, ys, ye, batch;
};

__device__ __forceinline__ cvk_gen_spos cvk_gen_strip_at(const cvk_gen_params &p, long long t,
                                                         int SW, long long H)
{
    cvk_gen_spos q;
    const long long tx = t % p.tiles_x, r = t / p.tiles_x;
    q.e_tile = tx * SW;
    q.ys = (r % p.tiles_y) * p.zchunk;
    q.ye = q.ys + p.zchunk < H ? q.ys + p.zchunk : H;
    q.batch = r / p.tiles_y;
    return q;
}

/* Strip stage j: x taps on each of the RC staged rows (s_in, rows of L)
 * into ring slot (j RC + r) % RING; slots past the ring's period (up to
 * ring_rows) repeat its first rows, so every window of BY + ky - 1 rows is
 * contiguous. */
template <typename A, int KX, int CC, int DD, int BX, int TX, int NT, int RC>
__device__ __forceinline__ void cvk_gen_strip_xtaps(const A *s_in, int L, A *ring, int RING,
                                                    int ring_rows, long long j, const A *wx, int kx,
                                                    int C, int D)
{
    enum { SW = TX * BX };
    for (int u = threadIdx.x; u < RC * TX; u += NT) {
        const int r = u / TX, xb = u - r * TX;
        A h[1][BX];
        cvk_gen_zero<A, 1, BX>(h);
        cvk_gen_taps<A, KX, 1, CC, DD, 1, BX>(s_in + r * L + xb * BX, L, wx, h, kx, 1, C, D);
        const int sl = (int)((j * RC + r) % RING);
        cvk_gen_sts<A, BX>(ring + sl * SW + xb * BX, h[0]);
        if (sl < ring_rows - RING)
            cvk_gen_sts<A, BX>(ring + (sl + RING) * SW + xb * BX, h[0]);
    }
}

template <typename T, typename A, int OT, int CC, int KX, int KY, int OX, int BX, int BY, int TX,
          int TY, int NW>
__global__ void __launch_bounds__(TX *TY, CVK_GEN_MIN_BLOCKS)
    cvk_gen_strip(const __grid_constant__ cvk_gen_params p,
                  const __grid_constant__ cvk_gen_wbank<A, NW> wb, const A *gw)
{
    enum { NT = TX * TY, SW = TX * BX, RC = TY * BY, VW = 16 / sizeof(T) };
    enum { SPEC = KX > 0 && KY > 0 && CC > 0 && OX >= 0 };
    enum { Cc = CC > 0 ? CC : 1, KXc = KX > 0 ? KX : 1 };
    enum { HLa_ = (OX * Cc + VW - 1) / VW * VW, DD = SPEC ? HLa_ - OX * Cc : -1 };
    enum { L_ = (HLa_ + SW + (KXc - 1 - OX) * Cc + VW - 1) / VW * VW };
    enum { UN0 = SPEC ? CVK_GEN_UNITS(RC, L_, VW, NT) : 0 };
    enum { UN = UN0 <= CVK_GEN_MAX_UNITS ? UN0 : 0 };
    const int C = CVK_CT(CC, p.C);
    const int kx = CVK_CT(KX, p.k[2]), ky = CVK_CT(KY, p.k[1]);
    const int kk[3] = {1, ky, kx};
    cvk_gen_geom G;
    cvk_gen_geometry(1, (int)sizeof(T), C, kk, OX >= 0 ? OX : p.koff[2], 1, BX, BY, TX, TY, NW == 0,
                     &G);
    const int L = G.L, D = G.D, HLa = G.HLa, RING = G.ring;

    CVK_DYNAMIC_SHARED(smem);
    A *sw = (A *)smem;
    A *s_in = sw + G.W;
    A *ring = s_in + RC * L;
    const A *w = NW ? wb.w : sw;
    if (!NW)
        cvk_gen_load_weights<A, NT>(p, sw, gw);
    const A *wy = w, *wx = w + ky;
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const long long H = p.n[1], WC = p.n[2] * C;
    const long long total = p.tiles_x * p.tiles_y * p.nbatch;

    /* A strip's stages: stage j stages and x-filters input rows
     * [j RC, (j + 1) RC) (relative to its first output row minus koff),
     * then outputs [(j + 1) RC - ky + 1 - RC, (j + 1) RC - ky + 1), as far
     * as they lie in the strip, take their y taps. */
    cvk_gen_pref<UN> pf;
    long long t = blockIdx.x, j = 0;
    cvk_gen_spos q = {0, 0, 0, 0};
    if (t < total) {
        q = cvk_gen_strip_at(p, t, SW, H);
        if (UN && p.in_vec)
            cvk_gen_prefetch<T, NT, UN>(p, (const T *)p.in + q.batch * p.ibs, 0, q.ys - p.koff[1],
                                        RC, q.e_tile - HLa, L, C, pf);
    }
    while (t < total) {
        const long long e_tile = q.e_tile, ys = q.ys, ye = q.ye, batch = q.batch;
        const T *base = (const T *)p.in + batch * p.ibs;
        const long long stages = (ye - ys + ky - 1 + RC - 1) / RC;
        const long long g0 = e_tile - HLa;
        __syncthreads();
        if (UN && p.in_vec)
            cvk_gen_commit<T, A, NT, UN>(p, base, 0, ys - p.koff[1] + j * RC, RC, g0, L, C, pf,
                                         s_in);
        else
            cvk_gen_stage<T, A, NT>(p, base, 0, ys - p.koff[1] + j * RC, RC, g0, L, C, s_in);
        __syncthreads();
        long long tn = t, jn = j + 1;
        cvk_gen_spos qn = q;
        if (jn >= stages) {
            tn = t + gridDim.x, jn = 0;
            if (tn < total)
                qn = cvk_gen_strip_at(p, tn, SW, H);
        }
        if (UN && p.in_vec && tn < total)
            cvk_gen_prefetch<T, NT, UN>(p, (const T *)p.in + qn.batch * p.ibs, 0,
                                        qn.ys - p.koff[1] + jn * RC, RC, qn.e_tile - HLa, L, C, pf);
        /* x taps into the ring */
        cvk_gen_strip_xtaps<A, KX, CC, DD, BX, TX, NT, RC>(s_in, L, ring, RING, G.H, j, wx, kx, C,
                                                           D);
        __syncthreads();
        /* y taps for the outputs whose rows are all in */
        const long long o0 = (j + 1) * RC - ky + 1 - RC + ty * BY; /* relative to ys */
        if (o0 + BY > 0 && ys + o0 < ye) {
            A acc[BY][BX];
            cvk_gen_zero<A, BY, BX>(acc);
            /* rows o0 .. o0 + BY + ky - 2; outputs before the strip's first
             * read slots of rows not staged (o0 < 0): computed, not stored */
            const long long first = o0 < 0 ? o0 + RING : o0;
            const int slot0 = (int)(first % RING);
            cvk_gen_taps<A, 1, KY, 1, 0, BY, BX>(ring + slot0 * SW + tx * BX, SW, wy, acc, 1, ky, 1,
                                                 0);
            const long long e = e_tile + tx * BX;
#pragma unroll
            for (int o = 0; o < BY; o++)
                if (o0 + o >= 0 && ys + o0 + o < ye && e < WC)
                    cvk_gen_store<OT, A, BX>(p, batch * p.obs, 0, ys + o0 + o, e, C, acc[o]);
        }
        t = tn, j = jn, q = qn;
    }
}

#endif

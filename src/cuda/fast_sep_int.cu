/*
 * fast_sep_int.cu - separable 2-D filters on uint8 and uint16 images of
 * 1, 3 or 4 interleaved channels (K = 3..11 taps an axis, square), fused in
 * one pass over memory, summed in float, y first (scipy's order of the
 * axes); outputs rounded and saturated (integer types) or stored as they
 * are.
 *
 * A block of NT = 128 threads owns the columns of 4 NT consecutive input
 * elements of a row (its OW = 4 (NT - HT) outputs and their x halo) and
 * walks down `strip` output rows, RC input rows a stage (RC a multiple of
 * K):
 *   1. the raw rows of stage j + NBUF - 1 are copied to shared memory with
 *      cp.async (16, 8 or 4-byte chunks, as the rows' alignment allows),
 *      NBUF - 1 stages ahead, a warp a row;
 *   2. each thread widens its 4 elements of each of stage j's rows to float
 *      (a word load and a funnel shift, then a byte permute and a
 *      subtraction an element) and adds them into the y sums of the K
 *      output rows in flight, held in registers (output o in slot o % K,
 *      so that no register moves); the output row each input row completes
 *      goes to shared memory;
 *   3. the NT - HT threads with outputs filter the RC y-filtered rows along
 *      x (windows of 16-byte shared loads, taps C elements apart) and store
 *      their 4 outputs a row (one word of uint8, two of uint16, four floats).
 * Rows past the image's ends go through cvi_boundary_index once a stage
 * (cval rows: -1); elements past the rows' ends, and all of them on rows
 * not 4-byte aligned, are read from global memory at offsets each thread
 * works out once (cvk_isep_col). Every input element crosses DRAM once
 * (plus the strips' K - 1 halo rows and the blocks' x halo, from L2) and is
 * widened once; the intermediate never leaves registers and shared memory.
 * Weights are constant-bank operands. A horizontal origin moves where a
 * block's columns start; a vertical one which rows are staged.
 */
#include "fast_sep_int.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <stdint.h>
#include <string.h>

#define CVK_ISEP_NT 128 /* threads a block, 4 input columns each */
#define CVK_ISEP_NBUF 3 /* stages of raw rows in shared memory */
/* Blocks a multiprocessor the registers must allow (__launch_bounds__):
 * 6 (80 registers) up to 7 taps, 5 (96) above; one fewer (96 or 128
 * registers, fewer spills) where that measured faster: uint16 with K >= 9 or
 * gray K = 7, uint8 gray K = 11 (H100, `convolve bench --filter gaussian
 * --radius 1..5 --strategy separable`, both bounds in one run: e.g. uint16
 * gray 8192^2 K = 7, 9, 11 0.147, 0.165, 0.185 ms against 0.182, 0.193,
 * 0.233; uint8 RGB K = 9, 11 0.122, 0.132 against 0.127, 0.140 the other
 * way). */
template <typename T, int C, int K>
struct cvk_isep_minb {
    enum {
        LOOSE = sizeof(T) == 2 ? (K >= 9 || (C == 1 && K == 7)) : (C == 1 && K == 11),
        VALUE = (K <= 7 ? 6 : 5) - LOOSE
    };
};
/* output elements a block: the columns of all but the threads whose
 * columns are only x halo */
#define CVK_ISEP_OW(C, K) (4 * (CVK_ISEP_NT - (((K)-1) * (C) + 3) / 4))

typedef struct cvk_isep_params {
    const char *in;
    char *out;
    long long in_row, out_row; /* bytes between rows */
    long long H, W, WC;        /* rows, pixels, elements a row */
    long long strip;           /* output rows a block */
    int koffy, koffx;          /* filter offsets (correlation form) */
    int mode, out_type;
    int chunk;   /* bytes a cp.async copies: 16, 8, 4, or 0 (none: read through the map) */
    int vec_out; /* output rows and base allow whole-word stores */
    float cval;
    float wy[CVK_ISEP_MAX_K], wx[CVK_ISEP_MAX_K];
} cvk_isep_params;

/* The compile-time geometry of cvk_isep_kernel<T, C, K>. */
template <typename T, int C, int K>
struct cvk_isep_geom {
    enum {
        RC = K < 5 ? 2 * K : K,                    /* input rows a stage (a multiple of K) */
        PE = 16 / (int)sizeof(T),                  /* elements a 16-byte chunk */
        HT = ((K - 1) * C + 3) / 4,                /* threads whose columns are x halo only */
        OW = CVK_ISEP_OW(C, K),                    /* output elements a block */
        YW = 4 * CVK_ISEP_NT,                      /* floats a y-filtered row */
        LS = (PE - 1 + YW + 4 + PE - 1) / PE * PE, /* elements a raw row holds */
        LSB = LS * (int)sizeof(T),                 /* its bytes (a multiple of 16) */
        WINV = (4 + (K - 1) * C + 3) / 4           /* float4s of a thread's x window */
    };
};

template <typename T, int C, int K>
static size_t cvk_isep_smem()
{
    typedef cvk_isep_geom<T, C, K> G;
    return (size_t)CVK_ISEP_NBUF * G::RC * G::LSB + (size_t)G::RC * G::YW * 4 +
           (size_t)CVK_ISEP_NBUF * G::RC * 8 + (size_t)CVK_ISEP_NT * 4 * 8;
}

/* Four consecutive elements of a raw row from element i; sh: the bits
 * element i lies into its word (the same for every thread of a block; a
 * funnel shift by 0 keeps the first word). */
__device__ __forceinline__ float4 cvk_isep_four(const unsigned char *row, int i, int sh)
{
    const unsigned *w = (const unsigned *)row + (i >> 2);
    const unsigned x = __funnelshift_r(w[0], w[1], sh);
    return make_float4(cvk_u8_float<0>(x), cvk_u8_float<1>(x), cvk_u8_float<2>(x),
                       cvk_u8_float<3>(x));
}
__device__ __forceinline__ float4 cvk_isep_four(const unsigned short *row, int i, int sh)
{
    const unsigned *w = (const unsigned *)row + (i >> 1);
    const unsigned w1 = w[1];
    const unsigned x0 = __funnelshift_r(w[0], w1, sh), x1 = __funnelshift_r(w1, w[2], sh);
    return make_float4(cvk_u16_float<0>(x0), cvk_u16_float<1>(x0), cvk_u16_float<0>(x1),
                       cvk_u16_float<1>(x1));
}

/* Where element g of a row comes from after the mode: its offset in the
 * row, or -1 for cval. */
template <int C>
__device__ __forceinline__ long long cvk_isep_col(const cvk_isep_params &p, long long g)
{
    const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
    const long long mp = cvi_boundary_index(pix, p.W, p.mode);
    return mp < 0 ? -1 : mp * C + (g - pix * C);
}

/* The 4 elements of row m at the offsets cm (-1: cval): the threads whose
 * elements were not copied (the blocks at the rows' ends, unaligned data;
 * out of line). */
template <typename T>
__device__ __noinline__ float4 cvk_isep_mapped4(const cvk_isep_params &p, long long m,
                                                const long long *cm)
{
    const T *row = (const T *)(p.in + m * p.in_row);
    float v[4];
#pragma unroll
    for (int q = 0; q < 4; q++)
        v[q] = cm[q] < 0 ? p.cval : (float)row[cm[q]];
    return make_float4(v[0], v[1], v[2], v[3]);
}

/* cvi_boundary_index for the rows past the ends (rare: out of line). */
__device__ __noinline__ long long cvk_isep_map_slow(long long y, long long n, int mode)
{
    return cvi_boundary_index(y, n, mode);
}

/* Copies chunks [c_lo, c_hi) of row src to dst, a lane a chunk, in
 * `chunk`-byte copies. */
__device__ __forceinline__ void cvk_isep_row(unsigned char *dst, const char *src, int chunk,
                                             int c_lo, int c_hi, int lane)
{
    if (chunk == 16) {
        for (int c = c_lo + lane; c < c_hi; c += 32)
            cvk_cp16(dst + 16 * c, src + 16 * c);
    } else if (chunk == 8) {
        for (int c = c_lo + lane; c < c_hi; c += 32)
            cvk_cp8(dst + 8 * c, src + 8 * c);
    } else {
        for (int c = c_lo + lane; c < c_hi; c += 32)
            cvk_cp4(dst + 4 * c, src + 4 * c);
    }
}

/* Starts copying the raw rows of stage s (input rows y0 + s RC + r) into
 * buffer `raw`, chunks [c_lo, c_hi) of each (those wholly inside the row),
 * a warp a row at a time; when a row lies outside the image, notes each
 * row's index (or -1: cval) in rmap (cvk_isep_ystage reads it then). One
 * commit group. */
template <typename T, int C, int K>
__device__ __forceinline__ void cvk_isep_issue(const cvk_isep_params &p, long long y0, long long s,
                                               long long s0, int c_lo, int c_hi, unsigned char *raw,
                                               long long *rmap)
{
    typedef cvk_isep_geom<T, C, K> G;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long ys = y0 + s * G::RC; /* the stage's first row */
    const char *src = p.in + s0 * (long long)sizeof(T);
    if (ys >= 0 && ys + G::RC <= p.H) {
        src += ys * p.in_row;
#pragma unroll 1
        for (int r = warp; r < G::RC; r += CVK_ISEP_NT / 32)
            cvk_isep_row(raw + r * G::LSB, src + r * p.in_row, p.chunk, c_lo, c_hi, lane);
    } else {
#pragma unroll 1
        for (int r = warp; r < G::RC; r += CVK_ISEP_NT / 32) {
            const long long y = ys + r;
            const long long m = y >= 0 && y < p.H ? y : cvk_isep_map_slow(y, p.H, p.mode);
            if (lane == 0)
                rmap[r] = m;
            if (m >= 0)
                cvk_isep_row(raw + r * G::LSB, src + m * p.in_row, p.chunk, c_lo, c_hi, lane);
        }
    }
    cvk_cp_commit();
}

/* The x filter of the thread's 4 outputs from a y-filtered row (its
 * window starts at src, taps C apart). */
template <int C, int K, int WINV>
__device__ __forceinline__ void cvk_isep_xrow(const cvk_isep_params &p, const float *src,
                                              float (&h)[4])
{
    float win[4 * WINV];
#pragma unroll
    for (int q = 0; q < WINV; q++) {
        const float4 w4 = *(const float4 *)(src + 4 * q);
        win[4 * q] = w4.x, win[4 * q + 1] = w4.y, win[4 * q + 2] = w4.z, win[4 * q + 3] = w4.w;
    }
#pragma unroll
    for (int c = 0; c < 4; c++)
        h[c] = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            h[c] = fmaf(p.wx[k], win[c + k * C], h[c]);
}

/* Stage rows r = 0..RC-1 (raw rows rb, row indices rm) into the y sums
 * acc (output o in acc[o % K]; RC a multiple of K, so that the slots are
 * the same each stage); the output row r completes goes to dst[r YW].
 * FAST: every row inside the image and the thread's elements copied.
 * Otherwise row r is input row yj + r when the stage lies inside the image
 * (rm = 0), else rm[r] (< 0: cval); without `direct` (elements not copied)
 * the thread's elements are read at the offsets cm (cvk_isep_col). */
template <typename T, int C, int K, int RC, int YW, bool FAST>
__device__ __forceinline__ void cvk_isep_ystage(const cvk_isep_params &p, const unsigned char *rb,
                                                const long long *rm, long long yj, int i, int sh,
                                                bool direct, const long long *cm, float4 (&acc)[K],
                                                float *dst)
{
    typedef cvk_isep_geom<T, C, K> G;
#pragma unroll
    for (int r = 0; r < RC; r++) {
        float4 x;
        if (FAST) {
            x = cvk_isep_four((const T *)(rb + r * G::LSB), i, sh);
        } else {
            const long long m = rm ? rm[r] : yj + r;
            if (m < 0)
                x = make_float4(p.cval, p.cval, p.cval, p.cval);
            else if (direct)
                x = cvk_isep_four((const T *)(rb + r * G::LSB), i, sh);
            else
                x = cvk_isep_mapped4<T>(p, m, cm);
        }
        /* the newest output (slot r % K) starts; the others take their tap */
        {
            float4 &a = acc[r % K];
            a.x = p.wy[0] * x.x, a.y = p.wy[0] * x.y, a.z = p.wy[0] * x.z, a.w = p.wy[0] * x.w;
        }
#pragma unroll
        for (int k = 1; k < K; k++) {
            float4 &a = acc[(r - k + K * RC) % K];
            a.x = fmaf(p.wy[k], x.x, a.x);
            a.y = fmaf(p.wy[k], x.y, a.y);
            a.z = fmaf(p.wy[k], x.z, a.z);
            a.w = fmaf(p.wy[k], x.w, a.w);
        }
        *(float4 *)(dst + r * YW) = acc[(r + 1) % K];
    }
}

template <typename T, int C, int K>
__global__ void __launch_bounds__(CVK_ISEP_NT, (cvk_isep_minb<T, C, K>::VALUE))
    cvk_isep_kernel(const __grid_constant__ cvk_isep_params p)
{
    typedef cvk_isep_geom<T, C, K> G;
    enum { RC = G::RC, NT = CVK_ISEP_NT, NB = CVK_ISEP_NBUF, YW = G::YW };
    CVK_DYNAMIC_SHARED(smem);
    unsigned char *raw = smem;                        /* NB stages of RC raw rows */
    float *yrow = (float *)(raw + NB * RC * G::LSB);  /* RC y-filtered rows of YW */
    long long *rmaps = (long long *)(yrow + RC * YW); /* NB x RC row indices */
    long long *cmaps = rmaps + NB * RC;               /* NT x 4 column offsets */
    const int t = threadIdx.x;

    /* the block: output elements [e0, e0 + OW), rows [ys, ye); its columns
     * are input elements [s_in, s_in + 4 NT), the thread's 4 from s_in + 4t */
    const long long e0 = (long long)blockIdx.x * G::OW;
    const long long ys = (long long)blockIdx.y * p.strip;
    const long long ye = ys + p.strip < p.H ? ys + p.strip : p.H;
    const long long s_in = e0 - (long long)p.koffx * C;
    /* raw rows start at s0 (a multiple of PE, at or before s_in) */
    const long long s0 = (s_in >= 0 ? s_in / G::PE : -((-s_in + G::PE - 1) / G::PE)) * G::PE;
    const int i = (int)(s_in - s0) + 4 * t; /* the thread's first raw element */
    const int sh = (int)((s_in - s0) * sizeof(T) % 4) * 8;
    /* chunks wholly inside [0, WC): copied; the rest go through the map */
    int c_lo = 0, c_hi = 0, pc = 0;
    if (p.chunk) {
        pc = p.chunk / (int)sizeof(T); /* elements a chunk */
        const long long lo = s0 < 0 ? -s0 : 0;
        long long hi = (p.WC - s0) / pc;
        hi = hi > G::LSB / p.chunk ? G::LSB / p.chunk : hi;
        c_lo = (int)((lo + pc - 1) / pc);
        c_hi = hi > c_lo ? (int)hi : c_lo;
    }
    const bool direct = pc && i >= c_lo * pc && i + 4 <= c_hi * pc;
    /* where the thread's elements come from when they were not copied */
    long long *const cm = cmaps + 4 * t;
    if (!direct)
        for (int q = 0; q < 4; q++)
            cm[q] = cvk_isep_col<C>(p, s0 + i + q);

    const long long y0 = ys - p.koffy; /* input row of stage 0's first row */
    const int stages = (int)((ye - ys + K - 1 + RC - 1) / RC);
#pragma unroll 1
    for (int s = 0; s < NB - 1; s++)
        cvk_isep_issue<T, C, K>(p, y0, s, s0, c_lo, s < stages ? c_hi : c_lo, raw + s * RC * G::LSB,
                                rmaps + s * RC);

    /* the y sums of the K outputs in flight, output o in acc[o % K] (o from
     * y0's row: row n completes output n - K + 1 and starts output n) */
    float4 acc[K];
#pragma unroll
    for (int k = 0; k < K; k++)
        acc[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const long long e = e0 + 4 * t; /* the thread's first output element */
    const bool outputs = t < NT - G::HT && e < p.WC;
    const int os = cvi_dtype_bytes(p.out_type);
    /* how the thread stores a row: 1 a uint8 word, 2 two uint16 words, 3
     * four floats, 0 element by element */
    const int how = !(e + 4 <= p.WC && p.vec_out)     ? 0
                    : p.out_type == CVI_DTYPE_UINT8   ? 1
                    : p.out_type == CVI_DTYPE_UINT16  ? 2
                    : p.out_type == CVI_DTYPE_FLOAT32 ? 3
                                                      : 0;
    const float *xsrc = yrow + 4 * t;

    int b = 0; /* stage j's buffer, j % NB */
#pragma unroll 1
    for (int j = 0; j < stages; j++) {
        cvk_cp_wait<NB - 2>(); /* stage j's copies are done (later ones may fly on) */
        __syncthreads();       /* ...everyone's; stage j - 1's x readers are done */
        {
            const int sn = j + NB - 1;
            const int bn = b == 0 ? NB - 1 : b - 1; /* sn % NB */
            cvk_isep_issue<T, C, K>(p, y0, sn, s0, c_lo, sn < stages ? c_hi : c_lo,
                                    raw + bn * RC * G::LSB, rmaps + bn * RC);
        }
        /* y: stage j's rows into the sums; row r completes output row
         * j RC - (K - 1) + r, which goes to yrow[r] */
        {
            const unsigned char *rb = raw + b * RC * G::LSB;
            const long long yj = y0 + (long long)j * RC;
            const bool inside = yj >= 0 && yj + RC <= p.H; /* as cvk_isep_issue saw it */
            if (direct && inside)
                cvk_isep_ystage<T, C, K, RC, YW, true>(p, rb, 0, yj, i, sh, true, cm, acc,
                                                       yrow + 4 * t);
            else
                cvk_isep_ystage<T, C, K, RC, YW, false>(p, rb, inside ? 0 : rmaps + b * RC, yj, i,
                                                        sh, direct, cm, acc, yrow + 4 * t);
        }
        b = b == NB - 1 ? 0 : b + 1;
        __syncthreads();
        /* x: outputs o = j RC - (K - 1) + mm (from ys), mm in [m_lo, m_hi) */
        const long long of = (long long)j * RC - (K - 1);
        if (!outputs || of + RC <= 0)
            continue;
        const int m_lo = of < 0 ? (int)-of : 0;
        const int m_hi = ye - ys - of < RC ? (int)(ye - ys - of) : RC;
        char *o = p.out + (ys + of + m_lo) * p.out_row + e * os;
        const float *src = xsrc + m_lo * YW;
        float h[4];
        if (how == 1) {
#pragma unroll 1
            for (int mm = m_lo; mm < m_hi; mm++, o += p.out_row, src += YW) {
                cvk_isep_xrow<C, K, G::WINV>(p, src, h);
                *(unsigned *)o = cvk_u8_pack4(h[0], h[1], h[2], h[3]);
            }
        } else if (how == 2) {
#pragma unroll 1
            for (int mm = m_lo; mm < m_hi; mm++, o += p.out_row, src += YW) {
                cvk_isep_xrow<C, K, G::WINV>(p, src, h);
                uint2 w;
                w.x = cvk_u16_pack2(h[0], h[1]);
                w.y = cvk_u16_pack2(h[2], h[3]);
                *(uint2 *)o = w;
            }
        } else if (how == 3) {
#pragma unroll 1
            for (int mm = m_lo; mm < m_hi; mm++, o += p.out_row, src += YW) {
                cvk_isep_xrow<C, K, G::WINV>(p, src, h);
                *(float4 *)o = make_float4(h[0], h[1], h[2], h[3]);
            }
        } else {
#pragma unroll 1
            for (int mm = m_lo; mm < m_hi; mm++, o += p.out_row, src += YW) {
                cvk_isep_xrow<C, K, G::WINV>(p, src, h);
#pragma unroll
                for (int c = 0; c < 4; c++)
                    if (e + c < p.WC)
                        cvk_store_float(p.out_type, o - e * os, e + c, h[c]);
            }
        }
    }
}

typedef void (*cvk_isep_fn)(cvk_isep_params);
typedef size_t (*cvk_isep_smem_fn)();

/* a case of a switch on K * 4 + C */
#define CVK_ISEP_CASE(T, C, K) \
    case K * 4 + C: *smem = cvk_isep_smem<T, C, K>; return cvk_isep_kernel<T, C, K>;

/* The instance for the element type, channels and K (0: none): every case
 * of uint8 and uint16 with 1, 3 or 4 channels and K = 3..11, where it
 * measured faster than the kernels before it (the x-first fused kernel, the
 * register-streaming uint8 kernels of fast_direct_u8.cu, the generated
 * strips): H100, `convolve bench --filter gaussian --radius 1..5 --strategy
 * separable --mode reflect` on 4096^2 (RGB, RGBA) and 8192^2 (gray)
 * images, both in one run (ms, K = 3, 5, 7, 9, 11): uint8 RGB 0.072, 0.095,
 * 0.106, 0.122, 0.132 against 0.155, 0.204, 0.232, 0.217, 0.238; uint8 RGBA
 * 0.091-0.180 against 0.220-0.311; uint8 gray 0.094-0.156 against
 * 0.183-0.299; uint16 RGB 0.097-0.167 against 0.195-0.262; uint16 gray
 * 0.133-0.185 against 0.204-0.316; uint16 RGBA 0.120-0.228 against
 * 0.680-0.790 (the generated strips). */
static cvk_isep_fn pick(int in_type, int C, int K, cvk_isep_smem_fn *smem)
{
    typedef unsigned char U8;
    typedef unsigned short U16;
    if (C < 1 || C > 4 || K < 3 || K > 11)
        return 0; /* the key K * 4 + C is unique only so: 9 channels at K = 3 named gray K = 5 */
    if (in_type == CVI_DTYPE_UINT8) {
        switch (K * 4 + C) {
            CVK_ISEP_CASE(U8, 1, 3)
            CVK_ISEP_CASE(U8, 1, 5)
            CVK_ISEP_CASE(U8, 1, 7)
            CVK_ISEP_CASE(U8, 1, 9)
            CVK_ISEP_CASE(U8, 1, 11)
            CVK_ISEP_CASE(U8, 3, 3)
            CVK_ISEP_CASE(U8, 3, 5)
            CVK_ISEP_CASE(U8, 3, 7)
            CVK_ISEP_CASE(U8, 3, 9)
            CVK_ISEP_CASE(U8, 3, 11)
            CVK_ISEP_CASE(U8, 4, 3)
            CVK_ISEP_CASE(U8, 4, 5)
            CVK_ISEP_CASE(U8, 4, 7)
            CVK_ISEP_CASE(U8, 4, 9)
            CVK_ISEP_CASE(U8, 4, 11)
        default: return 0;
        }
    }
    if (in_type == CVI_DTYPE_UINT16) {
        switch (K * 4 + C) {
            CVK_ISEP_CASE(U16, 1, 3)
            CVK_ISEP_CASE(U16, 1, 5)
            CVK_ISEP_CASE(U16, 1, 7)
            CVK_ISEP_CASE(U16, 1, 9)
            CVK_ISEP_CASE(U16, 1, 11)
            CVK_ISEP_CASE(U16, 3, 3)
            CVK_ISEP_CASE(U16, 3, 5)
            CVK_ISEP_CASE(U16, 3, 7)
            CVK_ISEP_CASE(U16, 3, 9)
            CVK_ISEP_CASE(U16, 3, 11)
            CVK_ISEP_CASE(U16, 4, 3)
            CVK_ISEP_CASE(U16, 4, 5)
            CVK_ISEP_CASE(U16, 4, 7)
            CVK_ISEP_CASE(U16, 4, 9)
            CVK_ISEP_CASE(U16, 4, 11)
        default: return 0;
        }
    }
    return 0;
}

extern "C" int cvk_isep2d_supports(int in_type, int channels, int ksize)
{
    cvk_isep_smem_fn smem;
    return pick(in_type, channels, ksize, &smem) != 0;
}

extern "C" cudaError_t cvk_isep2d_launch(const cvk_direct_args *a, cudaStream_t stream)
{
    cvk_isep_smem_fn smem_of = 0;
    cvk_isep_fn fn = pick(a->in_type, a->channels, a->ksize, &smem_of);
    if (!fn || !a->separable || a->height_taps != a->ksize)
        return cudaErrorInvalidValue;
    const int K = a->ksize, C = a->channels;
    const int os = cvi_dtype_bytes(a->out_type);
    cvk_isep_params p;
    memset(&p, 0, sizeof p);
    p.in = (const char *)a->in;
    p.out = (char *)a->out;
    p.in_row = a->in_row;
    p.out_row = a->out_row;
    p.H = a->height;
    p.W = a->width;
    p.WC = a->width * C;
    p.koffy = a->koffy;
    p.koffx = a->koffx;
    p.mode = a->mode;
    p.out_type = a->out_type;
    p.cval = a->cval;
    for (int i = 0; i < K; i++) {
        p.wy[i] = (float)a->taps_y[i];
        p.wx[i] = (float)a->taps_x[i];
    }
    /* the largest chunk both the base and every row allow */
    p.chunk = 0;
    for (int c = 16; c >= 4 && !p.chunk; c /= 2)
        if ((uintptr_t)a->in % c == 0 && a->in_row % c == 0)
            p.chunk = c;
    p.vec_out = (uintptr_t)a->out % (4 * os) == 0 && a->out_row % (4 * os) == 0;
    const size_t smem = smem_of();
    /* the blocks a multiprocessor holds, asked once an instance */
    static int held[2 * 5 * 5];
    int per_sm;
    const cudaError_t e = cvk_launch_ready(
        (const void *)fn, CVK_ISEP_NT, smem,
        &held[((a->in_type == CVI_DTYPE_UINT16) * 5 + C) * 5 + (K - 3) / 2], &per_sm);
    if (e != cudaSuccess)
        return e;
    const long long ow = CVK_ISEP_OW(C, K);
    const long long bx = (p.WC + ow - 1) / ow;
    /* strips: about four waves of the blocks the device holds at once
     * (3 and 6 measured within 10% either way), never a few blocks more (a
     * tail wave of them took 35% more time), each at least 4 (K - 1) rows
     * so that the halo rows stay a small share */
    const long long slots = cvk_multiprocessors(a->multiprocessors) * per_sm;
    long long by = 4 * slots / bx;
    by = by < 1 ? 1 : by;
    long long strip = (p.H + by - 1) / by;
    const long long min_strip = 4 * (K - 1) > 16 ? 4 * (K - 1) : 16;
    strip = strip < min_strip ? min_strip : strip;
    if (strip > p.H)
        strip = p.H;
    p.strip = strip;
    by = (p.H + strip - 1) / strip;
    if (by > CVK_DEVICE_GRID_YZ || bx > CVK_DEVICE_GRID_X)
        return cudaErrorInvalidConfiguration;
    CVK_LAUNCH(fn, dim3((unsigned)bx, (unsigned)by), CVK_ISEP_NT, smem, stream, (p));
    return cudaGetLastError();
}

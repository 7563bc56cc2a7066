/*
 * fast_sep_int.cu - separable 2-D filters on uint8 and uint16 images of
 * interleaved channels (K = 3..11 taps an axis, square; instances for the
 * cases where they measured fastest, see pick), fused in one pass over
 * memory, summed in float; outputs rounded and saturated (integer types) or
 * stored as they are.
 *
 * A block owns a strip of SW = 512 consecutive row elements and walks down
 * `strip` output rows, RC input rows a stage; its 256 threads are two
 * halves of 128, each thread 4 columns of half the stage's rows:
 *   1. the raw rows of stage j + NBUF - 1 are copied to shared memory with
 *      cp.async (16, 8 or 4-byte chunks, as the rows' alignment allows),
 *      NBUF - 1 stages ahead, a warp a row;
 *   2. stage j's bytes are widened to float once (a word load, a funnel
 *      shift when the window is not word-aligned, then a byte permute and a
 *      subtraction an element); elements past the
 *      row's ends, rows the mode makes cval and rows whose chunks were not
 *      copied (unaligned data) are read through cvi_boundary_index instead;
 *   3. each thread filters its 4 columns of the RC rows along x (windows of
 *      16-byte shared loads, taps C elements apart) into a ring of 16
 *      x-filtered rows;
 *   4. each thread filters its 4 columns along y for the RC outputs whose
 *      rows are all in the ring, and stores them (one word of uint8, two of
 *      uint16, four floats).
 * Every input element crosses DRAM once (plus the strips' K - 1 halo rows
 * and the SW-wide strips' x halo, from L2), and the intermediate never
 * leaves shared memory. Weights are constant-bank operands. A horizontal
 * origin moves where a strip's staging starts; a vertical one which rows
 * are staged.
 */
#include "fast_sep_int.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <stdint.h>
#include <string.h>

#define CVK_ISEP_COLS 128                    /* threads across a strip, 4 elements each */
#define CVK_ISEP_THREADS (2 * CVK_ISEP_COLS) /* two halves of a stage's rows */
#define CVK_ISEP_SW (4 * CVK_ISEP_COLS)      /* elements a strip */
#define CVK_ISEP_RING 16                     /* x-filtered rows held (a power of two) */
#define CVK_ISEP_NBUF 3                      /* stages of raw rows in shared memory */

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
        RC = K <= 9 ? 8 : 6,                    /* input rows a stage: RC + K - 1 <= RING */
        PE = 16 / (int)sizeof(T),               /* elements a 16-byte chunk */
        LF = CVK_ISEP_SW + (K - 1) * C,         /* floats a widened row holds */
        LFP = (LF + 3) / 4 * 4,                 /* ... rounded up to whole float4s */
        LS = (PE - 1 + LFP + PE - 1) / PE * PE, /* elements a raw row holds (at most) */
        LSB = LS * (int)sizeof(T),              /* its bytes (a multiple of 16) */
        WIN = 4 + (K - 1) * C,                  /* floats of a thread's x window */
        WINV = (WIN + 3) / 4                    /* ... in float4s */
    };
    static_assert(RC + K - 1 <= CVK_ISEP_RING, "the ring holds a stage's y windows");
};

template <typename T, int C, int K>
static size_t cvk_isep_smem()
{
    typedef cvk_isep_geom<T, C, K> G;
    return (size_t)CVK_ISEP_NBUF * G::RC * G::LSB + (size_t)G::RC * G::LFP * 4 +
           (size_t)CVK_ISEP_RING * CVK_ISEP_SW * 4 + (size_t)CVK_ISEP_NBUF * G::RC * 8;
}

/* The float of byte i of x: PRMT builds the float 2^23 + byte (bits
 * 0x4B0000bb), and one subtraction leaves the byte's value. */
template <int I>
__device__ __forceinline__ float cvk_isep_byte(unsigned x)
{
    return __uint_as_float(__byte_perm(x, 0x4Bu, I | 5 << 4 | 6 << 8 | 4 << 12)) - 8388608.0f;
}
/* The float of halfword i of x (bits 0x4B00hhhh). */
template <int I>
__device__ __forceinline__ float cvk_isep_half(unsigned x)
{
    return __uint_as_float(__byte_perm(x, 0x4Bu, 2 * I | (2 * I + 1) << 4 | 6 << 8 | 4 << 12)) -
           8388608.0f;
}

/* Four consecutive elements of a raw row, from element s (any alignment of
 * s within the row's 16-byte chunks; the row is 16-byte aligned). */
__device__ __forceinline__ void cvk_isep_four(const unsigned char *row, int s, float (&v)[4])
{
    const unsigned *w = (const unsigned *)row + (s >> 2);
    const int sh = (s & 3) * 8;
    const unsigned x = sh ? (w[0] >> sh) | (w[1] << (32 - sh)) : w[0];
    v[0] = cvk_isep_byte<0>(x), v[1] = cvk_isep_byte<1>(x);
    v[2] = cvk_isep_byte<2>(x), v[3] = cvk_isep_byte<3>(x);
}
__device__ __forceinline__ void cvk_isep_four(const unsigned short *row, int s, float (&v)[4])
{
    const unsigned *w = (const unsigned *)row + (s >> 1);
    const int sh = (s & 1) * 16;
    const unsigned x0 = sh ? (w[0] >> 16) | (w[1] << 16) : w[0];
    const unsigned x1 = sh ? (w[1] >> 16) | (w[2] << 16) : w[1];
    v[0] = cvk_isep_half<0>(x0), v[1] = cvk_isep_half<1>(x0);
    v[2] = cvk_isep_half<0>(x1), v[3] = cvk_isep_half<1>(x1);
}

/* Element g of input row m (-1: the mode's cval row) through the map. */
template <typename T, int C>
__device__ __forceinline__ float cvk_isep_mapped(const cvk_isep_params &p, long long m, long long g)
{
    const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
    const long long mp = cvi_boundary_index(pix, p.W, p.mode);
    if (m < 0 || mp < 0)
        return p.cval;
    return (float)((const T *)(p.in + m * p.in_row))[mp * C + (g - pix * C)];
}

/* x rounded to nearest (ties to even) and saturated to [0, top]; NaN -> 0:
 * cvi_saturate_u8f / cvi_saturate_u16f without their branches. */
__device__ __forceinline__ unsigned cvk_isep_sat(float x, unsigned top)
{
    const unsigned u = __float2uint_rn(x); /* NaN and x <= -0.5 -> 0; huge -> 2^32 - 1 */
    return u < top ? u : top;
}

/* Out of line: rare (the strips at the rows' ends, cval rows, unaligned data). */
template <typename T, int C>
__device__ __noinline__ void cvk_isep_mapped4(const cvk_isep_params &p, long long m, long long g,
                                              float *dst)
{
    float4 q;
    q.x = cvk_isep_mapped<T, C>(p, m, g);
    q.y = cvk_isep_mapped<T, C>(p, m, g + 1);
    q.z = cvk_isep_mapped<T, C>(p, m, g + 2);
    q.w = cvk_isep_mapped<T, C>(p, m, g + 3);
    *(float4 *)dst = q;
}

/* cvi_boundary_index for the rows past the ends (rare: out of line). */
__device__ __noinline__ long long cvk_isep_map_slow(long long y, long long n, int mode)
{
    return cvi_boundary_index(y, n, mode);
}

/* Starts copying the raw rows of stage s (input rows y0 + s RC + r) into
 * buffer `raw`, chunks [c_lo, c_hi) of each (those wholly inside the row),
 * a warp a row at a time, and notes each row's index (or -1: cval) in rmap.
 * One commit group. */
template <typename T, int C, int K>
__device__ __forceinline__ void cvk_isep_issue(const cvk_isep_params &p, long long y0, long long s,
                                               long long s0, int c_lo, int c_hi, unsigned char *raw,
                                               long long *rmap)
{
    typedef cvk_isep_geom<T, C, K> G;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll 1
    for (int r = warp; r < G::RC; r += CVK_ISEP_THREADS / 32) {
        const long long y = y0 + s * G::RC + r;
        const long long m = y >= 0 && y < p.H ? y : cvk_isep_map_slow(y, p.H, p.mode);
        if (lane == 0)
            rmap[r] = m;
        if (m < 0)
            continue;
        const char *src = p.in + m * p.in_row + s0 * (long long)sizeof(T);
        unsigned char *dst = raw + r * G::LSB;
        if (p.chunk == 16) {
            for (int c = c_lo + lane; c < c_hi; c += 32)
                cvk_cp16(dst + 16 * c, src + 16 * c);
        } else if (p.chunk == 8) {
            for (int c = c_lo + lane; c < c_hi; c += 32)
                cvk_cp8(dst + 8 * c, src + 8 * c);
        } else {
            for (int c = c_lo + lane; c < c_hi; c += 32)
                cvk_cp4(dst + 4 * c, src + 4 * c);
        }
    }
    cvk_cp_commit();
}

template <typename T, int C, int K>
__global__ void __launch_bounds__(CVK_ISEP_THREADS)
    cvk_isep_kernel(const __grid_constant__ cvk_isep_params p)
{
    typedef cvk_isep_geom<T, C, K> G;
    enum { RC = G::RC, SW = CVK_ISEP_SW, RING = CVK_ISEP_RING, NB = CVK_ISEP_NBUF };
    CVK_DYNAMIC_SHARED(smem);
    unsigned char *raw = smem;                          /* NB stages of RC raw rows */
    float *wide = (float *)(raw + NB * RC * G::LSB);    /* RC widened rows of LFP floats */
    float *ring = wide + RC * G::LFP;                   /* RING x-filtered rows of SW */
    long long *rmaps = (long long *)(ring + RING * SW); /* NB x RC row indices */
    const int t = threadIdx.x % CVK_ISEP_COLS;          /* the thread's columns 4t .. 4t + 3 */
    const int hh = threadIdx.x / CVK_ISEP_COLS;         /* its half of the rows */
    enum { HR = RC / 2 };
    static_assert(RC % 2 == 0, "two halves of the rows");

    /* the strip: output elements [e0, e0 + SW), rows [ys, ye) */
    const long long e0 = (long long)blockIdx.x * SW;
    const long long ys = (long long)blockIdx.y * p.strip;
    const long long ye = ys + p.strip < p.H ? ys + p.strip : p.H;
    /* raw rows start at s0 (a multiple of PE); output e0's window at s0 + d */
    const int A = (p.koffx * C + G::PE - 1) / G::PE * G::PE, d = A - p.koffx * C;
    const long long s0 = e0 - A;
    /* chunks wholly inside [0, WC): copied; the rest go through the map */
    int c_lo = 0, c_hi = 0;
    if (p.chunk) {
        const int pc = p.chunk / (int)sizeof(T); /* elements a chunk */
        const long long lo = s0 < 0 ? -s0 : 0;
        long long hi = (p.WC - s0) / pc;
        hi = hi > G::LSB / p.chunk ? G::LSB / p.chunk : hi;
        c_lo = (int)((lo + pc - 1) / pc);
        c_hi = hi > c_lo ? (int)hi : c_lo;
    }
    /* widened elements [i_lo, i_hi) come from copied chunks */
    const int i_lo = c_lo * (p.chunk / (int)sizeof(T)) - d;
    const int i_hi = c_hi * (p.chunk / (int)sizeof(T)) - d;

    const long long y0 = ys - p.koffy; /* input row of stage 0's first row */
    const long long stages = (ye - ys + K - 1 + RC - 1) / RC;
#pragma unroll 1
    for (int s = 0; s < NB - 1; s++)
        cvk_isep_issue<T, C, K>(p, y0, s, s0, c_lo, s < stages ? c_hi : c_lo, raw + s * RC * G::LSB,
                                rmaps + s * RC);

#pragma unroll 1
    for (long long j = 0; j < stages; j++) {
        cvk_cp_wait<NB - 2>(); /* stage j's copies are done (later ones may fly on) */
        __syncthreads();       /* ...everyone's; stage j - 1's readers are done */
        {
            const long long sn = j + NB - 1;
            const int bn = (int)(sn % NB);
            cvk_isep_issue<T, C, K>(p, y0, sn, s0, c_lo, sn < stages ? c_hi : c_lo,
                                    raw + bn * RC * G::LSB, rmaps + bn * RC);
        }
        /* widen stage j's rows: element s0 + d + i of row r into wide[r][i] */
        {
            enum { GROUPS = G::LFP / 4 };
            const int b = (int)(j % NB);
            const unsigned char *rb = raw + b * RC * G::LSB;
            const long long *rm = rmaps + b * RC;
#pragma unroll 1
            for (int u = threadIdx.x; u < RC * GROUPS; u += CVK_ISEP_THREADS) {
                const int r = u / GROUPS, i = 4 * (u - r * GROUPS);
                float *dst = wide + r * G::LFP + i;
                const long long m = rm[r];
                if (m >= 0 && i >= i_lo && i + 4 <= i_hi) {
                    float v[4];
                    cvk_isep_four((const T *)(rb + r * G::LSB), d + i, v);
                    *(float4 *)dst = make_float4(v[0], v[1], v[2], v[3]);
                } else {
                    cvk_isep_mapped4<T, C>(p, m, s0 + d + i, dst);
                }
            }
        }
        __syncthreads();
        /* x: the thread's 4 columns of its half's rows into the ring */
#pragma unroll
        for (int rr = 0; rr < HR; rr++) {
            const int r = hh * HR + rr;
            float win[4 * G::WINV];
            const float *src = wide + r * G::LFP + 4 * t;
#pragma unroll
            for (int q = 0; q < G::WINV; q++) {
                const float4 v = *(const float4 *)(src + 4 * q);
                win[4 * q] = v.x, win[4 * q + 1] = v.y, win[4 * q + 2] = v.z, win[4 * q + 3] = v.w;
            }
            float h[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int k = 0; k < K; k++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    h[i] = fmaf(p.wx[k], win[i + k * C], h[i]);
            const int slot = (int)((j * RC + r) & (RING - 1));
            *(float4 *)(ring + slot * SW + 4 * t) = make_float4(h[0], h[1], h[2], h[3]);
        }
        __syncthreads();
        /* y: outputs o = j RC - (K - 1) + m (from ys), rows o .. o + K - 1;
         * the thread's half: m = hh HR + mm */
        const long long of = j * RC - (K - 1) + hh * HR;
        if (of + HR <= 0)
            continue;
        float acc[HR][4];
#pragma unroll
        for (int m = 0; m < HR; m++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[m][i] = 0.0f;
#pragma unroll
        for (int q = 0; q < HR + K - 1; q++) {
            const float4 v = *(const float4 *)(ring + ((of + q) & (RING - 1)) * SW + 4 * t);
#pragma unroll
            for (int m = 0; m < HR; m++) {
                const int k = q - m;
                if (k >= 0 && k < K) {
                    acc[m][0] = fmaf(p.wy[k], v.x, acc[m][0]);
                    acc[m][1] = fmaf(p.wy[k], v.y, acc[m][1]);
                    acc[m][2] = fmaf(p.wy[k], v.z, acc[m][2]);
                    acc[m][3] = fmaf(p.wy[k], v.w, acc[m][3]);
                }
            }
        }
        const long long e = e0 + 4 * t;
        if (e >= p.WC)
            continue;
        /* outputs m_lo <= m < m_hi lie in the strip */
        const int m_lo = of < 0 ? (int)-of : 0;
        const int m_hi = ye - ys - of < HR ? (int)(ye - ys - of) : HR;
        char *const row = p.out + (ys + of) * p.out_row; /* output row of m = 0 */
        if (e + 4 <= p.WC && p.vec_out && p.out_type == CVI_DTYPE_UINT8) {
#pragma unroll
            for (int m = 0; m < HR; m++)
                if (m >= m_lo && m < m_hi)
                    *(unsigned *)(row + m * p.out_row + e) = cvk_isep_sat(acc[m][0], 255u) |
                                                             cvk_isep_sat(acc[m][1], 255u) << 8 |
                                                             cvk_isep_sat(acc[m][2], 255u) << 16 |
                                                             cvk_isep_sat(acc[m][3], 255u) << 24;
        } else if (e + 4 <= p.WC && p.vec_out && p.out_type == CVI_DTYPE_UINT16) {
#pragma unroll
            for (int m = 0; m < HR; m++)
                if (m >= m_lo && m < m_hi) {
                    uint2 w;
                    w.x = cvk_isep_sat(acc[m][0], 65535u) | cvk_isep_sat(acc[m][1], 65535u) << 16;
                    w.y = cvk_isep_sat(acc[m][2], 65535u) | cvk_isep_sat(acc[m][3], 65535u) << 16;
                    *(uint2 *)(row + m * p.out_row + 2 * e) = w;
                }
        } else if (e + 4 <= p.WC && p.vec_out && p.out_type == CVI_DTYPE_FLOAT32) {
#pragma unroll
            for (int m = 0; m < HR; m++)
                if (m >= m_lo && m < m_hi)
                    *(float4 *)(row + m * p.out_row + 4 * e) = make_float4(acc[m][0], acc[m][1],
                                                                           acc[m][2], acc[m][3]);
        } else {
#pragma unroll
            for (int m = 0; m < HR; m++)
                if (m >= m_lo && m < m_hi)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        if (e + i < p.WC)
                            cvk_store_float(p.out_type, row + m * p.out_row, e + i, acc[m][i]);
        }
    }
}

typedef void (*cvk_isep_fn)(cvk_isep_params);
typedef size_t (*cvk_isep_smem_fn)();

/* a case of a switch on K * 4 + C */
#define CVK_ISEP_CASE(T, C, K) \
    case K * 4 + C: *smem = cvk_isep_smem<T, C, K>; return cvk_isep_kernel<T, C, K>;

/* The instance for the element type, channels and K (0: none). Only the
 * cases where these kernels measured faster than the register-streaming
 * ones (fast_direct_u8.cu) and the generated strips: H100, `convolve bench
 * --filter gaussian --radius 1..5 --strategy separable --mode reflect` on
 * 4096^2 (RGB, RGBA) and 8192^2 (gray) images, every case of both in one
 * run (ms, K = 3, 5, 7, 9, 11): uint8 RGBA 0.22-0.32 against 0.53-0.68;
 * uint16 RGB 0.20-0.26 against 0.47-0.51; uint16 gray 0.20-0.32 against
 * 0.33-0.40; uint8 RGB K >= 7 0.231, 0.217, 0.237 against 0.246, 0.303,
 * 0.394 (K = 3, 5: 0.183, 0.212 against 0.155, 0.205); uint8 gray K >= 5
 * 0.201-0.299 against 0.238-0.432 (K = 3: 0.189 against 0.183). */
static cvk_isep_fn pick(int in_type, int C, int K, cvk_isep_smem_fn *smem)
{
    typedef unsigned char U8;
    typedef unsigned short U16;
    if (in_type == CVI_DTYPE_UINT8) {
        switch (K * 4 + C) {
            CVK_ISEP_CASE(U8, 1, 5)
            CVK_ISEP_CASE(U8, 1, 7)
            CVK_ISEP_CASE(U8, 1, 9)
            CVK_ISEP_CASE(U8, 1, 11)
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
    /* strips: about four waves of the blocks a multiprocessor holds, each
     * at least 4 (K - 1) rows so the halo rows stay a small share */
    const size_t smem = smem_of();
    const long long per_sm = (long long)(227 * 1024 / (smem + 1024));
    const long long bx = (p.WC + CVK_ISEP_SW - 1) / CVK_ISEP_SW;
    const long long want = cvk_multiprocessors(a->multiprocessors) * (per_sm > 0 ? per_sm : 1) * 4;
    long long strip = (p.H * bx + want - 1) / want;
    const long long min_strip = 4 * (K - 1) > 16 ? 4 * (K - 1) : 16;
    strip = strip < min_strip ? min_strip : strip;
    if (strip > p.H)
        strip = p.H;
    p.strip = strip;
    const long long by = (p.H + strip - 1) / strip;
    if (by > CVK_DEVICE_GRID_YZ || bx > CVK_DEVICE_GRID_X)
        return cudaErrorInvalidConfiguration;
    if (smem > CVK_DEFAULT_SHARED) {
        const cudaError_t e = cudaFuncSetAttribute(
            (const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess)
            return e;
    }
    CVK_LAUNCH(fn, dim3((unsigned)bx, (unsigned)by), CVK_ISEP_THREADS, smem, stream, (p));
    return cudaGetLastError();
}

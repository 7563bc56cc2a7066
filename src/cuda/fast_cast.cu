/*
 * fast_cast.cu - scipy's cast (CVI_CAST_TRUNCATE) on uint8 and uint16
 * images of 1 to 4 interleaved channels, for separable filters and 1-D
 * passes (fast_cast.h): every sum in double, each output cast exactly as
 * the CPU reference does.
 *
 * A block of CAST_THREADS threads takes a tile of about CAST_THREADS / C
 * pixels (CAST_THREADS elements of a row at most) by a few rows. A thread
 * takes an element (a column) of the tile and computes the vertical sums of
 * CAST_R rows at once from a window of CAST_R input values rotating through
 * registers (each input element loaded and converted once for CAST_R
 * outputs; loads coalesced along the rows, rows above and below the tile
 * from L1 and L2; columns whose taps all lie inside skip the boundary rule).
 * A vertical pass alone (one x tap, cvk_cast_pass_kernel) stores those sums
 * directly, CAST_TH_PASS rows a tile. With taps along x
 * (cvk_cast_sep_kernel) the tile is CAST_TH_SEP rows: the vertical sums of
 * its columns and of the kx - 1 halo columns are staged in shared memory as
 * doubles (20 to 33 KiB a block); a halo column past the image's edge is
 * the vertical sum of the column the mode maps it to (cval in every row
 * under CONSTANT), which is the dense outer product's meaning. Then a thread
 * sums the x taps of CAST_P consecutive pixels of one channel from a
 * rotating window likewise (a quarter of the shared-memory reads of one
 * output a thread; the staged rows are stored by phase so that a warp reads
 * consecutive doubles: no bank conflicts) and stores the cast results.
 * nvcc 13.0, sm_90: 56 to 62 registers, no spills (4 blocks of 256 threads a
 * multiprocessor by __launch_bounds__).
 *
 * A pass along one axis on rows of contiguous interleaved elements (what
 * the Python package runs for integer images: scipy casts after each axis)
 * takes kernels of their own, rows staged in shared memory by cp.async, a
 * warp walking down a band or segment on its own: along y
 * cvk_cast_ystrip_kernel, along x cvk_cast_xstrip_kernel (and
 * cvk_cast_xedge_kernel for the pixels whose taps reach past the row's
 * ends); where rows are not aligned to 4 bytes (and along y where K > 52
 * or cval is not finite) the older cvk_cast_ypass_kernel and
 * cvk_cast_xpass_kernel, which load from global memory. For uint8 (and
 * exact integer sums) float sums where they decide the cast, double ones
 * where they do not (see the section's comment below).
 */
#include "fast_cast.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#define CAST_THREADS 256
#define CAST_TH_SEP 8   /* rows a tile with x taps (its shared-memory size) */
#define CAST_TH_PASS 32 /* rows a tile of a vertical pass */
#define CAST_R 4        /* rows whose sums a thread computes at once */
#define CAST_P 4        /* pixels whose x sums a thread computes at once */

/* An input element as double. On the device through the exponent of 2^52
 * (a double add, where a conversion instruction runs at a quarter of the
 * FMA rate on sm_90); exact for every uint16. */
__device__ __forceinline__ double cast_value(unsigned v)
{
#ifdef __CUDA_ARCH__
    return __hiloint2double(0x43300000, (int)v) - 4503599627370496.0;
#else
    return (double)v;
#endif
}

/* The input element at row j of the column at col (whose pixel is inside):
 * `inside` says j is, else the mode maps it; cval for a column outside
 * under CONSTANT (col NULL). */
template <typename T>
__device__ __forceinline__ double cast_load(const cvk_cast_args &a, const T *col, long long j,
                                            bool inside)
{
    if (!col)
        return a.cval;
    if (!inside) {
        j = cvi_boundary_index(j, a.height, a.mode);
        if (j < 0)
            return a.cval;
    }
    return cast_value(__ldg(col + j * a.is[1]));
}

/* The vertical sums s[r] at rows y0 + r (r < R; rows past the image are
 * computed too, through the mode) of the column at col: each sum over the
 * y taps in order, fused multiply-adds in double. The R rows share a window
 * of R input values: at tap k, slot (r + k) % R holds row y0 + r + k of the
 * output r; the slot of output 0's row is then reloaded with the row the
 * last output needs next, so each input element is loaded and converted
 * once for the R outputs, and the taps unrolled by R keep every slot a
 * register (no moves). */
template <typename T, int R>
__device__ __forceinline__ void cast_columns(const cvk_cast_args &a, const T *col, long long y0,
                                             double (&s)[R])
{
    const long long y1 = y0 - a.koffy; /* the row of tap 0 of output row y0 */
    const bool inside = y1 >= 0 && y1 + R - 1 + a.ky <= a.height;
    double win[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        s[r] = 0.0;
        win[r] = cast_load<T>(a, col, y1 + r, inside);
    }
    for (int k0 = 0; k0 < a.ky; k0 += R) {
#pragma unroll
        for (int u = 0; u < R; u++) {
            const int k = k0 + u;
            if (k < a.ky) {
                const double w = a.ty[k];
#pragma unroll
                for (int r = 0; r < R; r++)
                    s[r] = fma(w, win[(r + u) % R], s[r]);
                if (k + 1 < a.ky)
                    win[u] = cast_load<T>(a, col, y1 + k + R, inside);
            }
        }
    }
}

/* The cast of kernel_math.h (the low bits of the truncated v / divisor);
 * without a divisor (1: v / 1 is v) the division is left out. */
__device__ __forceinline__ unsigned long long cast_bits(const cvk_cast_args &a, double v)
{
    return (unsigned long long)cvi_truncate_i64(a.divisor == 1.0 ? v : v / a.divisor, a.snap);
}
__device__ __forceinline__ void cast_store(const cvk_cast_args &a, unsigned char *p, double v)
{
    *p = (unsigned char)cast_bits(a, v);
}
__device__ __forceinline__ void cast_store(const cvk_cast_args &a, unsigned short *p, double v)
{
    *p = (unsigned short)cast_bits(a, v);
}

/* A vertical pass (one x tap): a thread per element of a tile row, its
 * column's sums stored directly. No shared memory, no barrier. */
template <typename T, int C>
__global__ void __launch_bounds__(CAST_THREADS, 4)
    cvk_cast_pass_kernel(const __grid_constant__ cvk_cast_args a)
{
    enum { TW = CAST_THREADS / C, TE = TW * C };
    const long long tiles_x = (a.width + TW - 1) / TW;
    const long long tiles_y = (a.height + CAST_TH_PASS - 1) / CAST_TH_PASS;
    const int t = threadIdx.x, c = t % C;
    if (t >= TE)
        return;
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z)
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * CAST_TH_PASS;
            const int rows = (int)(a.height - y0 < CAST_TH_PASS ? a.height - y0 : CAST_TH_PASS);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long x = bx * TW + t / C;
                if (x >= a.width)
                    continue;
                const T *col = (const T *)a.in + z * a.is[0] + x * a.is[2] + c * a.ics;
                T *dst = (T *)a.out + z * a.os[0] + x * a.os[2] + c * a.ocs;
                for (int r0 = 0; r0 < rows; r0 += CAST_R) {
                    double v[CAST_R];
                    cast_columns<T, CAST_R>(a, col, y0 + r0, v);
#pragma unroll
                    for (int r = 0; r < CAST_R; r++)
                        if (r0 + r < rows)
                            cast_store(a, dst + (y0 + r0 + r) * a.os[1], a.tx[0] * v[r]);
                }
            }
        }
}

/* Taps along x (and y): the tile's vertical sums staged in shared memory,
 * then the x taps over them, CAST_P consecutive pixels of one channel a
 * thread. The staged row is stored by phase: pixel q of the row (channel
 * c) at ((q % CAST_P) * L4 + q / CAST_P) * C + c, so that the threads of a
 * warp (consecutive groups g of CAST_P pixels, channels fastest) read
 * consecutive doubles at every tap (no bank conflicts), and each thread's
 * window of CAST_P values slides along the row as cast_columns' does. */
template <typename T, int C>
__global__ void __launch_bounds__(CAST_THREADS, 4)
    cvk_cast_sep_kernel(const __grid_constant__ cvk_cast_args a)
{
    enum { P = CAST_P, TW = CAST_THREADS / C / P * P, TH = CAST_TH_SEP, GC = TW / P * C };
    CVK_DYNAMIC_SHARED(smem);
    double *mid = (double *)smem;
    const int NP = TW + a.kx - 1;    /* staged pixels a row */
    const int L4 = (NP + P - 1) / P; /* of each phase */
    const int ROW = P * L4 * C;      /* doubles a staged row */
    const long long tiles_x = (a.width + TW - 1) / TW, tiles_y = (a.height + TH - 1) / TH;
    const int t = threadIdx.x;
    /* block-uniform loop bounds: the barriers below stay legal */
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z) {
        const T *in = (const T *)a.in + z * a.is[0];
        T *out = (T *)a.out + z * a.os[0];
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * TH;
            const int rows = (int)(a.height - y0 < TH ? a.height - y0 : TH);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long x0 = bx * TW;
                /* the vertical sums of the tile's columns and halo */
                const long long p0 = x0 - a.koffx; /* first staged pixel */
                for (int j = t; j < NP * C; j += CAST_THREADS) {
                    const int q = j / C, c = j % C;
                    const long long m = cvi_boundary_index(p0 + q, a.width, a.mode);
                    const T *col = m < 0 ? (const T *)0 : in + m * a.is[2] + c * a.ics;
                    double *dst = mid + ((q % P) * L4 + q / P) * C + c;
                    for (int r0 = 0; r0 < rows; r0 += CAST_R) {
                        double v[CAST_R];
                        cast_columns<T, CAST_R>(a, col, y0 + r0, v);
#pragma unroll
                        for (int r = 0; r < CAST_R; r++)
                            if (r0 + r < rows)
                                dst[(r0 + r) * ROW] = v[r];
                    }
                }
                __syncthreads();
                /* the x taps over them: item (row, group g, channel c) */
                for (int i = t; i < rows * GC; i += CAST_THREADS) {
                    const int r = i / GC, g = i % GC / C, c = i % C;
                    const double *m = mid + r * ROW + g * C + c; /* phase 0 of pixel P g */
                    double s[P], win[P];
#pragma unroll
                    for (int o = 0; o < P; o++) {
                        s[o] = 0.0;
                        win[o] = m[o * L4 * C];
                    }
                    /* at tap k, slot (o + k) % P holds staged pixel P g + o + k */
                    for (int k0 = 0; k0 < a.kx; k0 += P) {
#pragma unroll
                        for (int u = 0; u < P; u++) {
                            const int k = k0 + u;
                            if (k < a.kx) {
                                const double w = a.tx[k];
#pragma unroll
                                for (int o = 0; o < P; o++)
                                    s[o] = fma(w, win[(o + u) % P], s[o]);
                                if (k + 1 < a.kx) /* pixel P g + k + P: phase u */
                                    win[u] = m[(u * L4 + k0 / P + 1) * C];
                            }
                        }
                    }
                    const long long x = x0 + P * g;
                    T *dst = out + (y0 + r) * a.os[1] + x * a.os[2] + c * a.ocs;
#pragma unroll
                    for (int o = 0; o < P; o++)
                        if (x + o < a.width)
                            cast_store(a, dst + o * a.os[2], s[o]);
                }
                __syncthreads(); /* mid is refilled for the next tile */
            }
        }
    }
}

/* ---- 1-D passes on rows of contiguous interleaved elements ----------------
 * The passes the Python package runs for integer images (scipy's cast after
 * each axis): taps along y only (cvk_cast_ypass_kernel) or along x only
 * (cvk_cast_xpass_kernel), on rows whose elements are contiguous.
 * Accumulator type A: double sums in tap order, as the kernels above (bit
 * for bit their results); or float, where the float sum decides the cast
 * (cast_decide): exactly, when every weight, cval and partial sum is an
 * integer below 2^22; else when no integer lies within the float sum's
 * error bound of it. An output it cannot decide is summed again in double
 * from the input (cast_y_double, cast_x_double): rare on noisy data; every
 * output of regions at one value (whose sums are integers up to rounding),
 * except zeros, which a thread recognises from its loads. */
#define PASS_V 4    /* y pass: elements a thread along the row (one 4- or 8-byte load) */
#define PASS_TH 32  /* y pass: rows a block's strip */
#define PASS_XTW 32 /* x pass: pixel groups a tile row (each PASS_P(A) pixels) */
/* y pass: output rows a thread at once (8 for float, measured: spills at
 * the 128-register bound, 0.51-0.55 ms against 0.40-0.46 on an H100) */
#define PASS_R(A) 4
#define PASS_P(A) (sizeof(A) == 4 ? 8 : 4) /* x pass: pixels a thread at once */
#define PASS_XTH(C) ((C) <= 2 ? 16 : 8)    /* x pass: rows a tile */

typedef struct cast_pass_params {
    cvk_cast_args a;  /* the double sums (and the fallback of the float ones) */
    long long wc;     /* elements a row */
    int k, koff;      /* the pass's taps and origin */
    int vec;          /* rows and pointers allow PASS_V-element loads (y pass: and stores) */
    int ovec;         /* x pass: output rows and pointer allow PASS_V-element stores */
    int exact;        /* float sums are exact integers below 2^22 */
    int unit;         /* divisor 1 */
    int idiv;         /* exact, with an integer divisor below 2^22 */
    unsigned cval_nz; /* cval enters the sums (CONSTANT) and is not zero */
    int zeros;     /* an output of zero inputs is 0 unchecked (cval, if used, is 0 as float too) */
    float d, invd; /* divisor and its reciprocal */
    float err_abs, err_rel; /* the float quotient's error bound: err_abs + err_rel |q| */
    int cbound; /* pass_decide: every |q| < 2^21, its error within c_abs + c_rel |q|; w over the
                   divisor (y passes, the x pass through shared memory) */
    float c_abs, c_rel;
    float cval;
    float w[CVK_CAST_MAX_K]; /* the float sums' taps: the pass's times the other axis's tap */
    /* the passes through shared memory */
    long long strip; /* rows a warp walks down */
    int nr;          /* y: rows a warp's ring */
    int kp;          /* taps summed: k rounded up to a multiple of YS_R (zeros past k) */
    int chunk;       /* bytes a cp.async copies: 16, 8 or 4 */
    int xrb;         /* x: bytes a ring row */
} cast_pass_params;

/* The bound case of cast_decide: whether no integer lies within the error
 * bound of the float quotient q, whose truncation *v then is the double
 * sum's. With t = floor(q), d = q - t is exact, and [q - e, q + e] lies in
 * [t, t + 1) when d >= e and d + e < 1 (the rounded d + e reaches 1 when
 * the exact one does). */
__device__ __forceinline__ bool cast_decide_bound(const cast_pass_params &p, float q, int *v)
{
    const float d = q - floorf(q);
    const float e = fmaf(fabsf(q), p.err_rel, p.err_abs);
    *v = (int)q;
    return d >= e && d + e < 1.0f && fabsf(q) < 4194304.0f;
}

/* Whether the float sum s (of integers and taps w, tap order any) decides
 * the cast; if so, *v is the truncated integer the double sum gives. */
__device__ __forceinline__ bool cast_decide(const cast_pass_params &p, float s, int *v)
{
    if (p.exact && p.unit) {
        *v = (int)s;
        return true;
    }
    const float q = p.unit ? s : s * p.invd;
    if (p.idiv) {
        /* S / d is n exactly, or at least 1/|d| from every integer, where q
         * (within 2^-22 |q| of it, |S| < 2^22) truncates alike */
        const float n = rintf(q);
        *v = fmaf(n, p.d, -s) == 0.0f ? (int)n : (int)q;
        return true;
    }
    return cast_decide_bound(p, q, v);
}

__device__ __forceinline__ float pass_fma(float w, float x, float s)
{
    return fmaf(w, x, s);
}
__device__ __forceinline__ double pass_fma(double w, double x, double s)
{
    return fma(w, x, s);
}

/* The double sum of the y pass at element e of row y (plane base in), as
 * cvk_cast_pass_kernel computes it, and its cast. */
template <typename T>
__device__ __noinline__ unsigned cast_y_double(const cast_pass_params &p, const T *in, long long e,
                                               long long y)
{
    const cvk_cast_args &a = p.a;
    double s = 0.0;
    for (int k = 0; k < p.k; k++) {
        const long long j = cvi_boundary_index(y - p.koff + k, a.height, a.mode);
        s = fma(a.ty[k], j < 0 ? a.cval : cast_value(__ldg(in + j * a.is[1] + e)), s);
    }
    return (unsigned)cast_bits(a, a.tx[0] * s);
}

/* The double sum of the x pass at pixel x, channel c of a row, as
 * cvk_cast_sep_kernel computes it (one y tap), and its cast. */
template <typename T, int C>
__device__ __noinline__ unsigned cast_x_double(const cast_pass_params &p, const T *row, long long x,
                                               int c)
{
    const cvk_cast_args &a = p.a;
    double s = 0.0;
    for (int k = 0; k < p.k; k++) {
        const long long m = cvi_boundary_index(x - p.koff + k, a.width, a.mode);
        const double v = m < 0 ? a.cval : cast_value(__ldg(row + m * C + c));
        s = fma(a.tx[k], fma(a.ty[0], v, 0.0), s);
    }
    return (unsigned)cast_bits(a, s);
}

/* A row's PASS_V elements as loaded: one 4-byte word (uint8) or two
 * (uint16). */
__device__ __forceinline__ void pass_fetch4(const unsigned char *q, unsigned &w)
{
    w = __ldg((const unsigned *)q);
}
__device__ __forceinline__ void pass_fetch4(const unsigned short *q, uint2 &w)
{
    w = __ldg((const uint2 *)q);
}
__device__ __forceinline__ void pass_put(unsigned &w, int i, unsigned v)
{
    w |= v << (8 * i);
}
__device__ __forceinline__ void pass_put(uint2 &w, int i, unsigned v)
{
    (i < 2 ? w.x : w.y) |= v << (16 * (i & 1));
}
__device__ __forceinline__ unsigned pass_bits(unsigned w)
{
    return w;
}
__device__ __forceinline__ unsigned pass_bits(uint2 w)
{
    return w.x | w.y;
}
__device__ __forceinline__ void pass_zero(unsigned &w)
{
    w = 0u;
}
__device__ __forceinline__ void pass_zero(uint2 &w)
{
    w.x = w.y = 0u;
}

/* The row the mode maps j to (cvi_boundary_index), out of line: inlined
 * at each of the y pass's fetches it made the pass 12-15% slower (H100,
 * same run: u8 RGB gaussian:2 0.499-0.505 ms against 0.440, u8 RGBA
 * gaussian:1 0.426-0.427 against 0.380). */
__device__ __noinline__ long long pass_boundary(long long j, long long n, int mode)
{
    return cvi_boundary_index(j, n, mode);
}

/* Fetches row j's PASS_V elements at e of the plane at in into w:
 * `inside` says j is, else the mode maps it (past the ends under CONSTANT:
 * bit `slot` of *cvals set, w zero); `full` that all PASS_V lie in the row
 * and the vector load serves. */
template <typename T, typename RAW>
__device__ __forceinline__ void pass_fetch(const cast_pass_params &p, const T *in, long long e,
                                           long long j, bool inside, bool full, RAW &w,
                                           unsigned *cvals, int slot)
{
    const cvk_cast_args &a = p.a;
    if (!inside) {
        j = pass_boundary(j, a.height, a.mode);
        if (j < 0) {
            *cvals |= 1u << slot;
            pass_zero(w);
            return;
        }
    }
    const T *q = in + j * a.is[1] + e;
    if (full) {
        pass_fetch4(q, w);
    } else {
        pass_zero(w);
#pragma unroll
        for (int i = 0; i < PASS_V; i++)
            if (e + i < p.wc)
                pass_put(w, i, __ldg(q + i));
    }
}

/* A fetched word's elements as floats (exact) or doubles. */
__device__ __forceinline__ void pass_unpack(unsigned w, float (&x)[PASS_V])
{
#ifdef __CUDA_ARCH__
    /* 2^23 + byte as a float's bits, less 2^23: exact, no conversion */
    x[0] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440)) - 8388608.0f;
    x[1] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7441)) - 8388608.0f;
    x[2] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7442)) - 8388608.0f;
    x[3] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7443)) - 8388608.0f;
#else
    for (int i = 0; i < 4; i++)
        x[i] = (float)((w >> (8 * i)) & 0xffu);
#endif
}
__device__ __forceinline__ void pass_unpack(uint2 w, float (&x)[PASS_V])
{
#ifdef __CUDA_ARCH__
    x[0] = __uint_as_float(__byte_perm(w.x, 0x4B000000u, 0x7410)) - 8388608.0f;
    x[1] = __uint_as_float(__byte_perm(w.x, 0x4B000000u, 0x7432)) - 8388608.0f;
    x[2] = __uint_as_float(__byte_perm(w.y, 0x4B000000u, 0x7410)) - 8388608.0f;
    x[3] = __uint_as_float(__byte_perm(w.y, 0x4B000000u, 0x7432)) - 8388608.0f;
#else
    x[0] = (float)(w.x & 0xffffu), x[1] = (float)(w.x >> 16);
    x[2] = (float)(w.y & 0xffffu), x[3] = (float)(w.y >> 16);
#endif
}
template <typename RAW>
__device__ __forceinline__ void pass_unpack(RAW w, double (&x)[PASS_V])
{
    float f[PASS_V];
    pass_unpack(w, f);
#pragma unroll
    for (int i = 0; i < PASS_V; i++)
        x[i] = (double)f[i];
}
/* x: a fetched word's elements as A, or cval (`cval`: its row lies past
 * the ends); *bits gathers their bits (cval's: p.cval_nz). */
template <typename RAW, typename A>
__device__ __forceinline__ void pass_take(const cast_pass_params &p, RAW w, bool cval,
                                          A (&x)[PASS_V], unsigned *bits)
{
    if (cval) {
        *bits |= p.cval_nz;
#pragma unroll
        for (int i = 0; i < PASS_V; i++)
            x[i] = sizeof(A) == 4 ? (A)p.cval : (A)p.a.cval;
    } else {
        *bits |= pass_bits(w);
        pass_unpack(w, x);
    }
}

/* The casts v of the float (or double: times dscale) sums s, R x V of
 * them, the case of the cast chosen once; `bits` is zero when every input
 * was zero. Returns
 * the outputs the float sums could not decide (bit r V + i: s[r][i]). */
template <typename A, int R, int V>
__device__ __forceinline__ unsigned pass_decide(const cast_pass_params &p, const A (&s)[R][V],
                                                unsigned bits, double dscale, unsigned (&v)[R][V])
{
    const cvk_cast_args &a = p.a;
    unsigned undecided = 0;
    if (sizeof(A) == 8) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < V; i++)
                v[r][i] = (unsigned)cast_bits(a, dscale * (double)s[r][i]);
    } else if (bits == 0) { /* every input zero: every sum zero */
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < V; i++)
                v[r][i] = 0u;
    } else if ((p.exact && p.unit) || p.idiv) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < V; i++) {
                int c;
                cast_decide(p, (float)s[r][i], &c);
                v[r][i] = (unsigned)c;
            }
    } else if (p.cbound) {
        /* q (p.w holds the taps over the divisor) decides unless its
         * nearest integer lies within its error bound */
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < V; i++) {
                const float q = (float)s[r][i];
                if (fabsf(q - rintf(q)) < fmaf(fabsf(q), p.c_rel, p.c_abs))
                    undecided |= 1u << (r * V + i);
                v[r][i] = (unsigned)(int)q;
            }
    } else {
        const float m = p.unit ? 1.0f : p.invd;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < V; i++) {
                int c;
                if (!cast_decide_bound(p, (float)s[r][i] * m, &c))
                    undecided |= 1u << (r * V + i);
                v[r][i] = (unsigned)c;
            }
    }
    return undecided;
}

/* Casts and stores the sums s of the R output rows from y0 (those from
 * row `rows` on lie past the strip) at elements e .. e + PASS_V - 1 of
 * the plane at out (`full`: all PASS_V in the row, vector stores); `bits`
 * is zero when every input was zero. Returns the outputs the float sums
 * could not decide (bit r PASS_V + i: output (r, i), in the plane), left
 * for the caller to sum again in double. */
template <typename T, typename A, int R>
__device__ __forceinline__ unsigned pass_store_rows(const cast_pass_params &p,
                                                    const A (&s)[R][PASS_V], unsigned bits, T *out,
                                                    long long e, bool full, long long y0, int rows)
{
    enum { V = PASS_V };
    const cvk_cast_args &a = p.a;
    unsigned v[R][V];
    const unsigned undecided = pass_decide<A, R, V>(p, s, bits, a.tx[0], v);
#pragma unroll
    for (int r = 0; r < R; r++) {
        if (r >= rows)
            break;
        T *o = out + (y0 + r) * a.os[1] + e;
        if (full && sizeof(T) == 1) {
            *(unsigned *)o = __byte_perm(__byte_perm(v[r][0], v[r][1], 0x0040),
                                         __byte_perm(v[r][2], v[r][3], 0x0040), 0x5410);
        } else if (full) {
            uint2 w2;
            w2.x = __byte_perm(v[r][0], v[r][1], 0x5410);
            w2.y = __byte_perm(v[r][2], v[r][3], 0x5410);
            *(uint2 *)o = w2;
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                if (e + i < p.wc)
                    o[i] = (T)v[r][i];
        }
    }
    if (!undecided)
        return 0;
    /* only outputs inside the strip and the row */
    unsigned inside = 0;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int i = 0; i < V; i++)
            inside |= r < rows && e + i < p.wc ? 1u << (r * V + i) : 0u;
    return undecided & inside;
}

/* Taps along y only: a thread takes PASS_V consecutive elements of a row
 * and PASS_R(A) output rows at a time, from a window of PASS_R(A) input
 * rows rotating through registers (cast_columns' scheme). The rows a block
 * of PASS_R(A) taps brings into the window are fetched (as loaded words)
 * during the block before, so the loads have a block's FMAs to arrive. */
template <typename T, typename A>
__global__ void __launch_bounds__(CAST_THREADS, 2)
    cvk_cast_ypass_kernel(const __grid_constant__ cast_pass_params p)
{
    enum { V = PASS_V, R = PASS_R(A) };
    typedef typename std::conditional<sizeof(T) == 1, unsigned, uint2>::type RAW;
    const cvk_cast_args &a = p.a;
    const bool dbl = sizeof(A) == 8;
    const int K = p.k;
    const long long tiles_x = cvk_ceil_div(p.wc, (long long)CAST_THREADS * V);
    const long long tiles_y = cvk_ceil_div(a.height, PASS_TH);
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z)
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * PASS_TH;
            const int rows = (int)(a.height - y0 < PASS_TH ? a.height - y0 : PASS_TH);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long e = (bx * CAST_THREADS + threadIdx.x) * V;
                if (e >= p.wc)
                    continue;
                const bool full = p.vec && e + V <= p.wc;
                const T *in = (const T *)a.in + z * a.is[0];
                T *out = (T *)a.out + z * a.os[0];
                for (int r0 = 0; r0 < rows; r0 += R) {
                    const long long y1 = y0 + r0 - p.koff; /* tap 0's row of output r0 */
                    const bool inside = y1 >= 0 && y1 + R - 1 + K <= a.height;
                    A s[R][V], win[R][V];
                    RAW cur[R], nxt[R];
                    unsigned bits = 0, cv = 0, cn = 0;
                    /* the window's first rows, and the rows taps 0..R-1 bring */
#pragma unroll
                    for (int r = 0; r < R; r++)
                        pass_fetch<T>(p, in, e, y1 + r, inside, full, nxt[r], &cn, r);
#pragma unroll
                    for (int u = 0; u < R; u++)
                        if (u + 1 < K)
                            pass_fetch<T>(p, in, e, y1 + R + u, inside, full, cur[u], &cv, u);
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        pass_take(p, nxt[r], (cn >> r) & 1u, win[r], &bits);
#pragma unroll
                        for (int i = 0; i < V; i++)
                            s[r][i] = (A)0;
                    }
#pragma unroll 1
                    for (int k0 = 0; k0 < K; k0 += R) {
                        /* the rows of the next block's taps */
                        cn = 0;
#pragma unroll
                        for (int u = 0; u < R; u++)
                            if (k0 + R + u + 1 < K)
                                pass_fetch<T>(p, in, e, y1 + k0 + 2 * R + u, inside, full, nxt[u],
                                              &cn, u);
#pragma unroll
                        for (int u = 0; u < R; u++) {
                            const int k = k0 + u;
                            if (k < K) {
                                const A w = dbl ? (A)a.ty[k] : (A)p.w[k];
#pragma unroll
                                for (int r = 0; r < R; r++)
#pragma unroll
                                    for (int i = 0; i < V; i++)
                                        s[r][i] = pass_fma(w, win[(r + u) % R][i], s[r][i]);
                                /* slot u: row y1 + k + R, for tap k + 1 on */
                                if (k + 1 < K)
                                    pass_take(p, cur[u], (cv >> u) & 1u, win[u], &bits);
                            }
                        }
#pragma unroll
                        for (int u = 0; u < R; u++)
                            cur[u] = nxt[u];
                        cv = cn;
                    }
                    /* the outputs the float sums left, in double (rare) */
                    unsigned undecided = pass_store_rows<T, A, R>(p, s, bits, out, e, full, y0 + r0,
                                                                  rows - r0);
                    while (undecided) {
                        const int b = __ffs(undecided) - 1, r = b / V, i = b % V;
                        undecided &= undecided - 1;
                        const long long y = y0 + r0 + r;
                        out[y * a.os[1] + e + i] = (T)cast_y_double<T>(p, in, e + i, y);
                    }
                }
            }
        }
}

/* ---- the y pass through shared memory -------------------------------------
 * cvk_cast_ystrip_kernel: each warp owns a band of YS_BW = 32 PASS_V
 * elements of a row and walks down `strip` output rows, R = 4 at a time (a
 * group), on its own: its input rows come into its ring of p.nr rows in
 * shared memory with cp.async, a stage of R rows a group, YS_D stages ahead
 * of those the group reads (rows past the image's ends mapped by the mode
 * once a row; a cval row is marked, not stored), and only the warp reads
 * them, so a __syncwarp is the only barrier. A thread sums the taps of its
 * PASS_V elements of the group's R rows from the ring (a window of R rows
 * rotating through registers, as cvk_cast_ypass_kernel does from global
 * memory), over the taps rounded up to a multiple of R (zero taps: no test
 * a tap). Each input row crosses DRAM once a strip (plus the strip's
 * K - 1 halo rows); the unrolled body holds shared loads, unpacking and
 * FMAs only. */
#define YS_NT 128           /* threads a block (4 independent warps) */
#define YS_R 4              /* output rows a group, input rows a stage */
#define YS_D 2              /* stages copied ahead of those a group reads */
#define YS_MAX_NR 64        /* ring rows at most: K up to 4 (16 - 1 - YS_D) = 52 */
#define YS_BW (32 * PASS_V) /* elements a warp's band */

/* The taps a y pass of K taps sums (a multiple of YS_R) and the ring rows
 * it needs: the stages a group reads (KP + R - 1 rows) and the YS_D ahead,
 * rounded up to a power of two. */
static int ystrip_taps(int K)
{
    return (K + YS_R - 1) / YS_R * YS_R;
}
static int ystrip_rows(int K)
{
    const int need = YS_R * (ystrip_taps(K) / YS_R + 1 + YS_D);
    int nr = YS_R;
    while (nr < need)
        nr *= 2;
    return nr;
}

/* The warp starts copying stage st (ring rows st R .. st R + R - 1, input
 * rows ya + those) of its band into its ring: the first nch chunks of
 * p.chunk bytes of each row by cp.async, a lane a chunk (2^cl chunks a
 * ring row), then the rest of the nb bytes inside the row byte by byte;
 * marks each row that is cval. One commit group. */
template <typename T>
__device__ __forceinline__ void ystrip_issue(const cast_pass_params &p, const char *band,
                                             long long ya, int st, int stages, int nb, int nch,
                                             int cl, unsigned char *ring, int *rcv)
{
    enum { RB = YS_BW * (int)sizeof(T) };
    const cvk_cast_args &a = p.a;
    const int lane = threadIdx.x & 31;
    if (st < stages) {
#pragma unroll 1
        for (int idx = lane; idx < YS_R << cl; idx += 32) {
            const int c = idx & ((1 << cl) - 1);
            const int rel = st * YS_R + (idx >> cl), slot = rel & (p.nr - 1);
            const long long j = ya + rel;
            const long long m = j >= 0 && j < a.height ? j : pass_boundary(j, a.height, a.mode);
            if (c == 0)
                rcv[slot] = m < 0;
            if (m < 0 || c >= nch)
                continue;
            const char *src = band + m * a.is[1] * (long long)sizeof(T) + c * p.chunk;
            cvk_cp_chunk(ring + slot * RB + c * p.chunk, src, p.chunk);
        }
        if (nb > nch * p.chunk) /* the band at the rows' end */
            for (int r = 0; r < YS_R; r++) {
                const int rel = st * YS_R + r;
                const long long j = ya + rel;
                const long long m = j >= 0 && j < a.height ? j : pass_boundary(j, a.height, a.mode);
                if (m < 0)
                    continue;
                const char *src = band + m * a.is[1] * (long long)sizeof(T);
                unsigned char *dst = ring + (rel & (p.nr - 1)) * RB;
                for (int b = nch * p.chunk + lane; b < nb; b += 32)
                    dst[b] = (unsigned char)src[b];
            }
    }
    cvk_cp_commit();
}

/* The y sums s of the group whose tap 0 of output row 0 is ring row rel0,
 * the thread's elements at `base` in each ring row, over the p.kp taps (the
 * taps past K zero); *bits gathers the inputs' bits. CV: some of the rows
 * may be cval (rcv). */
template <typename T, typename A, bool CV>
__device__ __forceinline__ void ystrip_sums(const cast_pass_params &p, const unsigned char *base,
                                            const int *rcv, int rel0, A (&s)[YS_R][PASS_V],
                                            unsigned *bits)
{
    enum { V = PASS_V, R = YS_R, RB = YS_BW * (int)sizeof(T) };
    typedef typename std::conditional<sizeof(T) == 1, unsigned, uint2>::type RAW;
    const bool dbl = sizeof(A) == 8;
    const int KP = p.kp, mask = p.nr - 1;
    A win[R][V];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int slot = (rel0 + r) & mask;
        pass_take(p, *(const RAW *)(base + slot * RB), CV && rcv[slot], win[r], bits);
#pragma unroll
        for (int i = 0; i < V; i++)
            s[r][i] = (A)0;
    }
    /* at tap k, slot (r + k) % R of the window holds ring row rel0 + r + k;
     * after tap k slot k % R takes row rel0 + k + R (the last block's last
     * tap takes none) */
    for (int k0 = 0;; k0 += R) {
        const bool last = k0 + R >= KP;
#pragma unroll
        for (int u = 0; u < R; u++) {
            const int k = k0 + u;
            const A w = dbl ? (A)p.a.ty[k] : (A)p.w[k];
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < V; i++)
                    s[r][i] = pass_fma(w, win[(r + u) % R][i], s[r][i]);
            if (u < R - 1 || !last) {
                const int slot = (rel0 + k + R) & mask;
                pass_take(p, *(const RAW *)(base + slot * RB), CV && rcv[slot], win[u], bits);
            }
        }
        if (last)
            break;
    }
}

/* The double sum, in tap order, of the K taps ty (in shared memory) over
 * ring rows rel0 .. rel0 + K - 1 at the element at `at` of each row:
 * cast_y_double's sum, from the ring (out of line: rare). */
template <typename T>
__device__ __noinline__ double ystrip_double(const double *ty, int K, double cval,
                                             const unsigned char *at, const int *rcv, int rel0,
                                             int mask)
{
    enum { RB = YS_BW * (int)sizeof(T) };
    double s = 0.0;
    for (int k = 0; k < K; k++) {
        const int slot = (rel0 + k) & mask;
        s = fma(ty[k], rcv[slot] ? cval : cast_value(*(const T *)(at + slot * RB)), s);
    }
    return s;
}

template <typename T, typename A>
__global__ void __launch_bounds__(YS_NT, sizeof(A) == 4 ? 6 : 4)
    cvk_cast_ystrip_kernel(const __grid_constant__ cast_pass_params p)
{
    enum { V = PASS_V, R = YS_R, RB = YS_BW * (int)sizeof(T), W = YS_NT / 32 };
    const cvk_cast_args &a = p.a;
    CVK_DYNAMIC_SHARED(smem);
    double *ty = (double *)smem; /* the K taps, for the double sums */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned char *ring = smem + CVK_CAST_MAX_K * 8 + warp * (p.nr * RB); /* the warp's rows */
    int *rcv = (int *)(smem + CVK_CAST_MAX_K * 8 + W * p.nr * RB) + warp * p.nr; /* 1: cval */
    for (int k = threadIdx.x; k < p.k; k += YS_NT)
        ty[k] = a.ty[k];
    __syncthreads();                        /* the only block-wide barrier */
    const int SK = p.kp / R + 1;            /* stages a group reads: rows KP + R - 1 */
    const int cl = __ffs(RB / p.chunk) - 1; /* log2 of the chunks a ring row */
    const long long bands = cvk_ceil_div(p.wc, (long long)YS_BW);
    const long long strips = cvk_ceil_div(a.height, p.strip);
    const bool cvrows = a.mode == CVI_MODE_CONSTANT;
    const unsigned char *mine = ring + V * lane * (int)sizeof(T); /* the thread's elements */
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z)
        for (long long by = blockIdx.y; by < strips; by += gridDim.y)
            for (long long bw = blockIdx.x * (long long)W + warp; bw < bands;
                 bw += (long long)gridDim.x * W) {
                const long long e0 = bw * YS_BW, e = e0 + V * lane;
                const long long ys = by * p.strip;
                const long long ye = ys + p.strip < a.height ? ys + p.strip : a.height;
                const long long ya = ys - p.koff; /* the input row of ring row 0 */
                const int groups = (int)((ye - ys + R - 1) / R);
                const int stages = groups + SK - 1;
                /* the band's bytes inside the row: nch whole chunks, then the rest */
                const long long left = (p.wc - e0) * (long long)sizeof(T);
                const int nb = left < RB ? (int)left : RB, nch = nb / p.chunk;
                const bool full = e + V <= p.wc;
                const T *in = (const T *)a.in + z * a.is[0];
                T *out = (T *)a.out + z * a.os[0];
                const char *band = (const char *)(in + e0);
#pragma unroll 1
                for (int st = 0; st < SK + YS_D - 1; st++)
                    ystrip_issue<T>(p, band, ya, st, stages, nb, nch, cl, ring, rcv);
#pragma unroll 1
                for (int g = 0; g < groups; g++) {
                    cvk_cp_wait<YS_D - 1>(); /* the group's stages are in (later ones fly on) */
                    __syncwarp();            /* ...every lane's; group g - 1's reads are done */
                    ystrip_issue<T>(p, band, ya, g + SK + YS_D - 1, stages, nb, nch, cl, ring, rcv);
                    if (e >= p.wc)
                        continue;
                    const int rel0 = R * g;
                    const long long y1 = ya + rel0; /* tap 0's row of the group's first output */
                    A s[R][V];
                    unsigned bits = 0;
                    if (cvrows && (y1 < 0 || y1 + p.kp + R - 1 > a.height))
                        ystrip_sums<T, A, true>(p, mine, rcv, rel0, s, &bits);
                    else
                        ystrip_sums<T, A, false>(p, mine, rcv, rel0, s, &bits);
                    unsigned undecided = pass_store_rows<T, A, R>(p, s, bits, out, e, full,
                                                                  ys + rel0, (int)(ye - ys - rel0));
                    while (undecided) { /* in double, from the ring (rare) */
                        const int b = __ffs(undecided) - 1, r = b / V, i = b % V;
                        undecided &= undecided - 1;
                        const double d = ystrip_double<T>(ty, p.k, a.cval, mine + i * sizeof(T),
                                                          rcv, rel0 + r, p.nr - 1);
                        out[(ys + rel0 + r) * a.os[1] + e + i] = (T)cast_bits(a, a.tx[0] * d);
                    }
                }
                cvk_cp_wait<0>(); /* the ring is refilled for the next band */
                __syncwarp();
            }
}

/* ---- the x pass through shared memory -------------------------------------
 * cvk_cast_xstrip_kernel<T, A, C>: each warp owns a segment of XS_NPW(C)
 * pixels of a row (32 / C items of XS_P consecutive pixels of one channel,
 * a lane an item) and walks down `strip` rows on its own: each row's
 * segment and its halo come into the warp's ring of XS_NS rows in shared
 * memory as they are (cp.async chunks wholly inside the row, the bytes of
 * a chunk across its end one by one), XS_D rows ahead. A lane sums the
 * taps (rounded up to a multiple of 4, zeros past K) of its item's XS_P
 * outputs from a window of XS_P inputs rotating through registers, each
 * input read from shared memory once; the cast is decided as in the y
 * pass, the outputs left summed again in double from the ring. Items whose
 * taps reach past the row's ends are left to cvk_cast_xedge_kernel (a
 * thread an output, through the mode from global memory): an edge item
 * here made its warp, and the wave, several times slower. */
#define XS_NT 128                 /* threads a block (4 independent warps) */
#define XS_P 8                    /* pixels an item */
#define XS_NS 8                   /* rows in a warp's ring */
#define XS_D 4                    /* rows copied ahead */
#define XS_NPW(C) (32 / (C)*XS_P) /* pixels a warp's segment */

/* Bytes a ring row holds: the segment's XS_NPW(C) + KP pixels (the window
 * reads one past the last tap), from a chunk boundary, whole chunks. */
static int xstrip_row_bytes(int C, int es, int kp, int chunk)
{
    const int b = (XS_NPW(C) + kp) * C * es + 2 * chunk;
    return (b + 15) / 16 * 16;
}

/* The warp starts copying row y's bytes [b0, b0 + nb) (b0 a multiple of
 * p.chunk, relative to the row's start, which may lie before it) into
 * ring row dst: chunks wholly inside the row (rb bytes) by cp.async, the
 * bytes of the others inside the row one by one. One commit group. */
__device__ __forceinline__ void xstrip_issue(const cast_pass_params &p, const char *row,
                                             long long b0, int nb, long long rb, bool live,
                                             unsigned char *dst)
{
    const int lane = threadIdx.x & 31, ch = p.chunk;
    if (live)
#pragma unroll 1
        for (int o = lane * ch; o < nb; o += 32 * ch) {
            const long long g = b0 + o;
            if (g >= 0 && g + ch <= rb) {
                cvk_cp_chunk(dst + o, row + g, ch);
            } else {
                for (int i = 0; i < ch; i++)
                    if (g + i >= 0 && g + i < rb)
                        dst[o + i] = (unsigned char)row[g + i];
            }
        }
    cvk_cp_commit();
}

/* An element as the x pass sums it: float (exact), or the double of the
 * y tap times it (cast_x_double's order). */
__device__ __forceinline__ float xstrip_value(const cast_pass_params &p, unsigned v, float)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(0x4B000000u | v) - 8388608.0f;
#else
    return (float)v;
#endif
}
__device__ __forceinline__ double xstrip_value(const cast_pass_params &p, unsigned v, double)
{
    return fma(p.a.ty[0], cast_value(v), 0.0);
}

/* The double sum of cast_x_double over the K taps tx (in shared memory)
 * from the element at `at` of a ring row, elements `step` bytes apart
 * (out of line: rare). */
template <typename T>
__device__ __noinline__ double xstrip_double(const double *tx, int K, double ty0,
                                             const unsigned char *at, int step)
{
    double s = 0.0;
    for (int k = 0; k < K; k++)
        s = fma(tx[k], fma(ty0, cast_value(*(const T *)(at + k * step)), 0.0), s);
    return s;
}

/* Blocks a multiprocessor: 6 (80 registers) for float sums, 5 (96) for
 * double ones (H100, u16 RGB 4096^2 gaussian:3 x pass 0.401-0.407 ms
 * against 0.431-0.438 with 4 blocks at 106-118 registers; 64 registers for
 * float sums measured within 6% of 80). */
template <typename T, typename A, int C>
__global__ void __launch_bounds__(XS_NT, sizeof(A) == 4 ? 6 : 5)
    cvk_cast_xstrip_kernel(const __grid_constant__ cast_pass_params p)
{
    enum { P = XS_P, NPW = XS_NPW(C), G = 32 / C, ES = (int)sizeof(T), W = XS_NT / 32 };
    const cvk_cast_args &a = p.a;
    const bool dbl = sizeof(A) == 8;
    CVK_DYNAMIC_SHARED(smem);
    double *tx = (double *)smem; /* the K taps, for the double sums */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int RB = p.xrb; /* bytes a ring row */
    unsigned char *ring = smem + CVK_CAST_MAX_K * 8 + warp * (XS_NS * RB);
    for (int k = threadIdx.x; k < p.k; k += XS_NT)
        tx[k] = a.tx[k];
    __syncthreads();                      /* the only block-wide barrier */
    const int g = lane / C, c = lane % C; /* the lane's item: pixels P g.., channel c */
    const long long segs = cvk_ceil_div(a.width, NPW);
    const long long strips = cvk_ceil_div(a.height, p.strip);
    const long long rb = a.width * C * ES; /* bytes of a row's elements */
    const int step = C * ES;               /* bytes from a pixel to the next */
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z)
        for (long long by = blockIdx.y; by < strips; by += gridDim.y)
            for (long long sg = blockIdx.x * (long long)W + warp; sg < segs;
                 sg += (long long)gridDim.x * W) {
                const long long x0 = sg * NPW, ys = by * p.strip;
                const int rows = (int)(a.height - ys < p.strip ? a.height - ys : p.strip);
                /* the ring rows' bytes: from the chunk holding pixel x0 - koff */
                const long long fb = (x0 - p.koff) * C * ES;
                const long long b0 = (fb >= 0 ? fb / p.chunk : -((-fb + p.chunk - 1) / p.chunk)) *
                                     p.chunk;
                const char *plane = (const char *)a.in + z * a.is[0] * ES;
                T *out = (T *)a.out + z * a.os[0];
                const long long x = x0 + P * g; /* the item's first output pixel */
                /* an item whose taps all lie inside the row (the others are
                 * cvk_cast_xedge_kernel's) */
                const bool item = g < G && x - p.koff >= 0 && x - p.koff + P + p.k - 2 < a.width;
                const int at = (int)((x - p.koff) * C * ES + c * ES - b0); /* its first byte */
#pragma unroll 1
                for (int r = 0; r < XS_D; r++)
                    xstrip_issue(p, plane + (ys + r) * a.is[1] * ES, b0, RB, rb, r < rows,
                                 ring + (r % XS_NS) * RB);
#pragma unroll 1
                for (int r = 0; r < rows; r++) {
                    cvk_cp_wait<XS_D - 1>(); /* row r is in (later ones fly on) */
                    __syncwarp();            /* ...every lane's; row r - 1's reads are done */
                    xstrip_issue(p, plane + (ys + r + XS_D) * a.is[1] * ES, b0, RB, rb,
                                 r + XS_D < rows, ring + ((r + XS_D) % XS_NS) * RB);
                    if (!item)
                        continue;
                    const unsigned char *src = ring + (r % XS_NS) * RB + at;
                    A s[1][P];
                    unsigned bits = 0;
                    {
                        A win[P];
#pragma unroll
                        for (int j = 0; j < P; j++) {
                            const unsigned u = *(const T *)(src + j * step);
                            bits |= u;
                            win[j] = xstrip_value(p, u, (A)0);
                            s[0][j] = (A)0;
                        }
                        /* at tap k, slot (o + k) % P holds pixel o + k of the
                         * window; after tap k slot k % P takes pixel k + P */
                        for (int k0 = 0;; k0 += P) {
#pragma unroll
                            for (int u = 0; u < P; u++) {
                                const int k = k0 + u;
                                if (u == P / 2 && k >= p.kp)
                                    break;
                                const A w = dbl ? (A)a.tx[k] : (A)p.w[k];
#pragma unroll
                                for (int o = 0; o < P; o++)
                                    s[0][o] = pass_fma(w, win[(o + u) % P], s[0][o]);
                                const unsigned v = *(const T *)(src + (k + P) * step);
                                bits |= v;
                                win[u] = xstrip_value(p, v, (A)0);
                            }
                            if (k0 + P >= p.kp)
                                break;
                        }
                    }
                    unsigned v[1][P];
                    unsigned undecided = pass_decide<A, 1, P>(p, s, bits, 1.0, v);
                    T *dst = out + (ys + r) * a.os[1] + x * C + c;
                    if (C == 1 && p.ovec) {
                        if (ES == 1) {
                            uint2 w2;
                            w2.x = __byte_perm(__byte_perm(v[0][0], v[0][1], 0x0040),
                                               __byte_perm(v[0][2], v[0][3], 0x0040), 0x5410);
                            w2.y = __byte_perm(__byte_perm(v[0][4], v[0][5], 0x0040),
                                               __byte_perm(v[0][6], v[0][7], 0x0040), 0x5410);
                            ((unsigned *)dst)[0] = w2.x;
                            ((unsigned *)dst)[1] = w2.y;
                        } else {
#pragma unroll
                            for (int h = 0; h < 2; h++) {
                                uint2 w2;
                                w2.x = __byte_perm(v[0][4 * h], v[0][4 * h + 1], 0x5410);
                                w2.y = __byte_perm(v[0][4 * h + 2], v[0][4 * h + 3], 0x5410);
                                ((uint2 *)dst)[h] = w2;
                            }
                        }
                    } else {
#pragma unroll
                        for (int o = 0; o < P; o++)
                            dst[o * C] = (T)v[0][o];
                    }
                    while (undecided) { /* in double (rare) */
                        const int o = __ffs(undecided) - 1;
                        undecided &= undecided - 1;
                        dst[o * C] = (T)cast_bits(
                            a, xstrip_double<T>(tx, p.k, a.ty[0], src + o * step, step));
                    }
                }
                cvk_cp_wait<0>(); /* the ring is refilled for the next segment */
                __syncwarp();
            }
}

/* The outputs of the x pass at pixels [0, xl) and [xr, W) of every row
 * (those of the items cvk_cast_xstrip_kernel leaves: their taps reach past
 * the row's ends), a thread an output, each cast_x_double's. */
template <typename T, int C>
__global__ void __launch_bounds__(XS_NT)
    cvk_cast_xedge_kernel(const __grid_constant__ cast_pass_params p, long long xl, long long xr)
{
    const cvk_cast_args &a = p.a;
    const long long ne = xl + a.width - xr, n = a.planes * a.height * ne * C;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(i % C);
        const long long t = i / C, j = t % ne, row = t / ne;
        const long long y = row % a.height, z = row / a.height;
        const long long x = j < xl ? j : xr + (j - xl);
        const T *irow = (const T *)a.in + z * a.is[0] + y * a.is[1];
        T *orow = (T *)a.out + z * a.os[0] + y * a.os[1];
        orow[x * C + c] = (T)cast_x_double<T, C>(p, irow, x, c);
    }
}

/* Taps along x only: a tile of PASS_XTH(C) rows by PASS_XTW * P pixels.
 * Its rows and halo are staged in shared memory as A (double: times the y
 * tap, as cast_columns leaves them), loaded in PASS_V-element words, by
 * phase as in cvk_cast_sep_kernel (pixel q of channel c
 * at ((q % P) * L4 + q / P) * C + c); then a thread sums the x taps of P
 * consecutive pixels of one channel from a rotating window and stores the
 * cast results (one vector store for one channel). */
template <typename T, typename A, int C>
__global__ void __launch_bounds__(CAST_THREADS)
    cvk_cast_xpass_kernel(const __grid_constant__ cast_pass_params p)
{
    /* rows are staged one at a time (loading 4 rows first measured slower:
     * 64 to 80 registers, fewer blocks a multiprocessor) */
    enum { P = PASS_P(A), TW = PASS_XTW * P, TH = PASS_XTH(C), GC = PASS_XTW * C };
    typedef typename std::conditional<sizeof(T) == 1, unsigned, uint2>::type RAW;
    const cvk_cast_args &a = p.a;
    const bool dbl = sizeof(A) == 8;
    CVK_DYNAMIC_SHARED(smem);
    A *mid = (A *)smem;
    const int NP = TW + p.k - 1;     /* staged pixels a row */
    const int L4 = (NP + P - 1) / P; /* of each phase */
    const int ROW = P * L4 * C;      /* values a staged row */
    const int NE = NP * C;           /* staged elements a row */
    const long long tiles_x = cvk_ceil_div(a.width, TW), tiles_y = cvk_ceil_div(a.height, TH);
    const int t = threadIdx.x;
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z) {
        const T *in = (const T *)a.in + z * a.is[0];
        T *out = (T *)a.out + z * a.os[0];
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * TH;
            const int rows = (int)(a.height - y0 < TH ? a.height - y0 : TH);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long x0 = bx * TW;
                const long long g0 = (x0 - p.koff) * C; /* first staged element */
                const long long w0 = g0 >= 0 ? g0 / PASS_V : -((-g0 + PASS_V - 1) / PASS_V);
                const int words = (int)cvk_ceil_div(g0 + NE - w0 * PASS_V, PASS_V);
                /* word i of a staged row: its first element */
                for (int i = t; i < words; i += CAST_THREADS) {
                    const long long e0 = (w0 + i) * PASS_V;
                    const bool direct = p.vec && e0 >= 0 && e0 + PASS_V <= p.wc;
                    for (int r = 0; r < rows; r++) {
                        const T *row = in + (y0 + r) * a.is[1];
                        RAW w;
                        unsigned cv = 0; /* bit j: element j is cval */
                        pass_zero(w);
                        if (direct) {
                            pass_fetch4(row + e0, w);
                        } else {
#pragma unroll
                            for (int j = 0; j < PASS_V; j++) {
                                const long long g = e0 + j;
                                const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
                                const long long m = cvi_boundary_index(pix, a.width, a.mode);
                                if (m < 0)
                                    cv |= 1u << j;
                                else
                                    pass_put(w, j, __ldg(row + m * C + (g - pix * C)));
                            }
                        }
                        A x[PASS_V];
                        pass_unpack(w, x);
#pragma unroll
                        for (int j = 0; j < PASS_V; j++) {
                            const long long l = e0 + j - g0;
                            if (l >= 0 && l < NE) {
                                const int q = (int)l / C, c = (int)l % C;
                                const A v = (cv >> j) & 1u ? (dbl ? (A)a.cval : (A)p.cval) : x[j];
                                mid[r * ROW + ((q % P) * L4 + q / P) * C + c] =
                                    dbl ? (A)fma(a.ty[0], (double)v, 0.0) : v;
                            }
                        }
                    }
                }
                __syncthreads();
                for (int i = t; i < rows * GC; i += CAST_THREADS) {
                    const int r = i / GC, g = i % GC / C, c = i % C;
                    const A *m = mid + r * ROW + g * C + c; /* phase 0 of pixel P g */
                    A s[P], win[P];
                    unsigned nz = 0;
#pragma unroll
                    for (int o = 0; o < P; o++) {
                        s[o] = (A)0;
                        win[o] = m[o * L4 * C];
                        nz |= win[o] != (A)0;
                    }
                    for (int k0 = 0; k0 < p.k; k0 += P) {
#pragma unroll
                        for (int u = 0; u < P; u++) {
                            const int k = k0 + u;
                            if (k < p.k) {
                                const A w = dbl ? (A)a.tx[k] : (A)p.w[k];
#pragma unroll
                                for (int o = 0; o < P; o++)
                                    s[o] = pass_fma(w, win[(o + u) % P], s[o]);
                                if (k + 1 < p.k) {
                                    win[u] = m[(u * L4 + k0 / P + 1) * C];
                                    nz |= win[u] != (A)0;
                                }
                            }
                        }
                    }
                    const long long x = x0 + P * g;
                    const T *irow = in + (y0 + r) * a.is[1];
                    T *dst = out + (y0 + r) * a.os[1] + x * C + c;
                    unsigned v[P] = {0}, undecided = 0;
#pragma unroll
                    for (int o = 0; o < P; o++) {
                        int c2 = 0;
                        if (dbl)
                            v[o] = (unsigned)cast_bits(a, (double)s[o]);
                        else if ((nz == 0 && p.zeros) || cast_decide(p, (float)s[o], &c2))
                            v[o] = (unsigned)c2;
                        else
                            undecided |= 1u << o;
                    }
                    if (C == 1 && p.ovec && x + P <= a.width) {
                        RAW w[P / PASS_V];
#pragma unroll
                        for (int h = 0; h < P / PASS_V; h++) {
                            pass_zero(w[h]);
#pragma unroll
                            for (int q = 0; q < PASS_V; q++)
                                pass_put(w[h], q,
                                         v[PASS_V * h + q] & (sizeof(T) == 1 ? 0xffu : 0xffffu));
                            ((RAW *)dst)[h] = w[h];
                        }
                    } else {
#pragma unroll
                        for (int o = 0; o < P; o++)
                            if (x + o < a.width)
                                dst[o * C] = (T)v[o];
                    }
                    /* the outputs the float sums left, in double (rare) */
                    while (undecided) {
                        const int o = __ffs(undecided) - 1;
                        undecided &= undecided - 1;
                        if (x + o < a.width)
                            dst[o * C] = (T)cast_x_double<T, C>(p, irow, x + o, c);
                    }
                }
                __syncthreads(); /* mid is refilled for the next tile */
            }
        }
    }
}

typedef void (*cast_kernel_fn)(cvk_cast_args);

template <typename T>
static cast_kernel_fn pick(int C, int pass)
{
    switch (C) {
    case 1: return pass ? cvk_cast_pass_kernel<T, 1> : cvk_cast_sep_kernel<T, 1>;
    case 2: return pass ? cvk_cast_pass_kernel<T, 2> : cvk_cast_sep_kernel<T, 2>;
    case 3: return pass ? cvk_cast_pass_kernel<T, 3> : cvk_cast_sep_kernel<T, 3>;
    case 4: return pass ? cvk_cast_pass_kernel<T, 4> : cvk_cast_sep_kernel<T, 4>;
    default: return 0;
    }
}

typedef void (*pass_kernel_fn)(cast_pass_params);

template <typename T, typename A>
static pass_kernel_fn pick_x(int C)
{
    switch (C) {
    case 1: return cvk_cast_xpass_kernel<T, A, 1>;
    case 2: return cvk_cast_xpass_kernel<T, A, 2>;
    case 3: return cvk_cast_xpass_kernel<T, A, 3>;
    default: return cvk_cast_xpass_kernel<T, A, 4>;
    }
}

template <typename T, typename A>
static pass_kernel_fn pick_pass(int C, int ypass)
{
    return ypass ? cvk_cast_ypass_kernel<T, A> : pick_x<T, A>(C);
}

static int is_integer(double v, double below)
{
    return v == floor(v) && fabs(v) < below;
}

/* 1 if every row of the planes at base (strides s in elements of es
 * bytes) starts at a multiple of vb bytes. */
static int rows_aligned(const void *base, const long long *s, long long planes, long long vb,
                        long long es)
{
    return (uintptr_t)base % vb == 0 && (s[1] * es) % vb == 0 &&
           (planes == 1 || (s[0] * es) % vb == 0);
}

/* The y pass through shared memory (cvk_cast_ystrip_kernel) with the
 * parameters p made by launch_pass (rows aligned for PASS_V-element words). */
static cudaError_t launch_ystrip(const cvk_cast_args *a, cast_pass_params *p, int use_float,
                                 cudaStream_t stream)
{
    const int u8 = a->type == CVI_DTYPE_UINT8;
    const long long es = u8 ? 1 : 2;
    pass_kernel_fn fn = u8 ? (use_float ? cvk_cast_ystrip_kernel<unsigned char, float>
                                        : cvk_cast_ystrip_kernel<unsigned char, double>)
                           : (use_float ? cvk_cast_ystrip_kernel<unsigned short, float>
                                        : cvk_cast_ystrip_kernel<unsigned short, double>);
    p->nr = ystrip_rows(p->k);
    const size_t smem = CVK_CAST_MAX_K * sizeof(double) +
                        (size_t)(YS_NT / 32) * (size_t)p->nr * (YS_BW * (size_t)es + sizeof(int));
    /* the blocks a multiprocessor holds, asked once an instance and ring
     * size */
    static int held[2 * 2 * 5];
    int ring = 0;
    while ((YS_R << (ring + 1)) <= p->nr)
        ring++;
    int per_sm;
    const cudaError_t err = cvk_launch_ready(
        (const void *)fn, YS_NT, smem, &held[((!u8) * 2 + !use_float) * 5 + (ring < 4 ? ring : 4)],
        &per_sm);
    if (err != cudaSuccess)
        return err;
    /* strips: one wave of the blocks the device holds at once where the
     * bands and planes leave room, each at least 4 (K - 1) rows (the halo
     * rows a small share) and a whole number of groups */
    const long long bands = cvk_ceil_div(p->wc, (long long)YS_NT * PASS_V); /* of a block */
    const long long planes = a->planes < CVK_GRID_YZ_MAX ? a->planes : CVK_GRID_YZ_MAX;
    const long long slots = cvk_multiprocessors(a->multiprocessors) * per_sm;
    long long by = slots / (bands * planes);
    by = by < 1 ? 1 : by;
    long long strip = cvk_ceil_div(a->height, by);
    const long long min_strip = 4 * (p->k - 1) > 32 ? 4 * (p->k - 1) : 32;
    strip = strip < min_strip ? min_strip : strip;
    strip = cvk_ceil_div(strip, YS_R) * YS_R;
    if (strip > a->height)
        strip = a->height;
    p->strip = strip;
    const dim3 grid(cvk_grid_x(bands), cvk_grid_yz(cvk_ceil_div(a->height, strip)),
                    cvk_grid_yz(a->planes));
    CVK_LAUNCH(fn, grid, YS_NT, smem, stream, (*p));
    return cudaGetLastError();
}

template <typename T, typename A>
static pass_kernel_fn pick_xstrip(int C)
{
    switch (C) {
    case 1: return cvk_cast_xstrip_kernel<T, A, 1>;
    case 2: return cvk_cast_xstrip_kernel<T, A, 2>;
    case 3: return cvk_cast_xstrip_kernel<T, A, 3>;
    default: return cvk_cast_xstrip_kernel<T, A, 4>;
    }
}

/* The x pass through shared memory (cvk_cast_xstrip_kernel) with the
 * parameters p made by launch_pass (chunk and taps set). */
static cudaError_t launch_xstrip(const cvk_cast_args *a, cast_pass_params *p, int use_float,
                                 cudaStream_t stream)
{
    const int u8 = a->type == CVI_DTYPE_UINT8, C = a->channels;
    const int es = u8 ? 1 : 2;
    pass_kernel_fn fn = u8 ? (use_float ? pick_xstrip<unsigned char, float>(C)
                                        : pick_xstrip<unsigned char, double>(C))
                           : (use_float ? pick_xstrip<unsigned short, float>(C)
                                        : pick_xstrip<unsigned short, double>(C));
    p->xrb = xstrip_row_bytes(C, es, p->kp, p->chunk);
    const size_t smem = CVK_CAST_MAX_K * sizeof(double) +
                        (size_t)(XS_NT / 32) * XS_NS * (size_t)p->xrb;
    /* the blocks a multiprocessor holds, asked once an instance */
    static int held[2 * 2 * 4];
    int per_sm;
    cudaError_t err = cvk_launch_ready((const void *)fn, XS_NT, smem,
                                       &held[((!u8) * 2 + !use_float) * 4 + C - 1], &per_sm);
    if (err != cudaSuccess)
        return err;
    /* strips: one wave of the warps the device holds at once where the
     * segments and planes leave room, each at least 4 XS_D rows (the ring's
     * filling a small share) */
    const long long segs = cvk_ceil_div(a->width, XS_NPW(C));
    const long long planes = a->planes < CVK_GRID_YZ_MAX ? a->planes : CVK_GRID_YZ_MAX;
    const long long slots = cvk_multiprocessors(a->multiprocessors) * per_sm * (XS_NT / 32);
    long long by = slots / (segs * planes);
    by = by < 1 ? 1 : by;
    long long strip = cvk_ceil_div(a->height, by);
    strip = strip < 4 * XS_D ? 4 * XS_D : strip;
    if (strip > a->height)
        strip = a->height;
    p->strip = strip;
    const dim3 grid(cvk_grid_x(cvk_ceil_div(segs, XS_NT / 32)),
                    cvk_grid_yz(cvk_ceil_div(a->height, strip)), cvk_grid_yz(a->planes));
    CVK_LAUNCH(fn, grid, XS_NT, smem, stream, (*p));
    err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    /* the pixels of the items whose taps reach past the row's ends: items
     * from x < koff, and from x >= W - P - K + 2 + koff */
    const long long W = a->width, P = XS_P;
    long long xl = cvk_ceil_div(p->koff, P) * P, r0 = W - P - p->k + 2 + p->koff;
    long long xr = r0 <= 0 ? 0 : cvk_ceil_div(r0, P) * P;
    xl = xl < W ? xl : W;
    xr = xr < xl ? xl : xr < W ? xr : W;
    const long long n = a->planes * a->height * (xl + W - xr) * C;
    if (n == 0)
        return cudaSuccess;
    void (*edge)(cast_pass_params, long long,
                 long long) = u8 ? (C == 1   ? cvk_cast_xedge_kernel<unsigned char, 1>
                                    : C == 2 ? cvk_cast_xedge_kernel<unsigned char, 2>
                                    : C == 3 ? cvk_cast_xedge_kernel<unsigned char, 3>
                                             : cvk_cast_xedge_kernel<unsigned char, 4>)
                                 : (C == 1   ? cvk_cast_xedge_kernel<unsigned short, 1>
                                    : C == 2 ? cvk_cast_xedge_kernel<unsigned short, 2>
                                    : C == 3 ? cvk_cast_xedge_kernel<unsigned short, 3>
                                             : cvk_cast_xedge_kernel<unsigned short, 4>);
    const long long blocks = cvk_ceil_div(n, XS_NT);
    CVK_LAUNCH(edge, cvk_grid_x(blocks < CVK_FLAT_MAX_BLOCKS ? blocks : CVK_FLAT_MAX_BLOCKS), XS_NT,
               0, stream, (*p, xl, xr));
    return cudaGetLastError();
}

/* A 1-D pass on rows of contiguous interleaved elements through
 * cvk_cast_ypass_kernel or cvk_cast_xpass_kernel: the float sums where they
 * decide the cast (uint8; uint16 when exact), else the double ones. */
static cudaError_t launch_pass(const cvk_cast_args *a, int ypass, cudaStream_t stream)
{
    cast_pass_params p;
    memset(&p, 0, sizeof p);
    p.a = *a;
    const int C = a->channels, u8 = a->type == CVI_DTYPE_UINT8;
    const long long vb = (long long)PASS_V * (u8 ? 1 : 2); /* a vector load's bytes */
    p.wc = a->width * C;
    p.k = ypass ? a->ky : a->kx;
    p.koff = ypass ? a->koffy : a->koffx;
    const int constant = a->mode == CVI_MODE_CONSTANT;
    /* the float sums: taps w, inputs up to M (cval's magnitude too) */
    double wsum = 0.0, M = u8 ? 255.0 : 65535.0;
    int integral = !constant || is_integer(a->cval, 4194304.0);
    if (constant && fabs(a->cval) > M)
        M = fabs(a->cval);
    int nonneg = !constant || a->cval >= 0.0; /* taps and inputs >= 0 */
    for (int k = 0; k < p.k; k++) {
        const double w = ypass ? a->ty[k] * a->tx[0] : a->tx[k] * a->ty[0];
        nonneg = nonneg && w >= 0.0;
        p.w[k] = (float)w;
        wsum += fabs(w);
        integral = integral && is_integer(w, 4194304.0);
    }
    p.exact = integral && wsum * M < 4194304.0;
    p.unit = a->divisor == 1.0;
    p.idiv = p.exact && !p.unit && is_integer(a->divisor, 4194304.0) && a->divisor != 0.0;
    p.d = (float)a->divisor;
    p.invd = (float)(1.0 / a->divisor);
    p.cval = (float)a->cval;
    p.cval_nz = constant && a->cval != 0.0;
    p.zeros = !(constant && a->cval != 0.0 && p.cval == 0.0f);
    /* float sum within (K + 3) 2^-24 (wsum M + 1) of the exact one, the
     * double path's within far less (snapping included): twice that */
    const double bound = p.exact ? 0.0 : (2.0 * p.k + 8.0) * 0x1p-24 * (wsum * M + 1.0);
    p.err_abs = (float)(bound * fabs(1.0 / a->divisor) * 1.001);
    p.err_rel = 0x1p-21f;
    /* quotients below 2^21 (qmax bounds them): the bound in one test. With
     * taps and inputs (cval too) >= 0 every partial sum is at most the
     * whole, so the float sum's error is within (K + 1) 2^-24 of it and
     * the quotient's within (K + 6) 2^-24 |q| (the double path's and its
     * snapping far less): most sums decide with that tighter bound. */
    const int use_float = p.exact || (u8 && wsum * M < 1048576.0);
    /* vector loads and stores of PASS_V elements (the y pass takes both) */
    const int ivec = rows_aligned(a->in, a->is, a->planes, vb, u8 ? 1 : 2);
    const int ovec = rows_aligned(a->out, a->os, a->planes, vb, u8 ? 1 : 2);
    p.vec = ypass ? ivec && ovec : ivec;
    p.ovec = ovec;
    /* the kernels through shared memory: rows copied in chunks of 16, 8 or
     * 4 bytes, taps padded with zeros (a cval that is not finite would turn
     * a zero tap into NaN) */
    p.chunk = 0;
    for (int c = 16; c >= 4 && !p.chunk; c /= 2)
        if (rows_aligned(a->in, a->is, a->planes, c, u8 ? 1 : 2))
            p.chunk = c;
    p.kp = ystrip_taps(p.k);
    const int strip_kernel = p.chunk && isfinite(p.cval) &&
                             (ypass ? p.vec && ystrip_rows(p.k) <= YS_MAX_NR
                                    : p.kp <= CVK_CAST_MAX_K);
    for (int k = p.k; k < p.kp; k++) /* zero taps (0 x any input adds nothing) */
        p.w[k] = 0.0f, p.a.ty[k] = ypass ? 0.0 : p.a.ty[k], p.a.tx[k] = ypass ? p.a.tx[k] : 0.0;
    /* quotients below 2^21 (qmax bounds them): the bound in one test, for
     * the kernels that take the sums through pass_decide (both y passes,
     * the x pass through shared memory). With taps and inputs (cval too)
     * >= 0 every partial sum is at most the whole, so the float sum's error
     * is within (K + 1) 2^-24 of it and the quotient's within (K + 6)
     * 2^-24 |q| (the double path's and its snapping far less): most sums
     * decide with that tighter bound, and a zero sum is exact. */
    const double qmax = (wsum * M + 1.0) * fabs(1.0 / a->divisor);
    p.cbound = (ypass || strip_kernel) && !p.exact && qmax < 2097152.0;
    p.c_abs = p.err_abs, p.c_rel = p.err_rel;
    if (nonneg) {
        p.c_rel = (float)(((double)p.k + 6.0) * 0x1p-24 * 1.01 + 2.0 * a->snap);
        p.c_abs = 0.0f;
    }
    if (p.cbound) /* the float sums are quotients (one more rounding of each tap) */
        for (int k = 0; k < p.k; k++)
            p.w[k] = (float)((ypass ? a->ty[k] * a->tx[0] : a->tx[k] * a->ty[0]) / a->divisor);
    if (strip_kernel)
        return ypass ? launch_ystrip(a, &p, use_float, stream)
                     : launch_xstrip(a, &p, use_float, stream);
    pass_kernel_fn fn = u8 ? (use_float ? pick_pass<unsigned char, float>(C, ypass)
                                        : pick_pass<unsigned char, double>(C, ypass))
                           : (use_float ? pick_pass<unsigned short, float>(C, ypass)
                                        : pick_pass<unsigned short, double>(C, ypass));
    size_t smem = 0;
    dim3 grid;
    if (ypass) {
        grid = dim3(cvk_grid_x(cvk_ceil_div(p.wc, (long long)CAST_THREADS * PASS_V)),
                    cvk_grid_yz(cvk_ceil_div(a->height, PASS_TH)), cvk_grid_yz(a->planes));
    } else {
        const long long P = use_float ? PASS_P(float) : PASS_P(double), TW = PASS_XTW * P;
        const long long L4 = (TW + a->kx - 1 + P - 1) / P;
        smem = (size_t)PASS_XTH(C) * (size_t)(P * L4 * C) * (use_float ? 4u : 8u);
        if (smem > CVK_DEFAULT_SHARED) {
            cudaError_t err = cudaFuncSetAttribute(
                (const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (err != cudaSuccess)
                return err;
        }
        grid = dim3(cvk_grid_x(cvk_ceil_div(a->width, TW)),
                    cvk_grid_yz(cvk_ceil_div(a->height, PASS_XTH(C))), cvk_grid_yz(a->planes));
    }
    CVK_LAUNCH(fn, grid, CAST_THREADS, smem, stream, (p));
    return cudaGetLastError();
}

extern "C" cudaError_t cvk_cast_launch(const cvk_cast_args *a, cudaStream_t stream)
{
    const int C = a->channels;
    if (C < 1 || C > CVK_CAST_MAX_CHANNELS || a->ky < 1 || a->ky > CVK_CAST_MAX_K || a->kx < 1 ||
        a->kx > CVK_CAST_MAX_K || a->koffy < 0 || a->koffy >= a->ky || a->koffx < 0 ||
        a->koffx >= a->kx || a->planes < 1 || a->height < 1 || a->width < 1 ||
        (a->type != CVI_DTYPE_UINT8 && a->type != CVI_DTYPE_UINT16))
        return cudaErrorInvalidValue;
    const int pass = a->kx == 1;
    /* a pass along one axis on rows of contiguous interleaved elements */
    const int rows = a->is[2] == C && a->os[2] == C && (C == 1 || (a->ics == 1 && a->ocs == 1));
    if (rows && (pass || a->ky == 1))
        return launch_pass(a, pass, stream);
    cast_kernel_fn fn = a->type == CVI_DTYPE_UINT8 ? pick<unsigned char>(C, pass)
                                                   : pick<unsigned short>(C, pass);
    const long long TW = pass ? CAST_THREADS / C : CAST_THREADS / C / CAST_P * CAST_P;
    const int th = pass ? CAST_TH_PASS : CAST_TH_SEP;
    const long long L4 = (TW + a->kx - 1 + CAST_P - 1) / CAST_P;
    const size_t smem = pass ? 0 : (size_t)th * (size_t)(CAST_P * L4 * C) * sizeof(double);
    const dim3 grid(cvk_grid_x(cvk_ceil_div(a->width, TW)),
                    cvk_grid_yz(cvk_ceil_div(a->height, th)), cvk_grid_yz(a->planes));
    CVK_LAUNCH(fn, grid, CAST_THREADS, smem, stream, (*a));
    return cudaGetLastError();
}

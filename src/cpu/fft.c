/*
 * fft.c - radix-2 complex FFT on split arrays for the `fft` strategy (see
 * fft.h). The loops are plain C over the contiguous elements that follow the
 * transformed axis, so that the compiler vectorises them; they are compiled
 * once per instruction set (portable, AVX2+FMA, AVX-512F) and per compute
 * type (float, double), and chosen at run time.
 */
#include "fft.h"
#include "fast.h"

#include <math.h>
#include <stdint.h>

void cvcpu_twiddles_fill(cvcpu_twiddles *tw, size_t es)
{
    const double pi = 3.14159265358979323846;
    for (size_t h = 1; h < tw->T; h *= 2)
        for (size_t j = 0; j < h; j++) {
            double a = -pi * (double)j / (double)h, c = cos(a), s = sin(a);
            if (es == sizeof(double)) {
                ((double *)tw->re)[h + j] = c;
                ((double *)tw->im)[h + j] = s;
            } else {
                ((float *)tw->re)[h + j] = (float)c;
                ((float *)tw->im)[h + j] = (float)s;
            }
        }
}

/* One set of operations for element type T; ATTR is the target attribute
 * (empty for the portable set), SFX names the set. TRANSPOSE_BLOCKS(...)
 * transposes what it can with SIMD and returns the rows it has done (whole
 * blocks of rows; the rest is transposed element by element). */
#define CVCPU_FFT_SET(SFX, T, ATTR)                                                                \
    /* a, b <- a + b, (a - b) w over n elements */                                                 \
    ATTR static void dif_bfly_##SFX(T *restrict ar, T *restrict ai, T *restrict br,                \
                                    T *restrict bi, size_t n, T wr, T wi)                          \
    {                                                                                              \
        for (size_t s = 0; s < n; s++) {                                                           \
            T ur = ar[s], ui = ai[s], vr = br[s], vi = bi[s];                                      \
            ar[s] = ur + vr;                                                                       \
            ai[s] = ui + vi;                                                                       \
            T dr = ur - vr, di = ui - vi;                                                          \
            br[s] = dr * wr - di * wi;                                                             \
            bi[s] = dr * wi + di * wr;                                                             \
        }                                                                                          \
    }                                                                                              \
    /* a, b <- a + b conj(w), a - b conj(w) */                                                     \
    ATTR static void dit_bfly_##SFX(T *restrict ar, T *restrict ai, T *restrict br,                \
                                    T *restrict bi, size_t n, T wr, T wi)                          \
    {                                                                                              \
        for (size_t s = 0; s < n; s++) {                                                           \
            T vr = br[s] * wr + bi[s] * wi, vi = bi[s] * wr - br[s] * wi;                          \
            T ur = ar[s], ui = ai[s];                                                              \
            ar[s] = ur + vr;                                                                       \
            ai[s] = ui + vi;                                                                       \
            br[s] = ur - vr;                                                                       \
            bi[s] = ui - vi;                                                                       \
        }                                                                                          \
    }                                                                                              \
    /* two DIF stages at once (distances 2q, then q) on a, b, c, d at offsets               \
     * 0, q, 2q, 3q: w1 = tw[2q + j], w2 = tw[3q + j], w3 = tw[q + j] */      \
    ATTR static void dif_bfly2_##SFX(T *restrict ar, T *restrict ai, T *restrict br,               \
                                     T *restrict bi, T *restrict cr, T *restrict ci,               \
                                     T *restrict dr, T *restrict di, size_t n, T w1r, T w1i,       \
                                     T w2r, T w2i, T w3r, T w3i)                                   \
    {                                                                                              \
        for (size_t s = 0; s < n; s++) {                                                           \
            T a_r = ar[s] + cr[s], a_i = ai[s] + ci[s];                                            \
            T x_r = ar[s] - cr[s], x_i = ai[s] - ci[s];                                            \
            T c_r = x_r * w1r - x_i * w1i, c_i = x_r * w1i + x_i * w1r;                            \
            T b_r = br[s] + dr[s], b_i = bi[s] + di[s];                                            \
            T y_r = br[s] - dr[s], y_i = bi[s] - di[s];                                            \
            T d_r = y_r * w2r - y_i * w2i, d_i = y_r * w2i + y_i * w2r;                            \
            ar[s] = a_r + b_r;                                                                     \
            ai[s] = a_i + b_i;                                                                     \
            T u_r = a_r - b_r, u_i = a_i - b_i;                                                    \
            br[s] = u_r * w3r - u_i * w3i;                                                         \
            bi[s] = u_r * w3i + u_i * w3r;                                                         \
            cr[s] = c_r + d_r;                                                                     \
            ci[s] = c_i + d_i;                                                                     \
            T v_r = c_r - d_r, v_i = c_i - d_i;                                                    \
            dr[s] = v_r * w3r - v_i * w3i;                                                         \
            di[s] = v_r * w3i + v_i * w3r;                                                         \
        }                                                                                          \
    }                                                                                              \
    /* two DIT stages at once (distances q, then 2q), conjugate twiddles:                   \
     * w3 = tw[q + j] for the first, w1 = tw[2q + j], w2 = tw[3q + j] */      \
    ATTR static void dit_bfly2_##SFX(T *restrict ar, T *restrict ai, T *restrict br,               \
                                     T *restrict bi, T *restrict cr, T *restrict ci,               \
                                     T *restrict dr, T *restrict di, size_t n, T w1r, T w1i,       \
                                     T w2r, T w2i, T w3r, T w3i)                                   \
    {                                                                                              \
        for (size_t s = 0; s < n; s++) {                                                           \
            T p_r = br[s] * w3r + bi[s] * w3i, p_i = bi[s] * w3r - br[s] * w3i;                    \
            T a_r = ar[s] + p_r, a_i = ai[s] + p_i;                                                \
            T b_r = ar[s] - p_r, b_i = ai[s] - p_i;                                                \
            T q_r = dr[s] * w3r + di[s] * w3i, q_i = di[s] * w3r - dr[s] * w3i;                    \
            T c_r = cr[s] + q_r, c_i = ci[s] + q_i;                                                \
            T d_r = cr[s] - q_r, d_i = ci[s] - q_i;                                                \
            T e_r = c_r * w1r + c_i * w1i, e_i = c_i * w1r - c_r * w1i;                            \
            ar[s] = a_r + e_r;                                                                     \
            ai[s] = a_i + e_i;                                                                     \
            cr[s] = a_r - e_r;                                                                     \
            ci[s] = a_i - e_i;                                                                     \
            T f_r = d_r * w2r + d_i * w2i, f_i = d_i * w2r - d_r * w2i;                            \
            br[s] = b_r + f_r;                                                                     \
            bi[s] = b_i + f_i;                                                                     \
            dr[s] = b_r - f_r;                                                                     \
            di[s] = b_i - f_i;                                                                     \
        }                                                                                          \
    }                                                                                              \
    /* in-row butterflies (S == 1): vectorised across j for the wide stages */                     \
    ATTR static void dif_row_##SFX(T *restrict ar, T *restrict ai, T *restrict br, T *restrict bi, \
                                   size_t h, const T *restrict wr, const T *restrict wi)           \
    {                                                                                              \
        for (size_t j = 0; j < h; j++) {                                                           \
            T ur = ar[j], ui = ai[j], vr = br[j], vi = bi[j];                                      \
            ar[j] = ur + vr;                                                                       \
            ai[j] = ui + vi;                                                                       \
            T dr = ur - vr, di = ui - vi;                                                          \
            br[j] = dr * wr[j] - di * wi[j];                                                       \
            bi[j] = dr * wi[j] + di * wr[j];                                                       \
        }                                                                                          \
    }                                                                                              \
    ATTR static void dit_row_##SFX(T *restrict ar, T *restrict ai, T *restrict br, T *restrict bi, \
                                   size_t h, const T *restrict wr, const T *restrict wi)           \
    {                                                                                              \
        for (size_t j = 0; j < h; j++) {                                                           \
            T vr = br[j] * wr[j] + bi[j] * wi[j], vi = bi[j] * wr[j] - br[j] * wi[j];              \
            T ur = ar[j], ui = ai[j];                                                              \
            ar[j] = ur + vr;                                                                       \
            ai[j] = ui + vi;                                                                       \
            br[j] = ur - vr;                                                                       \
            bi[j] = ui - vi;                                                                       \
        }                                                                                          \
    }                                                                                              \
    ATTR static void forward_##SFX(void *re, void *im, size_t outer, size_t n, size_t S,           \
                                   const cvcpu_twiddles *tw)                                       \
    {                                                                                              \
        const T *twr = tw->re, *twi = tw->im;                                                      \
        for (size_t o = 0; o < outer; o++) {                                                       \
            T *xr = (T *)re + o * n * S, *xi = (T *)im + o * n * S;                                \
            for (size_t h = n / 2; h >= 1;) {                                                      \
                if (S > 1 && h >= 2) { /* stages h and h / 2 together */                           \
                    size_t q = h / 2;                                                              \
                    for (size_t g = 0; g < n; g += 2 * h)                                          \
                        for (size_t j = 0; j < q; j++) {                                           \
                            size_t a = (g + j) * S;                                                \
                            dif_bfly2_##SFX(xr + a, xi + a, xr + a + q * S, xi + a + q * S,        \
                                            xr + a + h * S, xi + a + h * S, xr + a + 3 * q * S,    \
                                            xi + a + 3 * q * S, S, twr[h + j], twi[h + j],         \
                                            twr[h + q + j], twi[h + q + j], twr[q + j],            \
                                            twi[q + j]);                                           \
                        }                                                                          \
                    h /= 4;                                                                        \
                    continue;                                                                      \
                }                                                                                  \
                for (size_t g = 0; g < n; g += 2 * h) {                                            \
                    if (S == 1 && h >= 8) {                                                        \
                        dif_row_##SFX(xr + g, xi + g, xr + g + h, xi + g + h, h, twr + h,          \
                                      twi + h);                                                    \
                        continue;                                                                  \
                    }                                                                              \
                    for (size_t j = 0; j < h; j++) {                                               \
                        size_t a = (g + j) * S, b = (g + j + h) * S;                               \
                        dif_bfly_##SFX(xr + a, xi + a, xr + b, xi + b, S, twr[h + j], twi[h + j]); \
                    }                                                                              \
                }                                                                                  \
                h /= 2;                                                                            \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    ATTR static void inverse_##SFX(void *re, void *im, size_t outer, size_t n, size_t S,           \
                                   const cvcpu_twiddles *tw)                                       \
    {                                                                                              \
        const T *twr = tw->re, *twi = tw->im;                                                      \
        for (size_t o = 0; o < outer; o++) {                                                       \
            T *xr = (T *)re + o * n * S, *xi = (T *)im + o * n * S;                                \
            for (size_t h = 1; h < n;) {                                                           \
                if (S > 1 && 2 * h < n) { /* stages h and 2h together */                           \
                    size_t q = h, h2 = 2 * h;                                                      \
                    for (size_t g = 0; g < n; g += 4 * q)                                          \
                        for (size_t j = 0; j < q; j++) {                                           \
                            size_t a = (g + j) * S;                                                \
                            dit_bfly2_##SFX(xr + a, xi + a, xr + a + q * S, xi + a + q * S,        \
                                            xr + a + h2 * S, xi + a + h2 * S, xr + a + 3 * q * S,  \
                                            xi + a + 3 * q * S, S, twr[h2 + j], twi[h2 + j],       \
                                            twr[h2 + q + j], twi[h2 + q + j], twr[q + j],          \
                                            twi[q + j]);                                           \
                        }                                                                          \
                    h *= 4;                                                                        \
                    continue;                                                                      \
                }                                                                                  \
                for (size_t g = 0; g < n; g += 2 * h) {                                            \
                    if (S == 1 && h >= 8) {                                                        \
                        dit_row_##SFX(xr + g, xi + g, xr + g + h, xi + g + h, h, twr + h,          \
                                      twi + h);                                                    \
                        continue;                                                                  \
                    }                                                                              \
                    for (size_t j = 0; j < h; j++) {                                               \
                        size_t a = (g + j) * S, b = (g + j + h) * S;                               \
                        dit_bfly_##SFX(xr + a, xi + a, xr + b, xi + b, S, twr[h + j], twi[h + j]); \
                    }                                                                              \
                }                                                                                  \
                h *= 2;                                                                            \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    ATTR static void transpose_##SFX(void *dre, void *dim, const void *sre, const void *sim,       \
                                     size_t R, size_t C)                                           \
    {                                                                                              \
        size_t done = TRANSPOSE_BLOCKS(dre, dim, sre, sim, R, C);                                  \
        T *dr = dre, *di = dim;                                                                    \
        const T *sr = sre, *si = sim;                                                              \
        for (size_t r0 = done; r0 < R; r0 += 16)                                                   \
            for (size_t c0 = 0; c0 < C; c0 += 16) {                                                \
                size_t r1 = r0 + 16 < R ? r0 + 16 : R, c1 = c0 + 16 < C ? c0 + 16 : C;             \
                for (size_t c = c0; c < c1; c++)                                                   \
                    for (size_t r = r0; r < r1; r++) {                                             \
                        dr[c * R + r] = sr[r * C + c];                                             \
                        di[c * R + r] = si[r * C + c];                                             \
                    }                                                                              \
            }                                                                                      \
    }                                                                                              \
    ATTR static void multiply_##SFX(void *xre, void *xim, const void *gre, const void *gim,        \
                                    size_t n)                                                      \
    {                                                                                              \
        T *restrict xr = xre, *restrict xi = xim;                                                  \
        const T *restrict gr = gre, *restrict gi = gim;                                            \
        for (size_t i = 0; i < n; i++) {                                                           \
            T a = xr[i], b = xi[i];                                                                \
            xr[i] = a * gr[i] - b * gi[i];                                                         \
            xi[i] = a * gi[i] + b * gr[i];                                                         \
        }                                                                                          \
    }                                                                                              \
    static const cvcpu_fft_ops ops_##SFX = {forward_##SFX, inverse_##SFX, transpose_##SFX,         \
                                            multiply_##SFX};

#define TRANSPOSE_BLOCKS(dre, dim, sre, sim, R, C) 0
CVCPU_FFT_SET(pf, float, )
CVCPU_FFT_SET(pd, double, )
#undef TRANSPOSE_BLOCKS

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CVCPU_FFT_X86 1
#include <immintrin.h>

/* dst (column stride ds) = transpose of the 8 x 8 floats at src (row stride ss) */
CVCPU_AVX2 static inline void tr8_f(float *dst, size_t ds, const float *src, size_t ss)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + (size_t)i * ss);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + (size_t)i * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(i + 4) * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

/* the same for 4 x 4 doubles */
CVCPU_AVX2 static inline void tr4_d(double *dst, size_t ds, const double *src, size_t ss)
{
    __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + ss);
    __m256d r2 = _mm256_loadu_pd(src + 2 * ss), r3 = _mm256_loadu_pd(src + 3 * ss);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(dst + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(dst + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(dst + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* x, y <- the two-source permutes of x and y by the tables va and vb */
#define CVCPU_XSWAP(T, x, y)                   \
    do {                                       \
        a = _mm512_permutex2var_##T(x, va, y); \
        y = _mm512_permutex2var_##T(x, vb, y); \
        x = a;                                 \
    } while (0)

/* 16 x 16 floats (and 8 x 8 doubles): stages that swap the off-diagonal
 * s x s sub-blocks of rows i and i + s (s = 8, 4, 2, 1) with two-source
 * permutes; the index tables say where each element comes from. */
static const int32_t k_tr16[4][2][16] __attribute__((aligned(64))) = {
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
     {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
     {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
    {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
     {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
    {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
     {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}},
};

CVCPU_AVX512F_ONLY static inline void tr16_f(float *dst, size_t ds, const float *src, size_t ss)
{
    __m512 r0 = _mm512_loadu_ps(src + 0 * ss);
    __m512 r1 = _mm512_loadu_ps(src + 1 * ss);
    __m512 r2 = _mm512_loadu_ps(src + 2 * ss);
    __m512 r3 = _mm512_loadu_ps(src + 3 * ss);
    __m512 r4 = _mm512_loadu_ps(src + 4 * ss);
    __m512 r5 = _mm512_loadu_ps(src + 5 * ss);
    __m512 r6 = _mm512_loadu_ps(src + 6 * ss);
    __m512 r7 = _mm512_loadu_ps(src + 7 * ss);
    __m512 r8 = _mm512_loadu_ps(src + 8 * ss);
    __m512 r9 = _mm512_loadu_ps(src + 9 * ss);
    __m512 r10 = _mm512_loadu_ps(src + 10 * ss);
    __m512 r11 = _mm512_loadu_ps(src + 11 * ss);
    __m512 r12 = _mm512_loadu_ps(src + 12 * ss);
    __m512 r13 = _mm512_loadu_ps(src + 13 * ss);
    __m512 r14 = _mm512_loadu_ps(src + 14 * ss);
    __m512 r15 = _mm512_loadu_ps(src + 15 * ss);
    __m512 a;
    { /* swap the off-diagonal 8 x 8 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr16[0][0]), vb = _mm512_load_si512(k_tr16[0][1]);
        CVCPU_XSWAP(ps, r0, r8);
        CVCPU_XSWAP(ps, r1, r9);
        CVCPU_XSWAP(ps, r2, r10);
        CVCPU_XSWAP(ps, r3, r11);
        CVCPU_XSWAP(ps, r4, r12);
        CVCPU_XSWAP(ps, r5, r13);
        CVCPU_XSWAP(ps, r6, r14);
        CVCPU_XSWAP(ps, r7, r15);
    }
    { /* swap the off-diagonal 4 x 4 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr16[1][0]), vb = _mm512_load_si512(k_tr16[1][1]);
        CVCPU_XSWAP(ps, r0, r4);
        CVCPU_XSWAP(ps, r1, r5);
        CVCPU_XSWAP(ps, r2, r6);
        CVCPU_XSWAP(ps, r3, r7);
        CVCPU_XSWAP(ps, r8, r12);
        CVCPU_XSWAP(ps, r9, r13);
        CVCPU_XSWAP(ps, r10, r14);
        CVCPU_XSWAP(ps, r11, r15);
    }
    { /* swap the off-diagonal 2 x 2 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr16[2][0]), vb = _mm512_load_si512(k_tr16[2][1]);
        CVCPU_XSWAP(ps, r0, r2);
        CVCPU_XSWAP(ps, r1, r3);
        CVCPU_XSWAP(ps, r4, r6);
        CVCPU_XSWAP(ps, r5, r7);
        CVCPU_XSWAP(ps, r8, r10);
        CVCPU_XSWAP(ps, r9, r11);
        CVCPU_XSWAP(ps, r12, r14);
        CVCPU_XSWAP(ps, r13, r15);
    }
    { /* swap the off-diagonal 1 x 1 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr16[3][0]), vb = _mm512_load_si512(k_tr16[3][1]);
        CVCPU_XSWAP(ps, r0, r1);
        CVCPU_XSWAP(ps, r2, r3);
        CVCPU_XSWAP(ps, r4, r5);
        CVCPU_XSWAP(ps, r6, r7);
        CVCPU_XSWAP(ps, r8, r9);
        CVCPU_XSWAP(ps, r10, r11);
        CVCPU_XSWAP(ps, r12, r13);
        CVCPU_XSWAP(ps, r14, r15);
    }
    _mm512_storeu_ps(dst + 0 * ds, r0);
    _mm512_storeu_ps(dst + 1 * ds, r1);
    _mm512_storeu_ps(dst + 2 * ds, r2);
    _mm512_storeu_ps(dst + 3 * ds, r3);
    _mm512_storeu_ps(dst + 4 * ds, r4);
    _mm512_storeu_ps(dst + 5 * ds, r5);
    _mm512_storeu_ps(dst + 6 * ds, r6);
    _mm512_storeu_ps(dst + 7 * ds, r7);
    _mm512_storeu_ps(dst + 8 * ds, r8);
    _mm512_storeu_ps(dst + 9 * ds, r9);
    _mm512_storeu_ps(dst + 10 * ds, r10);
    _mm512_storeu_ps(dst + 11 * ds, r11);
    _mm512_storeu_ps(dst + 12 * ds, r12);
    _mm512_storeu_ps(dst + 13 * ds, r13);
    _mm512_storeu_ps(dst + 14 * ds, r14);
    _mm512_storeu_ps(dst + 15 * ds, r15);
}

static const int64_t k_tr8[3][2][8] __attribute__((aligned(64))) = {
    {{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}},
    {{0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15}},
    {{0, 8, 2, 10, 4, 12, 6, 14}, {1, 9, 3, 11, 5, 13, 7, 15}},
};

CVCPU_AVX512F_ONLY static inline void tr8_d(double *dst, size_t ds, const double *src, size_t ss)
{
    __m512d r0 = _mm512_loadu_pd(src + 0 * ss);
    __m512d r1 = _mm512_loadu_pd(src + 1 * ss);
    __m512d r2 = _mm512_loadu_pd(src + 2 * ss);
    __m512d r3 = _mm512_loadu_pd(src + 3 * ss);
    __m512d r4 = _mm512_loadu_pd(src + 4 * ss);
    __m512d r5 = _mm512_loadu_pd(src + 5 * ss);
    __m512d r6 = _mm512_loadu_pd(src + 6 * ss);
    __m512d r7 = _mm512_loadu_pd(src + 7 * ss);
    __m512d a;
    { /* swap the off-diagonal 4 x 4 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr8[0][0]), vb = _mm512_load_si512(k_tr8[0][1]);
        CVCPU_XSWAP(pd, r0, r4);
        CVCPU_XSWAP(pd, r1, r5);
        CVCPU_XSWAP(pd, r2, r6);
        CVCPU_XSWAP(pd, r3, r7);
    }
    { /* swap the off-diagonal 2 x 2 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr8[1][0]), vb = _mm512_load_si512(k_tr8[1][1]);
        CVCPU_XSWAP(pd, r0, r2);
        CVCPU_XSWAP(pd, r1, r3);
        CVCPU_XSWAP(pd, r4, r6);
        CVCPU_XSWAP(pd, r5, r7);
    }
    { /* swap the off-diagonal 1 x 1 sub-blocks */
        __m512i va = _mm512_load_si512(k_tr8[2][0]), vb = _mm512_load_si512(k_tr8[2][1]);
        CVCPU_XSWAP(pd, r0, r1);
        CVCPU_XSWAP(pd, r2, r3);
        CVCPU_XSWAP(pd, r4, r5);
        CVCPU_XSWAP(pd, r6, r7);
    }
    _mm512_storeu_pd(dst + 0 * ds, r0);
    _mm512_storeu_pd(dst + 1 * ds, r1);
    _mm512_storeu_pd(dst + 2 * ds, r2);
    _mm512_storeu_pd(dst + 3 * ds, r3);
    _mm512_storeu_pd(dst + 4 * ds, r4);
    _mm512_storeu_pd(dst + 5 * ds, r5);
    _mm512_storeu_pd(dst + 6 * ds, r6);
    _mm512_storeu_pd(dst + 7 * ds, r7);
}

/* Transposes the rows of R x C that whole B x B blocks cover; returns them. */
#define CVCPU_TR_BLOCKS(NAME, ATTR, T, B, TR)                                                 \
    ATTR static size_t NAME(void *dre, void *dim, const void *sre, const void *sim, size_t R, \
                            size_t C)                                                         \
    {                                                                                         \
        if (C % B)                                                                            \
            return 0;                                                                         \
        size_t rows = R / B * B;                                                              \
        for (size_t r = 0; r < rows; r += B)                                                  \
            for (size_t c = 0; c < C; c += B) {                                               \
                TR((T *)dre + c * R + r, R, (const T *)sre + r * C + c, C);                   \
                TR((T *)dim + c * R + r, R, (const T *)sim + r * C + c, C);                   \
            }                                                                                 \
        return rows;                                                                          \
    }
CVCPU_TR_BLOCKS(trb_af, CVCPU_AVX2, float, 8, tr8_f)
CVCPU_TR_BLOCKS(trb_ad, CVCPU_AVX2, double, 4, tr4_d)
CVCPU_TR_BLOCKS(trb_zf, CVCPU_AVX512F_ONLY, float, 16, tr16_f)
CVCPU_TR_BLOCKS(trb_zd, CVCPU_AVX512F_ONLY, double, 8, tr8_d)

#define TRANSPOSE_BLOCKS trb_af
CVCPU_FFT_SET(af, float, CVCPU_AVX2)
#undef TRANSPOSE_BLOCKS
#define TRANSPOSE_BLOCKS trb_ad
CVCPU_FFT_SET(ad, double, CVCPU_AVX2)
#undef TRANSPOSE_BLOCKS
#define TRANSPOSE_BLOCKS trb_zf
CVCPU_FFT_SET(zf, float, CVCPU_AVX512F_ONLY)
#undef TRANSPOSE_BLOCKS
#define TRANSPOSE_BLOCKS trb_zd
CVCPU_FFT_SET(zd, double, CVCPU_AVX512F_ONLY)
#undef TRANSPOSE_BLOCKS
#endif

const cvcpu_fft_ops *cvcpu_fft_get(int dbl, int isa)
{
#if CVCPU_FFT_X86
    if (isa >= CVCPU_ISA_AVX512)
        return dbl ? &ops_zd : &ops_zf;
    if (isa >= CVCPU_ISA_AVX2)
        return dbl ? &ops_ad : &ops_af;
#else
    (void)isa;
#endif
    return dbl ? &ops_pd : &ops_pf;
}

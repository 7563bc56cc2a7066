/*
 * fast_kernels.c - the row kernels of the fast CPU strategies: a weighted
 * sum of shifted contiguous rows (cvcpu_corr_fn, see fast.h), in float and in
 * double, in portable C (vectorised by the compiler for the baseline
 * instruction set) and with AVX2+FMA and AVX-512F intrinsics compiled for
 * those targets alone and chosen at run time.
 *
 * Register blocking: each kernel keeps a block of output vectors in
 * registers (8 vectors where the registers allow) across all taps of all
 * rows, so every output is written once and each tap costs one broadcast
 * weight plus one load and one FMA per vector.
 *
 * The double kernels multiply and add separately (no FMA) and sum the taps
 * in the reference's order (rows, then shifts), so that a dense float64
 * problem gives bit for bit the reference's result.
 */
#include "fast.h"

#include <stdint.h>
#include <string.h>

/* ---- portable ----------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
/* Generic 16-byte vectors (SSE2, NEON, ...): 16 outputs in registers. */
typedef float cvcpu_v4f __attribute__((vector_size(16)));
typedef double cvcpu_v2d __attribute__((vector_size(16)));

#define CVCPU_PORTABLE_CORR(NAME, T, VT)                                                          \
    static void NAME(void *outv, size_t n, const void *const *rows, size_t nrows, const void *wv, \
                     size_t K)                                                                    \
    {                                                                                             \
        enum { L = (int)(sizeof(VT) / sizeof(T)), NV = CVCPU_PAD / L };                           \
        T *out = outv;                                                                            \
        const T *w = wv;                                                                          \
        size_t N = CVCPU_ROUND(n);                                                                \
        for (size_t x = 0; x < N; x += CVCPU_PAD) {                                               \
            VT acc[NV];                                                                           \
            for (int v = 0; v < NV; v++)                                                          \
                acc[v] = (VT){0};                                                                 \
            for (size_t p = 0; p < nrows; p++) {                                                  \
                const T *r = (const T *)rows[p] + x, *wp = w + p * K;                             \
                for (size_t k = 0; k < K; k++) {                                                  \
                    VT c = (VT){0} + wp[k];                                                       \
                    for (int v = 0; v < NV; v++) {                                                \
                        VT in;                                                                    \
                        memcpy(&in, r + k + (size_t)v * L, sizeof in);                            \
                        acc[v] += c * in;                                                         \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
            memcpy(out + x, acc, sizeof acc);                                                     \
        }                                                                                         \
    }
CVCPU_PORTABLE_CORR(corr_portable_f, float, cvcpu_v4f)
CVCPU_PORTABLE_CORR(corr_portable_d, double, cvcpu_v2d)
#else
/* Any other C11 compiler: scalar loops. */
#define CVCPU_PORTABLE_CORR(NAME, T)                                                              \
    static void NAME(void *outv, size_t n, const void *const *rows, size_t nrows, const void *wv, \
                     size_t K)                                                                    \
    {                                                                                             \
        T *out = outv;                                                                            \
        const T *w = wv;                                                                          \
        for (size_t x = 0; x < CVCPU_ROUND(n); x++) {                                             \
            T acc = 0;                                                                            \
            for (size_t p = 0; p < nrows; p++)                                                    \
                for (size_t k = 0; k < K; k++)                                                    \
                    acc += w[p * K + k] * ((const T *)rows[p])[x + k];                            \
            out[x] = acc;                                                                         \
        }                                                                                         \
    }
CVCPU_PORTABLE_CORR(corr_portable_f, float)
CVCPU_PORTABLE_CORR(corr_portable_d, double)
#endif

/* ---- x86-64: AVX2+FMA and AVX-512F ---------------------------------------- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CVCPU_X86 1
#include <immintrin.h>

/*
 * One kernel: blocks of 8 vectors, then 4, then 1 (the output is padded to
 * a whole vector). VW is the vector width in elements.
 */
#define CVCPU_SIMD_CORR(NAME, ATTR, T, VT, VW, ZERO, SET1, LOADU, STOREU, FMADD)       \
    ATTR static void NAME(void *outv, size_t n, const void *const *rows, size_t nrows, \
                          const void *wv, size_t K)                                    \
    {                                                                                  \
        T *out = outv;                                                                 \
        const T *w = wv;                                                               \
        size_t N = (n + VW - 1) / VW * VW, x = 0;                                      \
        for (; x + 8 * VW <= N; x += 8 * VW) {                                         \
            VT a0 = ZERO, a1 = ZERO, a2 = ZERO, a3 = ZERO;                             \
            VT a4 = ZERO, a5 = ZERO, a6 = ZERO, a7 = ZERO;                             \
            for (size_t p = 0; p < nrows; p++) {                                       \
                const T *r = (const T *)rows[p] + x, *wp = w + p * K;                  \
                for (size_t k = 0; k < K; k++, r++) {                                  \
                    VT c = SET1(wp[k]);                                                \
                    a0 = FMADD(c, LOADU(r), a0);                                       \
                    a1 = FMADD(c, LOADU(r + VW), a1);                                  \
                    a2 = FMADD(c, LOADU(r + 2 * VW), a2);                              \
                    a3 = FMADD(c, LOADU(r + 3 * VW), a3);                              \
                    a4 = FMADD(c, LOADU(r + 4 * VW), a4);                              \
                    a5 = FMADD(c, LOADU(r + 5 * VW), a5);                              \
                    a6 = FMADD(c, LOADU(r + 6 * VW), a6);                              \
                    a7 = FMADD(c, LOADU(r + 7 * VW), a7);                              \
                }                                                                      \
            }                                                                          \
            STOREU(out + x, a0);                                                       \
            STOREU(out + x + VW, a1);                                                  \
            STOREU(out + x + 2 * VW, a2);                                              \
            STOREU(out + x + 3 * VW, a3);                                              \
            STOREU(out + x + 4 * VW, a4);                                              \
            STOREU(out + x + 5 * VW, a5);                                              \
            STOREU(out + x + 6 * VW, a6);                                              \
            STOREU(out + x + 7 * VW, a7);                                              \
        }                                                                              \
        for (; x + 4 * VW <= N; x += 4 * VW) {                                         \
            VT a0 = ZERO, a1 = ZERO, a2 = ZERO, a3 = ZERO;                             \
            for (size_t p = 0; p < nrows; p++) {                                       \
                const T *r = (const T *)rows[p] + x, *wp = w + p * K;                  \
                for (size_t k = 0; k < K; k++, r++) {                                  \
                    VT c = SET1(wp[k]);                                                \
                    a0 = FMADD(c, LOADU(r), a0);                                       \
                    a1 = FMADD(c, LOADU(r + VW), a1);                                  \
                    a2 = FMADD(c, LOADU(r + 2 * VW), a2);                              \
                    a3 = FMADD(c, LOADU(r + 3 * VW), a3);                              \
                }                                                                      \
            }                                                                          \
            STOREU(out + x, a0);                                                       \
            STOREU(out + x + VW, a1);                                                  \
            STOREU(out + x + 2 * VW, a2);                                              \
            STOREU(out + x + 3 * VW, a3);                                              \
        }                                                                              \
        for (; x < N; x += VW) {                                                       \
            VT a0 = ZERO;                                                              \
            for (size_t p = 0; p < nrows; p++) {                                       \
                const T *r = (const T *)rows[p] + x, *wp = w + p * K;                  \
                for (size_t k = 0; k < K; k++)                                         \
                    a0 = FMADD(SET1(wp[k]), LOADU(r + k), a0);                         \
            }                                                                          \
            STOREU(out + x, a0);                                                       \
        }                                                                              \
    }

/*
 * AVX-512 float, three taps per row (3x3 filters, 3-tap passes): each input
 * vector is loaded once and the shifts by one and two come from valignd on
 * it and its neighbour, instead of two more (cache-line splitting) loads.
 * The sum runs in the same order as the general kernel's.
 */
#define CVCPU_SHIFT(hi, lo, k) \
    _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), k))
CVCPU_AVX512 static void corr3_avx512_f(float *out, size_t n, const void *const *rows, size_t nrows,
                                        const float *w)
{
    size_t N = (n + 15) / 16 * 16, x = 0;
    for (; x + 128 <= N; x += 128) {
        __m512 acc[8];
        for (int v = 0; v < 8; v++)
            acc[v] = _mm512_setzero_ps();
        for (size_t p = 0; p < nrows; p++) {
            const float *r = (const float *)rows[p] + x;
            __m512 w0 = _mm512_set1_ps(w[3 * p]), w1 = _mm512_set1_ps(w[3 * p + 1]);
            __m512 w2 = _mm512_set1_ps(w[3 * p + 2]);
            __m512 lo = _mm512_loadu_ps(r);
            for (int v = 0; v < 8; v++) {
                /* past the block only its first two elements are used and
                 * readable (rows are readable up to N + 2) */
                __m512 hi = v < 7 ? _mm512_loadu_ps(r + 16 * (v + 1))
                                  : _mm512_maskz_loadu_ps(0x3, r + 16 * (v + 1));
                acc[v] = _mm512_fmadd_ps(w0, lo, acc[v]);
                acc[v] = _mm512_fmadd_ps(w1, CVCPU_SHIFT(hi, lo, 1), acc[v]);
                acc[v] = _mm512_fmadd_ps(w2, CVCPU_SHIFT(hi, lo, 2), acc[v]);
                lo = hi;
            }
        }
        for (int v = 0; v < 8; v++)
            _mm512_storeu_ps(out + x + 16 * v, acc[v]);
    }
    for (; x < N; x += 16) {
        __m512 acc = _mm512_setzero_ps();
        for (size_t p = 0; p < nrows; p++) {
            const float *r = (const float *)rows[p] + x;
            __m512 lo = _mm512_loadu_ps(r);
            /* the neighbour: only its first two elements are used (the row is
             * readable up to N + 2) */
            __m512 hi = _mm512_maskz_loadu_ps(0x3, r + 16);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * p]), lo, acc);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * p + 1]), CVCPU_SHIFT(hi, lo, 1), acc);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * p + 2]), CVCPU_SHIFT(hi, lo, 2), acc);
        }
        _mm512_storeu_ps(out + x, acc);
    }
}
#undef CVCPU_SHIFT

CVCPU_SIMD_CORR(corr_avx2_f, CVCPU_AVX2, float, __m256, 8, _mm256_setzero_ps(), _mm256_set1_ps,
                _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps)
#define MULADD(c, x, a) _mm256_add_pd(a, _mm256_mul_pd(c, x))
CVCPU_SIMD_CORR(corr_avx2_d, CVCPU_AVX2, double, __m256d, 4, _mm256_setzero_pd(), _mm256_set1_pd,
                _mm256_loadu_pd, _mm256_storeu_pd, MULADD)
#undef MULADD
CVCPU_SIMD_CORR(corr_avx512_fk, CVCPU_AVX512, float, __m512, 16, _mm512_setzero_ps(),
                _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_fmadd_ps)

static void corr_avx512_f(void *out, size_t n, const void *const *rows, size_t nrows, const void *w,
                          size_t K)
{
    if (K == 3)
        corr3_avx512_f(out, n, rows, nrows, w);
    else
        corr_avx512_fk(out, n, rows, nrows, w, K);
}
#define MULADD(c, x, a) _mm512_add_pd(a, _mm512_mul_pd(c, x))
CVCPU_SIMD_CORR(corr_avx512_d, CVCPU_AVX512, double, __m512d, 8, _mm512_setzero_pd(),
                _mm512_set1_pd, _mm512_loadu_pd, _mm512_storeu_pd, MULADD)
#undef MULADD

/*
 * The 4-row kernel (cvcpu_corr4_fn): V vectors of 4 output rows stay in
 * registers; input row j feeds output rows r = j - k1 for the k1 in range,
 * so each loaded vector serves up to 4 FMAs. The active rows [lo, hi] of
 * each input row select a specialised loop (no FMA with an absent weight).
 */
#define CVCPU_C4_STEP(V, LO, HI, T, VT, VW, SET1, LOADU, FMADD)                         \
    for (size_t k = 0; k < K2; k++) {                                                   \
        VT in[V];                                                                       \
        for (int v = 0; v < V; v++) {                                                   \
            in[v] = LOADU(row + k + (size_t)v * VW);                                    \
            __asm__("" : "+v"(in[v])); /* keep it in a register: one load, many FMAs */ \
        }                                                                               \
        for (int r = LO; r <= HI; r++) {                                                \
            VT c = SET1(w0[k - (size_t)r * K2]);                                        \
            for (int v = 0; v < V; v++)                                                 \
                a[r][v] = FMADD(c, in[v], a[r][v]);                                     \
        }                                                                               \
    }

#define CVCPU_C4_BLOCK(V, T, VT, VW, ZERO, SET1, LOADU, STOREU, FMADD)                \
    {                                                                                 \
        VT a[4][V];                                                                   \
        for (int r = 0; r < 4; r++)                                                   \
            for (int v = 0; v < V; v++)                                               \
                a[r][v] = ZERO;                                                       \
        for (size_t k0 = 0; k0 < K0; k0++)                                            \
            for (size_t j = 0; j < J; j++) {                                          \
                const T *row = (const T *)rows[k0 * J + j] + x;                       \
                const T *w0 = w + (k0 * K1 + j) * K2;                                 \
                size_t lo = j + 1 > K1 ? j + 1 - K1 : 0, hi = j < 3 ? j : 3;          \
                switch (lo * 4 + hi) {                                                \
                case 0: CVCPU_C4_STEP(V, 0, 0, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 1: CVCPU_C4_STEP(V, 0, 1, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 2: CVCPU_C4_STEP(V, 0, 2, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 3: CVCPU_C4_STEP(V, 0, 3, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 5: CVCPU_C4_STEP(V, 1, 1, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 6: CVCPU_C4_STEP(V, 1, 2, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 7: CVCPU_C4_STEP(V, 1, 3, T, VT, VW, SET1, LOADU, FMADD) break;  \
                case 10: CVCPU_C4_STEP(V, 2, 2, T, VT, VW, SET1, LOADU, FMADD) break; \
                case 11: CVCPU_C4_STEP(V, 2, 3, T, VT, VW, SET1, LOADU, FMADD) break; \
                default: CVCPU_C4_STEP(V, 3, 3, T, VT, VW, SET1, LOADU, FMADD) break; \
                }                                                                     \
            }                                                                         \
        for (int r = 0; r < 4; r++)                                                   \
            for (int v = 0; v < V; v++)                                               \
                STOREU((T *)out[r] + x + (size_t)v * VW, a[r][v]);                    \
    }

#define CVCPU_SIMD_CORR4(NAME, ATTR, V, T, VT, VW, ZERO, SET1, LOADU, STOREU, FMADD)      \
    ATTR static void NAME(void *const *out, size_t n, const void *const *rows, size_t K0, \
                          size_t K1, const void *wv, size_t K2)                           \
    {                                                                                     \
        const T *w = wv;                                                                  \
        const size_t J = 4 + K1 - 1, N = (n + VW - 1) / VW * VW;                          \
        size_t x = 0;                                                                     \
        for (; x + V * VW <= N; x += V * VW)                                              \
            CVCPU_C4_BLOCK(V, T, VT, VW, ZERO, SET1, LOADU, STOREU, FMADD)                \
        for (; x < N; x += VW)                                                            \
            CVCPU_C4_BLOCK(1, T, VT, VW, ZERO, SET1, LOADU, STOREU, FMADD)                \
    }

CVCPU_SIMD_CORR4(corr4_avx2_f, CVCPU_AVX2, 2, float, __m256, 8, _mm256_setzero_ps(), _mm256_set1_ps,
                 _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps)
CVCPU_SIMD_CORR4(corr4_avx512_f, CVCPU_AVX512, 4, float, __m512, 16, _mm512_setzero_ps(),
                 _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_fmadd_ps)
#define MULADD(c, x, a) _mm256_add_pd(a, _mm256_mul_pd(c, x))
CVCPU_SIMD_CORR4(corr4_avx2_d, CVCPU_AVX2, 2, double, __m256d, 4, _mm256_setzero_pd(),
                 _mm256_set1_pd, _mm256_loadu_pd, _mm256_storeu_pd, MULADD)
#undef MULADD
#define MULADD(c, x, a) _mm512_add_pd(a, _mm512_mul_pd(c, x))
CVCPU_SIMD_CORR4(corr4_avx512_d, CVCPU_AVX512, 4, double, __m512d, 8, _mm512_setzero_pd(),
                 _mm512_set1_pd, _mm512_loadu_pd, _mm512_storeu_pd, MULADD)
#undef MULADD

/* ---- conversions (see cvcpu_cvt) ----------------------------------------------
 * min(hi, v) keeps NaN (the second operand) and clamps +inf; the conversion
 * rounds to nearest even and turns NaN and -inf into INT_MIN, which max(., 0)
 * makes 0; the unsigned saturating narrow does the rest. */
CVCPU_AVX512 static void to_u8_avx512(void *dst, const float *src, size_t n)
{
    uint8_t *d = dst;
    const __m512 hi = _mm512_set1_ps(255.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_loadu_ps(src + i)));
        _mm_storeu_si128((__m128i *)(void *)(d + i),
                         _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, _mm512_setzero_si512())));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_maskz_loadu_ps(m, src + i)));
        _mm512_mask_cvtusepi32_storeu_epi8(d + i, m, _mm512_max_epi32(v, _mm512_setzero_si512()));
    }
}

CVCPU_AVX512 static void to_u16_avx512(void *dst, const float *src, size_t n)
{
    uint16_t *d = dst;
    const __m512 hi = _mm512_set1_ps(65535.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_loadu_ps(src + i)));
        _mm256_storeu_si256((__m256i *)(void *)(d + i),
                            _mm512_cvtusepi32_epi16(_mm512_max_epi32(v, _mm512_setzero_si512())));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_maskz_loadu_ps(m, src + i)));
        _mm512_mask_cvtusepi32_storeu_epi16(d + i, m, _mm512_max_epi32(v, _mm512_setzero_si512()));
    }
}

CVCPU_AVX512 static void from_u8_avx512(float *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                      _mm_loadu_si128((const __m128i *)(const void *)(s + i)))));
    for (; i < n; i++)
        dst[i] = (float)s[i];
}

CVCPU_AVX512 static void from_u16_avx512(float *dst, const void *src, size_t n)
{
    const uint16_t *s = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(
                                      _mm256_loadu_si256((const __m256i *)(const void *)(s + i)))));
    for (; i < n; i++)
        dst[i] = (float)s[i];
}

/* AVX2: the same steps; signed saturating packs are exact after max(., 0)
 * and a clamp to hi, and the lane order is restored by a permute. */
CVCPU_AVX2 static void to_u8_avx2(void *dst, const float *src, size_t n)
{
    uint8_t *d = dst;
    const __m256 hi = _mm256_set1_ps(255.0f);
    const __m256i zero = _mm256_setzero_si256();
    size_t i = 0;
#define CVCPU_TO_I32(p) \
    _mm256_max_epi32(_mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(p))), zero)
    for (; i + 32 <= n; i += 32) {
        __m256i a = CVCPU_TO_I32(src + i), b = CVCPU_TO_I32(src + i + 8);
        __m256i c = CVCPU_TO_I32(src + i + 16), e = CVCPU_TO_I32(src + i + 24);
        __m256i ab = _mm256_packs_epi32(a, b), ce = _mm256_packs_epi32(c, e);
        __m256i r = _mm256_packus_epi16(ab, ce);
        r = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(void *)(d + i), r);
    }
    for (; i < n; i++) {
        float r = (src[i] + 0x1p23f) - 0x1p23f;
        r = r > 0.0f ? r : 0.0f;
        d[i] = (uint8_t)(r < 255.0f ? r : 255.0f);
    }
}

CVCPU_AVX2 static void to_u16_avx2(void *dst, const float *src, size_t n)
{
    uint16_t *d = dst;
    const __m256 hi = _mm256_set1_ps(65535.0f);
    const __m256i zero = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = CVCPU_TO_I32(src + i), b = CVCPU_TO_I32(src + i + 8);
        __m256i r = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)(d + i), r);
    }
    for (; i < n; i++) {
        float r = (src[i] + 0x1p23f) - 0x1p23f;
        r = r > 0.0f ? r : 0.0f;
        d[i] = (uint16_t)(r < 65535.0f ? r : 65535.0f);
    }
}

CVCPU_AVX2 static void from_u8_avx2(float *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                      _mm_loadl_epi64((const __m128i *)(const void *)(s + i)))));
    for (; i < n; i++)
        dst[i] = (float)s[i];
}

CVCPU_AVX2 static void from_u16_avx2(float *dst, const void *src, size_t n)
{
    const uint16_t *s = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(
                                      _mm_loadu_si128((const __m128i *)(const void *)(s + i)))));
    for (; i < n; i++)
        dst[i] = (float)s[i];
}

#undef CVCPU_TO_I32

/* scipy's cast (cvi_truncate_u8/u16) of doubles divided by `divisor`, four
 * at a time: snapped to an integer within tol * max(|n|, 1), truncated;
 * a group with a value outside the int32 range (or NaN) takes the scalar
 * rule, whose int64 low bits differ from int32's there. The low byte(s)
 * of each int32 are gathered by a shuffle (es: 1 or 2 bytes kept). */
CVCPU_AVX2 static void trunc_avx2(void *dst, int es, const double *src, size_t n, double divisor,
                                  double tol)
{
    const __m256d dv = _mm256_set1_pd(divisor), eps = _mm256_set1_pd(tol);
    const __m256d one = _mm256_set1_pd(1.0), lim = _mm256_set1_pd(2147483647.0);
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    const __m128i pick = es == 1 ? _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                 -1, -1, -1)
                                 : _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1,
                                                 -1, -1);
    uint8_t *d8 = dst;
    uint16_t *d16 = dst;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_div_pd(_mm256_loadu_pd(src + i), dv);
        __m256d r = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256d dd = _mm256_and_pd(_mm256_sub_pd(v, r), absm);
        __m256d m = _mm256_max_pd(_mm256_and_pd(r, absm), one);
        v = _mm256_blendv_pd(v, r, _mm256_cmp_pd(dd, _mm256_mul_pd(eps, m), _CMP_LE_OQ));
        if (_mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(v, absm), lim, _CMP_LT_OQ)) != 0xF) {
            for (size_t k = i; k < i + 4; k++) {
                if (es == 1)
                    d8[k] = cvi_truncate_u8(src[k], divisor, tol);
                else
                    d16[k] = cvi_truncate_u16(src[k], divisor, tol);
            }
            continue;
        }
        __m128i q = _mm_shuffle_epi8(_mm256_cvttpd_epi32(v), pick);
        if (es == 1) {
            int32_t w = _mm_cvtsi128_si32(q);
            memcpy(d8 + i, &w, 4);
        } else {
            int64_t w = _mm_cvtsi128_si64(q);
            memcpy(d16 + i, &w, 8);
        }
    }
    for (; i < n; i++) {
        if (es == 1)
            d8[i] = cvi_truncate_u8(src[i], divisor, tol);
        else
            d16[i] = cvi_truncate_u16(src[i], divisor, tol);
    }
}

CVCPU_AVX2 static void trunc_u8_avx2(void *dst, const double *src, size_t n, double divisor,
                                     double tol)
{
    trunc_avx2(dst, 1, src, n, divisor, tol);
}

CVCPU_AVX2 static void trunc_u16_avx2(void *dst, const double *src, size_t n, double divisor,
                                      double tol)
{
    trunc_avx2(dst, 2, src, n, divisor, tol);
}

static const cvcpu_cvt cvt_avx512 = {to_u8_avx512,    to_u16_avx512, from_u8_avx512,
                                     from_u16_avx512, trunc_u8_avx2, trunc_u16_avx2};
static const cvcpu_cvt cvt_avx2 = {to_u8_avx2,    to_u16_avx2,   from_u8_avx2,
                                   from_u16_avx2, trunc_u8_avx2, trunc_u16_avx2};

#endif /* x86-64 */

const cvcpu_cvt *cvcpu_cvt_kernels(int isa)
{
#if CVCPU_X86
    if (isa >= CVCPU_ISA_AVX512)
        return &cvt_avx512;
    if (isa >= CVCPU_ISA_AVX2)
        return &cvt_avx2;
#else
    (void)isa;
#endif
    return NULL;
}

cvcpu_corr_fn cvcpu_corr_kernel(int dbl, int isa)
{
#if CVCPU_X86
    if (isa >= CVCPU_ISA_AVX512)
        return dbl ? corr_avx512_d : corr_avx512_f;
    if (isa >= CVCPU_ISA_AVX2)
        return dbl ? corr_avx2_d : corr_avx2_f;
#else
    (void)isa;
#endif
    return dbl ? corr_portable_d : corr_portable_f;
}

cvcpu_corr4_fn cvcpu_corr4_kernel(int dbl, int isa)
{
#if CVCPU_X86
    if (isa >= CVCPU_ISA_AVX512)
        return dbl ? corr4_avx512_d : corr4_avx512_f;
    if (isa >= CVCPU_ISA_AVX2)
        return dbl ? corr4_avx2_d : corr4_avx2_f;
#else
    (void)dbl;
    (void)isa;
#endif
    return NULL;
}

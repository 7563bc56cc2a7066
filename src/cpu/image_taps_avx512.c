/*
 * image_taps_avx512.c - the image strategy's float kernels with AVX-512F
 * (image_taps.h): the ring path's horizontal pass (shifted vectors from
 * aligned loads and valignd, compile-time specialisations for short
 * symmetric filters on 1 to 4 channels) and vertical pass (eight output
 * rows at a time, each ring row loaded once), which then serves every
 * separable filter. The dense pass and the short path are AVX2's.
 */
#include "image_taps.h"

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>

/* Output rows the AVX-512 vertical pass computes at once. */
#define VROWS512 8

/* 16 floats as int32 for an integer output of largest value hi: rounded,
 * saturated and NaN to 0 as cvcpu_emit16 (max(v, 0) gives 0 for NaN). */
CVCPU_AVX512 static CVCPU_INLINE __m512i cvt512(__m512 x, float hi)
{
    return _mm512_cvtps_epi32(
        _mm512_min_ps(_mm512_max_ps(x, _mm512_setzero_ps()), _mm512_set1_ps(hi)));
}

/* NV vectors at p + o + 16 i (p 64-byte aligned, NV <= 8): aligned loads
 * joined by valignd (a vector across two cache lines costs two loads). */
CVCPU_AVX512 static CVCPU_INLINE void shifted512(const float *p, size_t o, int NV, __m512 *out)
{
    const __m512i *a = (const __m512i *)(const void *)(p + (o & ~(size_t)15));
    __m512i v[9];
    if (!(o & 15)) {
        for (int i = 0; i < NV; i++)
            out[i] = _mm512_castsi512_ps(_mm512_load_si512(a + i));
        return;
    }
    for (int i = 0; i <= NV; i++)
        v[i] = _mm512_load_si512(a + i);
    switch (o & 15) {
#define CVCPU_SH(S)                                                               \
    case S:                                                                       \
        for (int i = 0; i < NV; i++)                                              \
            out[i] = _mm512_castsi512_ps(_mm512_alignr_epi32(v[i + 1], v[i], S)); \
        break;
        CVCPU_SH(1)
        CVCPU_SH(2)
        CVCPU_SH(3)
        CVCPU_SH(4)
        CVCPU_SH(5)
        CVCPU_SH(6)
        CVCPU_SH(7)
        CVCPU_SH(8)
        CVCPU_SH(9)
        CVCPU_SH(10)
        CVCPU_SH(11)
        CVCPU_SH(12)
        CVCPU_SH(13)
        CVCPU_SH(14)
    default: CVCPU_SH(15)
#undef CVCPU_SH
    }
}

/* The horizontal pass of NV vectors (16 floats each) from s (64-byte
 * aligned) into a[]: the same sums in the same order as hpass_t. */
CVCPU_AVX512 static CVCPU_INLINE void hvec512(const float *restrict s, const float *restrict w,
                                              size_t K, size_t C, int sym, int NV, __m512 *a)
{
    const size_t half = K / 2;
    __m512 x[8], y[8];
    if (sym) {
        if (K & 1) {
            const __m512 wm = _mm512_set1_ps(w[half]);
            shifted512(s, half * C, NV, x);
            for (int i = 0; i < NV; i++)
                a[i] = _mm512_mul_ps(wm, x[i]);
        } else {
            for (int i = 0; i < NV; i++)
                a[i] = _mm512_setzero_ps();
        }
#if !defined(__clang__) /* clang warns when it cannot (the length known at run time) */
#pragma GCC unroll 16
#endif
        for (size_t k = 0; k < half; k++) {
            const __m512 wk = _mm512_set1_ps(w[k]);
            shifted512(s, k * C, NV, x);
            shifted512(s, (K - 1 - k) * C, NV, y);
            for (int i = 0; i < NV; i++)
                a[i] = _mm512_fmadd_ps(wk, _mm512_add_ps(x[i], y[i]), a[i]);
        }
    } else {
        const __m512 w0 = _mm512_set1_ps(w[0]);
        shifted512(s, 0, NV, x);
        for (int i = 0; i < NV; i++)
            a[i] = _mm512_mul_ps(w0, x[i]);
        for (size_t k = 1; k < K; k++) {
            const __m512 wk = _mm512_set1_ps(w[k]);
            shifted512(s, k * C, NV, x);
            for (int i = 0; i < NV; i++)
                a[i] = _mm512_fmadd_ps(wk, x[i], a[i]);
        }
    }
}

/* The horizontal pass into a float row: n (a multiple of 32) values. */
CVCPU_AVX512 static CVCPU_INLINE void hrow512_t(float *restrict dst, const float *restrict src,
                                                size_t n, const float *restrict w, size_t K,
                                                size_t C, int sym)
{
    __m512 a[8];
    size_t j = 0;
    for (; j + 128 <= n; j += 128) {
        hvec512(src + j, w, K, C, sym, 8, a);
        for (int i = 0; i < 8; i++)
            _mm512_storeu_ps(dst + j + 16 * i, a[i]);
    }
    for (; j < n; j += 32) {
        hvec512(src + j, w, K, C, sym, 2, a);
        _mm512_storeu_ps(dst + j, a[0]);
        _mm512_storeu_ps(dst + j + 16, a[1]);
    }
}

CVCPU_AVX512 static void hrow512(const cvcpu_img *g, float *dst, const float *src, size_t n,
                                 const float *w, size_t K, int sym)
{
    const size_t C = g->C;
    /* short symmetric filters of 1 to 4 channels: every offset known at
     * compile time, so each aligned vector is loaded once for all taps */
#define CVCPU_HR(KK, CC) hrow512_t(dst, src, n, w, KK, CC, 1)
#define CVCPU_HR_C(KK)                \
    switch (C) {                      \
    case 1: CVCPU_HR(KK, 1); return;  \
    case 2: CVCPU_HR(KK, 2); return;  \
    case 3: CVCPU_HR(KK, 3); return;  \
    case 4: CVCPU_HR(KK, 4); return;  \
    default: CVCPU_HR(KK, C); return; \
    }
    if (sym) {
        switch (K) {
        case 3: CVCPU_HR_C(3);
        case 5: CVCPU_HR_C(5);
        case 7: CVCPU_HR_C(7);
        case 9: CVCPU_HR_C(9);
        case 17: CVCPU_HR_C(17);
        case 33: CVCPU_HR_C(33);
        default: break;
        }
    }
    hrow512_t(dst, src, n, w, K, C, sym);
#undef CVCPU_HR_C
#undef CVCPU_HR
}

/* Stores 16 floats as output kind t at d. */
CVCPU_AVX512 static CVCPU_INLINE void emit16_512(char *d, __m512 x, int t, int nt)
{
    if (t == CVCPU_OUT_U8) {
        __m128i q = _mm512_cvtepi32_epi8(cvt512(x, 255.0f));
        if (nt && !((uintptr_t)d & 15))
            _mm_stream_si128((__m128i *)(void *)d, q);
        else
            _mm_storeu_si128((__m128i *)(void *)d, q);
    } else if (t == CVCPU_OUT_U16) {
        cvcpu_store32(d, _mm512_cvtepi32_epi16(cvt512(x, 65535.0f)), nt);
    } else if (nt && !((uintptr_t)d & 63)) {
        _mm512_stream_ps((float *)(void *)d, x);
    } else {
        _mm512_storeu_ps((float *)(void *)d, x);
    }
}

/* The vertical pass of 16 columns from c of VROWS512 output rows from
 * float rows r[0 .. K + VROWS512 - 1): row j's sum is over r[j .. j + K)
 * in vcol32's order (folded: pair k = r[j + k] + r[j + K-1-k], k
 * ascending, then the middle row), whichever j. Each row vector is loaded
 * once and kept in registers for the output rows that use it. */
CVCPU_AVX512 static CVCPU_INLINE void vcol512(const float *const *restrict r, size_t c,
                                              const float *restrict w, size_t K, int sym,
                                              __m512 acc[VROWS512])
{
    enum { J = VROWS512 };
    if (!sym) {
        for (size_t j = 0; j < J; j++) /* (each set at k = j) */
            acc[j] = _mm512_setzero_ps();
        for (size_t k = 0; k < K + J - 1; k++) {
            const __m512 v = _mm512_loadu_ps(r[k] + c);
            for (size_t j = 0; j < J; j++) {
                if (k < j || k - j >= K)
                    continue;
                const __m512 wk = _mm512_set1_ps(w[k - j]);
                acc[j] = k == j ? _mm512_mul_ps(wk, v) : _mm512_fmadd_ps(wk, v, acc[j]);
            }
        }
        return;
    }
    const size_t half = K / 2;
    /* a[j] = r[j + k], b[j] = r[j + K-1-k] */
    __m512 a[J], b[J];
    for (int j = 0; j < J; j++) {
        a[j] = _mm512_loadu_ps(r[j] + c);
        b[j] = _mm512_loadu_ps(r[K - 1 + j] + c);
    }
    __m512 wk = _mm512_set1_ps(w[0]);
    for (int j = 0; j < J; j++)
        acc[j] = _mm512_mul_ps(wk, _mm512_add_ps(a[j], b[j]));
    for (size_t k = 1; k < half; k++) {
        for (int j = 0; j < J - 1; j++)
            a[j] = a[j + 1];
        for (int j = J - 1; j > 0; j--)
            b[j] = b[j - 1];
        a[J - 1] = _mm512_loadu_ps(r[k + J - 1] + c);
        b[0] = _mm512_loadu_ps(r[K - 1 - k] + c);
        wk = _mm512_set1_ps(w[k]);
        for (int j = 0; j < J; j++)
            acc[j] = _mm512_fmadd_ps(wk, _mm512_add_ps(a[j], b[j]), acc[j]);
    }
    if (K & 1) {
        wk = _mm512_set1_ps(w[half]);
        for (int j = 0; j < J; j++)
            acc[j] = _mm512_fmadd_ps(wk, _mm512_loadu_ps(r[half + j] + c), acc[j]);
    }
}

/* The vertical pass over m columns of float rows r[0 .. K + VROWS512 - 1)
 * (padded to a multiple of 32), output rows d[j] (NULL: not stored). */
CVCPU_AVX512 static CVCPU_INLINE void vemit512_t(const cvcpu_img *g, char *const *d,
                                                 const float *const *r, size_t m, const float *w,
                                                 size_t K, int sym, int t)
{
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4;
    __m512 acc[VROWS512];
    size_t c = 0;
    for (; c + 16 <= m; c += 16) {
        vcol512(r, c, w, K, sym, acc);
        for (int j = 0; j < VROWS512; j++)
            if (d[j])
                emit16_512(d[j] + c * oes, acc[j], t, g->nt);
    }
    if (c < m) {
        float v[16];
        vcol512(r, c, w, K, sym, acc);
        for (int j = 0; j < VROWS512; j++)
            if (d[j]) {
                _mm512_storeu_ps(v, acc[j]);
                cvcpu_img_store(g, d[j] + c * oes, v, m - c);
            }
    }
}

/* The vertical pass of short symmetric filters (K <= 9 rows) with all
 * VROWS512 output rows present: a column block's K + VROWS512 - 1 row
 * vectors are loaded once into registers and each output row's sum is
 * formed and stored at once, in vcol512's order (pairs k ascending, then
 * the middle row), so the results are vemit512_t's bit for bit. Row
 * pointers, taps and the streaming flag live in registers, not behind
 * pointers the stores might alias (vemit512_t kept its eight sums on the
 * stack and reloaded the flag for every store). */
CVCPU_AVX512 static CVCPU_INLINE void vshort512_t(const cvcpu_img *g, char *const *d,
                                                  const float *const *r, size_t m, const float *w,
                                                  const size_t K, const int t)
{
    enum { J = VROWS512 };
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4;
    const size_t half = K / 2;
    const int nt = g->nt;
    __m512 wk[5];
    for (size_t k = 0; k <= half; k++)
        wk[k] = _mm512_set1_ps(w[k]);
    const float *rr[9 + J - 1];
    for (size_t i = 0; i < K + J - 1; i++)
        rr[i] = r[i];
    char *dd[J];
    for (int j = 0; j < J; j++)
        dd[j] = d[j];
    size_t c = 0;
    for (; c + 16 <= m; c += 16) {
        __m512 v[9 + J - 1];
        for (size_t i = 0; i < K + J - 1; i++)
            v[i] = _mm512_loadu_ps(rr[i] + c);
        for (int j = 0; j < J; j++) {
            __m512 acc = _mm512_mul_ps(wk[0], _mm512_add_ps(v[j], v[j + K - 1]));
            for (size_t k = 1; k < half; k++)
                acc = _mm512_fmadd_ps(wk[k], _mm512_add_ps(v[j + k], v[j + K - 1 - k]), acc);
            if (K & 1)
                acc = _mm512_fmadd_ps(wk[half], v[j + half], acc);
            emit16_512(dd[j] + c * oes, acc, t, nt);
        }
    }
    if (c < m) { /* the last columns through the general kernel */
        const float *r2[9 + J - 1];
        char *d2[J];
        for (size_t i = 0; i < K + J - 1; i++)
            r2[i] = rr[i] + c;
        for (int j = 0; j < J; j++)
            d2[j] = dd[j] + c * oes;
        vemit512_t(g, d2, r2, m - c, w, K, 1, t);
    }
}

CVCPU_AVX512 static void vemit512(const cvcpu_img *g, char *const *d, const float *const *r,
                                  size_t m, const float *w, size_t K, int sym)
{
#define CVCPU_VE(KK, SYM, T) vemit512_t(g, d, r, m, w, KK, SYM, T)
#define CVCPU_VS(KK, T) vshort512_t(g, d, r, m, w, KK, T)
#define CVCPU_VE_K(T)           \
    do {                        \
        if (!sym)               \
            CVCPU_VE(K, 0, T);  \
        else if (all && K == 3) \
            CVCPU_VS(3, T);     \
        else if (all && K == 5) \
            CVCPU_VS(5, T);     \
        else if (all && K == 7) \
            CVCPU_VS(7, T);     \
        else if (all && K == 9) \
            CVCPU_VS(9, T);     \
        else if (K == 5)        \
            CVCPU_VE(5, 1, T);  \
        else if (K == 9)        \
            CVCPU_VE(9, 1, T);  \
        else                    \
            CVCPU_VE(K, 1, T);  \
    } while (0)
    /* every output row stored: the short kernels */
    int all = 1;
    for (int j = 0; j < VROWS512; j++)
        all &= d[j] != NULL;
    CVCPU_BY_OUT_KIND(g->out_type, CVCPU_VE_K);
#undef CVCPU_VE_K
#undef CVCPU_VS
#undef CVCPU_VE
}

const cvcpu_img_kernels cvcpu_img_kernels_avx512 = {
    .short_rows = 0,
    .ring_rows = VROWS512,
    .hrow = hrow512,
    .vring = vemit512,
};

#endif

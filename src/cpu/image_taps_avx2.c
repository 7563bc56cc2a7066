/*
 * image_taps_avx2.c - the image strategy's float kernels with AVX2 and FMA
 * (image_taps.h): the short path's vertical pass on the input rows (four
 * output rows at a time) and horizontal pass into the output, the ring
 * path's horizontal pass into float rows and vertical pass (two output rows
 * at a time), the dense pass (two output rows per pass over the ring).
 */
#include "image_taps.h"

#include <string.h>

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>

/* Filters of up to this many rows take the short path: the vertical pass
 * reads the input rows (converting each element once per tap); taller ones
 * convert each input row once into a ring of float rows. */
#define CVCPU_DIRECT_ROWS 9

/* ---- the short path ------------------------------------------------------- */

/* 8 elements at element e of a row of type ty, as float. */
CVCPU_AVX2 static CVCPU_INLINE __m256 ld8(const char *row, size_t e, int ty)
{
    if (ty == CVCPU_ROW_F32)
        return _mm256_loadu_ps((const float *)(const void *)row + e);
    if (ty == CVCPU_ROW_U16)
        return _mm256_cvtepi32_ps(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * e))));
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(row + e))));
}

/*
 * The vertical pass of short filters (K <= 9 rows) over the elements
 * [e0, e1), CVCPU_VROWS output rows at once: o[j][e - e0] = c[j] + sum_{i<K}
 * w[i] * r[j + i][e] for j < CVCPU_VROWS, from the K + CVCPU_VROWS - 1 input rows r
 * (rows of cval in CONSTANT mode are rows of zeros here, their share in
 * c[j]), 8 columns at a time: each row is loaded and converted once and
 * feeds every output row it belongs to; taps in registers, the sum in the
 * same order (i ascending) for every row whichever j it is. Up to 7 values
 * more are written past e1 - e0. The last piece of a row is read through
 * copies in `tail` ((K + CVCPU_VROWS) * 32 bytes), never past the row's end.
 */
CVCPU_AVX2 static CVCPU_INLINE void vrange4_t(const char *const *restrict r, size_t e0, size_t e1,
                                              const float *restrict w, const size_t K, const int ty,
                                              const float *restrict c, float *const *restrict o,
                                              char *tail)
{
    __m256 wk[9];
    for (size_t i = 0; i < K; i++)
        wk[i] = _mm256_broadcast_ss(w + i);
    const __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    const __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    const char *rr[9 + CVCPU_VROWS];
    for (size_t k = 0; k < K + CVCPU_VROWS - 1; k++)
        rr[k] = r[k];
    for (size_t e = e0; e < e1; e += 8) {
        size_t at = e;
        if (e + 8 > e1) { /* the last piece: each row's elements copied into a zeroed block */
            const size_t es = ty == CVCPU_ROW_U16 ? 2 : 1;
            for (size_t k = 0; k < K + CVCPU_VROWS - 1; k++) {
                memset(tail + 32 * k, 0, 32);
                memcpy(tail + 32 * k, r[k] + e * es, (e1 - e) * es);
                rr[k] = tail + 32 * k;
            }
            at = 0;
        }
        __m256 a[CVCPU_VROWS] = {c0, c1, c2, c3};
        for (size_t k = 0; k < K + CVCPU_VROWS - 1; k++) {
            const __m256 v = ld8(rr[k], at, ty);
            for (size_t j = 0; j < CVCPU_VROWS; j++)
                if (k >= j && k - j < K)
                    a[j] = _mm256_fmadd_ps(wk[k - j], v, a[j]);
        }
        for (size_t j = 0; j < CVCPU_VROWS; j++)
            _mm256_storeu_ps(o[j] + (e - e0), a[j]);
    }
}

CVCPU_AVX2 static void vrange4(const char *const *r, size_t e0, size_t e1, const float *w, size_t K,
                               int ty, const float *c, float *const *o, char *tail)
{
#define CVCPU_VR(KK)                                                \
    do {                                                            \
        if (ty == CVCPU_ROW_U8)                                     \
            vrange4_t(r, e0, e1, w, KK, CVCPU_ROW_U8, c, o, tail);  \
        else                                                        \
            vrange4_t(r, e0, e1, w, KK, CVCPU_ROW_U16, c, o, tail); \
    } while (0)
    switch (K) {
    case 1: CVCPU_VR(1); break;
    case 2: CVCPU_VR(2); break;
    case 3: CVCPU_VR(3); break;
    case 4: CVCPU_VR(4); break;
    case 5: CVCPU_VR(5); break;
    case 6: CVCPU_VR(6); break;
    case 7: CVCPU_VR(7); break;
    case 8: CVCPU_VR(8); break;
    default: CVCPU_VR(9); break;
    }
#undef CVCPU_VR
}

/* The horizontal pass of one row: out[j] = sum_k w[k] * src[j + k*C] for
 * j < m, folded when sym, stored as output type t at d. */
CVCPU_AVX2 static CVCPU_INLINE void hpass_t(const cvcpu_img *g, char *restrict d,
                                            const float *restrict src, size_t m,
                                            const float *restrict w, size_t K, size_t C, int sym,
                                            int t)
{
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4, half = K / 2;
    for (size_t j = 0; j < m; j += 32) {
        const float *s = src + j;
        __m256 a0, a1, a2, a3;
        if (sym) {
            if (K & 1) {
                const float *q = s + half * C;
                __m256 wm = _mm256_broadcast_ss(w + half);
                a0 = _mm256_mul_ps(wm, _mm256_loadu_ps(q));
                a1 = _mm256_mul_ps(wm, _mm256_loadu_ps(q + 8));
                a2 = _mm256_mul_ps(wm, _mm256_loadu_ps(q + 16));
                a3 = _mm256_mul_ps(wm, _mm256_loadu_ps(q + 24));
            } else {
                a0 = a1 = a2 = a3 = _mm256_setzero_ps();
            }
            for (size_t k = 0; k < half; k++) {
                const float *p = s + k * C, *q = s + (K - 1 - k) * C;
                __m256 wk = _mm256_broadcast_ss(w + k);
                a0 = _mm256_fmadd_ps(wk, _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(q)), a0);
                a1 = _mm256_fmadd_ps(
                    wk, _mm256_add_ps(_mm256_loadu_ps(p + 8), _mm256_loadu_ps(q + 8)), a1);
                a2 = _mm256_fmadd_ps(
                    wk, _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(q + 16)), a2);
                a3 = _mm256_fmadd_ps(
                    wk, _mm256_add_ps(_mm256_loadu_ps(p + 24), _mm256_loadu_ps(q + 24)), a3);
            }
        } else {
            __m256 wk = _mm256_broadcast_ss(w);
            a0 = _mm256_mul_ps(wk, _mm256_loadu_ps(s));
            a1 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 8));
            a2 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 16));
            a3 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 24));
            for (size_t k = 1; k < K; k++) {
                const float *q = s + k * C;
                wk = _mm256_broadcast_ss(w + k);
                a0 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q), a0);
                a1 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 8), a1);
                a2 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 16), a2);
                a3 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 24), a3);
            }
        }
        if (j + 32 <= m) {
            cvcpu_emit32(d + j * oes, a0, a1, a2, a3, t, g->nt);
        } else {
            float v[32];
            _mm256_storeu_ps(v, a0), _mm256_storeu_ps(v + 8, a1);
            _mm256_storeu_ps(v + 16, a2), _mm256_storeu_ps(v + 24, a3);
            cvcpu_img_store(g, d + j * oes, v, m - j);
        }
    }
}

CVCPU_AVX2 static void hpass(const cvcpu_img *g, char *d, const float *src, size_t m,
                             const float *w, size_t K, int sym)
{
    const size_t C = g->C;
#define CVCPU_HP(KK, SYM, T) hpass_t(g, d, src, m, w, KK, C, SYM, T)
    /* short filters: not folded (one FMA with a memory operand per tap
     * is fewer instructions than two loads, an add and an FMA per pair) */
#define CVCPU_HP_TYPE(T)        \
    do {                        \
        if (K == 3)             \
            CVCPU_HP(3, 0, T);  \
        else if (K == 5)        \
            CVCPU_HP(5, 0, T);  \
        else if (K == 7)        \
            CVCPU_HP(7, 0, T);  \
        else if (K == 9)        \
            CVCPU_HP(9, 0, T);  \
        else if (K < 9 || !sym) \
            CVCPU_HP(K, 0, T);  \
        else                    \
            CVCPU_HP(K, 1, T);  \
    } while (0)
    CVCPU_BY_OUT_KIND(g->out_type, CVCPU_HP_TYPE);
#undef CVCPU_HP_TYPE
#undef CVCPU_HP
}

/* ---- the dense pass ------------------------------------------------------- */

/* Dense, 16 columns from c of two rows: a = sum_{k1<K1, k2<K2}
 * w[k1*K2 + k2] * r[k1][c + k2*C], b the same on r[k1 + 1] (two = 1; else
 * b is not computed): every loaded vector feeds both rows. */
CVCPU_AVX2 static CVCPU_INLINE void dcol(const float *const *r, size_t c, const float *w, size_t K1,
                                         size_t K2, size_t C, int two, __m256 *a0, __m256 *a1,
                                         __m256 *b0, __m256 *b1)
{
    __m256 x0 = _mm256_setzero_ps(), x1 = x0, y0 = x0, y1 = x0;
    for (size_t k1 = 0; k1 < K1 + (size_t)two; k1++) {
        const float *row = r[k1] + c;
        for (size_t k2 = 0; k2 < K2; k2++, row += C) {
            __m256 v0 = _mm256_loadu_ps(row), v1 = _mm256_loadu_ps(row + 8);
            if (k1 < K1) {
                __m256 wa = _mm256_broadcast_ss(w + k1 * K2 + k2);
                x0 = _mm256_fmadd_ps(wa, v0, x0);
                x1 = _mm256_fmadd_ps(wa, v1, x1);
            }
            if (two && k1 > 0) {
                __m256 wb = _mm256_broadcast_ss(w + (k1 - 1) * K2 + k2);
                y0 = _mm256_fmadd_ps(wb, v0, y0);
                y1 = _mm256_fmadd_ps(wb, v1, y1);
            }
        }
    }
    *a0 = x0, *a1 = x1, *b0 = y0, *b1 = y1;
}

CVCPU_AVX2 static CVCPU_INLINE void dpass_t(const cvcpu_img *g, char *d0, char *d1,
                                            const float *const *r, size_t m, const float *w, int t)
{
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4;
    const int two = d1 != NULL;
    __m256 a0, a1, b0, b1;
    size_t c = 0;
    for (; c + 16 <= m; c += 16) {
        dcol(r, c, w, g->K1, g->K2, g->C, two, &a0, &a1, &b0, &b1);
        cvcpu_emit16(d0 + c * oes, a0, a1, t, g->nt);
        if (two)
            cvcpu_emit16(d1 + c * oes, b0, b1, t, g->nt);
    }
    if (c < m) {
        float v[32];
        dcol(r, c, w, g->K1, g->K2, g->C, two, &a0, &a1, &b0, &b1);
        _mm256_storeu_ps(v, a0), _mm256_storeu_ps(v + 8, a1);
        _mm256_storeu_ps(v + 16, b0), _mm256_storeu_ps(v + 24, b1);
        cvcpu_img_store(g, d0 + c * oes, v, m - c);
        if (two)
            cvcpu_img_store(g, d1 + c * oes, v + 16, m - c);
    }
}

CVCPU_AVX2 static void dpass(const cvcpu_img *g, char *d0, char *d1, const float *const *r,
                             size_t m, const float *w)
{
#define CVCPU_DP(T) dpass_t(g, d0, d1, r, m, w, T)
    CVCPU_BY_OUT_KIND(g->out_type, CVCPU_DP);
#undef CVCPU_DP
}

/* ---- the ring path -------------------------------------------------------- */

/* The horizontal pass into a float row (n a multiple of 32). */
CVCPU_AVX2 static void hrow(const cvcpu_img *g, float *dst, const float *src, size_t n,
                            const float *w, size_t K, int sym)
{
    if (sym)
        hpass_t(g, (char *)(void *)dst, src, n, w, K, g->C, 1, CVCPU_OUT_F32);
    else
        hpass_t(g, (char *)(void *)dst, src, n, w, K, g->C, 0, CVCPU_OUT_F32);
}

/* 32 columns from c of two output rows from float rows r[0..K] (all
 * present): x = sum_{k<K} w[k] * r[k], y = sum_k w[k] * r[k+1]; with sym
 * folded as vcol (in the same order for both rows), each pair's second row
 * an operand of the add, so that 8 accumulators run without carrying rows
 * from step to step. */
CVCPU_AVX2 static CVCPU_INLINE void vcol32(const float *const *restrict r, size_t c,
                                           const float *restrict w, size_t K, int sym, __m256 x[4],
                                           __m256 y[4])
{
    if (!sym) {
        __m256 w0 = _mm256_broadcast_ss(w);
        for (int i = 0; i < 4; i++) {
            x[i] = _mm256_mul_ps(w0, _mm256_loadu_ps(r[0] + c + 8 * i));
            y[i] = _mm256_mul_ps(w0, _mm256_loadu_ps(r[1] + c + 8 * i));
        }
        for (size_t k = 1; k < K; k++) {
            const __m256 wk = _mm256_broadcast_ss(w + k);
            for (int i = 0; i < 4; i++) {
                __m256 v = _mm256_loadu_ps(r[k] + c + 8 * i);
                x[i] = _mm256_fmadd_ps(wk, v, x[i]);
                y[i] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(r[k + 1] + c + 8 * i), y[i]);
            }
        }
        return;
    }
    const size_t half = K / 2;
    __m256 wk = _mm256_broadcast_ss(w);
    for (int i = 0; i < 4; i++) {
        x[i] = _mm256_mul_ps(wk, _mm256_add_ps(_mm256_loadu_ps(r[0] + c + 8 * i),
                                               _mm256_loadu_ps(r[K - 1] + c + 8 * i)));
        y[i] = _mm256_mul_ps(wk, _mm256_add_ps(_mm256_loadu_ps(r[1] + c + 8 * i),
                                               _mm256_loadu_ps(r[K] + c + 8 * i)));
    }
    for (size_t k = 1; k < half; k++) {
        wk = _mm256_broadcast_ss(w + k);
        const float *a = r[k] + c, *b = r[K - 1 - k] + c, *a1 = r[k + 1] + c, *b1 = r[K - k] + c;
        for (int i = 0; i < 4; i++) {
            x[i] = _mm256_fmadd_ps(
                wk, _mm256_add_ps(_mm256_loadu_ps(a + 8 * i), _mm256_loadu_ps(b + 8 * i)), x[i]);
            y[i] = _mm256_fmadd_ps(
                wk, _mm256_add_ps(_mm256_loadu_ps(a1 + 8 * i), _mm256_loadu_ps(b1 + 8 * i)), y[i]);
        }
    }
    if (K & 1) {
        wk = _mm256_broadcast_ss(w + half);
        for (int i = 0; i < 4; i++) {
            x[i] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(r[half] + c + 8 * i), x[i]);
            y[i] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(r[half + 1] + c + 8 * i), y[i]);
        }
    }
}

/* The vertical pass over m columns of float rows r[0..K] (all present,
 * padded to a multiple of 32), two output rows (d1 NULL: one), stored as
 * output kind t. */
CVCPU_AVX2 static CVCPU_INLINE void vemit_t(const cvcpu_img *g, char *d0, char *d1,
                                            const char *const *r, size_t m, const float *w,
                                            size_t K, int sym, int t)
{
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4;
    const float *const *fr = (const float *const *)(const void *)r;
    __m256 x[4], y[4];
    for (size_t c = 0; c < m; c += 32) {
        vcol32(fr, c, w, K, sym, x, y);
        if (c + 32 <= m) {
            cvcpu_emit32(d0 + c * oes, x[0], x[1], x[2], x[3], t, g->nt);
            if (d1)
                cvcpu_emit32(d1 + c * oes, y[0], y[1], y[2], y[3], t, g->nt);
        } else {
            float v[64];
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_ps(v + 8 * i, x[i]);
                _mm256_storeu_ps(v + 32 + 8 * i, y[i]);
            }
            cvcpu_img_store(g, d0 + c * oes, v, m - c);
            if (d1)
                cvcpu_img_store(g, d1 + c * oes, v + 32, m - c);
        }
    }
}

/* Two output rows, d[0] and d[1]. */
CVCPU_AVX2 static void vemit(const cvcpu_img *g, char *const *d, const float *const *r, size_t m,
                             const float *w, size_t K, int sym)
{
    const char *const *rows = (const char *const *)(const void *)r;
    char *d0 = d[0], *d1 = d[1];
#define CVCPU_VEMIT(SYM, T) vemit_t(g, d0, d1, rows, m, w, K, SYM, T)
#define CVCPU_VEMIT_T(T) (sym ? CVCPU_VEMIT(1, T) : CVCPU_VEMIT(0, T))
    CVCPU_BY_OUT_KIND(g->out_type, CVCPU_VEMIT_T);
#undef CVCPU_VEMIT_T
#undef CVCPU_VEMIT
}

const cvcpu_img_kernels cvcpu_img_kernels_avx2 = {
    .short_rows = CVCPU_DIRECT_ROWS,
    .ring_rows = 2,
    .vrange = vrange4,
    .hpass = hpass,
    .hrow = hrow,
    .vring = vemit,
    .dpass = dpass,
};

#endif

/*
 * image_taps.c - the image strategy's float paths (image.h): separable
 * filters (horizontal pass per input row into a ring, vertical pass two
 * output rows at a time) and small dense filters (a ring of converted input
 * rows), both on rows of interleaved channels with horizontal taps C
 * elements apart. AVX2 + FMA kernels; symmetric taps are folded.
 */
#include "image.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>

/* Floats per thread for the ring of rows (about half of a 512 KiB L2). */
#define RING_FLOATS ((size_t)64 << 10)
/* Columns per vertical-pass chunk: its two output rows stay in L1. */
#define CHUNK 512

/* ---- kernels: n is a multiple of 32 (horizontal) or 16 (vertical) ----- */

/* dst[j] = sum_k w[k] * src[j + k*C] */
CVCPU_AVX2 static void h_general(float *dst, const float *src, size_t n, const float *w, size_t K,
                                 size_t C)
{
    for (size_t j = 0; j < n; j += 32) {
        const float *s = src + j;
        __m256 wk = _mm256_broadcast_ss(w);
        __m256 a0 = _mm256_mul_ps(wk, _mm256_loadu_ps(s));
        __m256 a1 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 8));
        __m256 a2 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 16));
        __m256 a3 = _mm256_mul_ps(wk, _mm256_loadu_ps(s + 24));
        for (size_t k = 1; k < K; k++) {
            const float *q = s + k * C;
            wk = _mm256_broadcast_ss(w + k);
            a0 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q), a0);
            a1 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 8), a1);
            a2 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 16), a2);
            a3 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(q + 24), a3);
        }
        _mm256_storeu_ps(dst + j, a0);
        _mm256_storeu_ps(dst + j + 8, a1);
        _mm256_storeu_ps(dst + j + 16, a2);
        _mm256_storeu_ps(dst + j + 24, a3);
    }
}

/* The same for w[k] == w[K-1-k]: (src[j + kC] + src[j + (K-1-k)C]) * w[k]. */
CVCPU_AVX2 static void h_symmetric(float *dst, const float *src, size_t n, const float *w,
                                   size_t K, size_t C)
{
    const size_t half = K / 2;
    for (size_t j = 0; j < n; j += 32) {
        const float *s = src + j;
        __m256 a0, a1, a2, a3;
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
        _mm256_storeu_ps(dst + j, a0);
        _mm256_storeu_ps(dst + j + 8, a1);
        _mm256_storeu_ps(dst + j + 16, a2);
        _mm256_storeu_ps(dst + j + 24, a3);
    }
}

/* o0[j] = sum_{k<K} w[k] * r[k][c + j], o1[j] = sum_k w[k] * r[k+1][c + j]:
 * two output rows from K + 1 rows, each row loaded once. */
CVCPU_AVX2 static void v2_general(float *o0, float *o1, const float *const *r, size_t c,
                                  size_t n, const float *w, size_t K)
{
    for (size_t j = 0; j < n; j += 16, c += 16) {
        __m256 wk = _mm256_broadcast_ss(w);
        __m256 a0 = _mm256_mul_ps(wk, _mm256_loadu_ps(r[0] + c));
        __m256 a1 = _mm256_mul_ps(wk, _mm256_loadu_ps(r[0] + c + 8));
        __m256 v0 = _mm256_loadu_ps(r[1] + c), v1 = _mm256_loadu_ps(r[1] + c + 8);
        __m256 b0 = _mm256_mul_ps(wk, v0), b1 = _mm256_mul_ps(wk, v1);
        for (size_t k = 1; k < K; k++) {
            wk = _mm256_broadcast_ss(w + k);
            a0 = _mm256_fmadd_ps(wk, v0, a0);
            a1 = _mm256_fmadd_ps(wk, v1, a1);
            v0 = _mm256_loadu_ps(r[k + 1] + c);
            v1 = _mm256_loadu_ps(r[k + 1] + c + 8);
            b0 = _mm256_fmadd_ps(wk, v0, b0);
            b1 = _mm256_fmadd_ps(wk, v1, b1);
        }
        _mm256_storeu_ps(o0 + j, a0);
        _mm256_storeu_ps(o0 + j + 8, a1);
        _mm256_storeu_ps(o1 + j, b0);
        _mm256_storeu_ps(o1 + j + 8, b1);
    }
}

/* The same for symmetric w, folded: each row is still loaded once (the
 * pair (r[k], r[K-1-k]) of row 0 and (r[k+1], r[K-k]) of row 1 share
 * r[k] with the previous step's pairs). */
CVCPU_AVX2 static void v2_symmetric(float *o0, float *o1, const float *const *r, size_t c,
                                    size_t n, const float *w, size_t K)
{
    const size_t half = K / 2;
    for (size_t j = 0; j < n; j += 16, c += 16) {
        /* k = 0: lo = r[0..1], hi = r[K-1..K] */
        __m256 wk = _mm256_broadcast_ss(w);
        __m256 B0 = _mm256_loadu_ps(r[1] + c), B1 = _mm256_loadu_ps(r[1] + c + 8);
        __m256 Y0 = _mm256_loadu_ps(r[K - 1] + c), Y1 = _mm256_loadu_ps(r[K - 1] + c + 8);
        __m256 a0 = _mm256_mul_ps(wk, _mm256_add_ps(_mm256_loadu_ps(r[0] + c), Y0));
        __m256 a1 = _mm256_mul_ps(wk, _mm256_add_ps(_mm256_loadu_ps(r[0] + c + 8), Y1));
        __m256 b0 = _mm256_mul_ps(wk, _mm256_add_ps(B0, _mm256_loadu_ps(r[K] + c)));
        __m256 b1 = _mm256_mul_ps(wk, _mm256_add_ps(B1, _mm256_loadu_ps(r[K] + c + 8)));
        for (size_t k = 1; k < half; k++) {
            /* row 0: r[k] (= B) + r[K-1-k]; row 1: r[k+1] + r[K-k] (= Y) */
            wk = _mm256_broadcast_ss(w + k);
            __m256 nB0 = _mm256_loadu_ps(r[k + 1] + c), nB1 = _mm256_loadu_ps(r[k + 1] + c + 8);
            __m256 nY0 = _mm256_loadu_ps(r[K - 1 - k] + c);
            __m256 nY1 = _mm256_loadu_ps(r[K - 1 - k] + c + 8);
            a0 = _mm256_fmadd_ps(wk, _mm256_add_ps(B0, nY0), a0);
            a1 = _mm256_fmadd_ps(wk, _mm256_add_ps(B1, nY1), a1);
            b0 = _mm256_fmadd_ps(wk, _mm256_add_ps(nB0, Y0), b0);
            b1 = _mm256_fmadd_ps(wk, _mm256_add_ps(nB1, Y1), b1);
            B0 = nB0;
            B1 = nB1;
            Y0 = nY0;
            Y1 = nY1;
        }
        if (K & 1) { /* the middle: r[half] (= B) for row 0, r[half+1] (= Y) for row 1 */
            wk = _mm256_broadcast_ss(w + half);
            a0 = _mm256_fmadd_ps(wk, B0, a0);
            a1 = _mm256_fmadd_ps(wk, B1, a1);
            b0 = _mm256_fmadd_ps(wk, Y0, b0);
            b1 = _mm256_fmadd_ps(wk, Y1, b1);
        }
        _mm256_storeu_ps(o0 + j, a0);
        _mm256_storeu_ps(o0 + j + 8, a1);
        _mm256_storeu_ps(o1 + j, b0);
        _mm256_storeu_ps(o1 + j + 8, b1);
    }
}

/* Dense: o0[j] = sum_{k1<K1, k2<K2} w[k1*K2 + k2] * r[k1][c + j + k2*C] and
 * o1 the same on r[k1 + 1] (two = 1; else o1 is not written): every loaded
 * vector feeds both output rows. n is a multiple of 32. */
CVCPU_AVX2 static void dense2(float *o0, float *o1, const float *const *r, size_t c, size_t n,
                              const float *w, size_t K1, size_t K2, size_t C, int two)
{
    for (size_t j = 0; j < n; j += 32, c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (size_t k1 = 0; k1 < K1 + (size_t)two; k1++) {
            const float *row = r[k1] + c;
            for (size_t k2 = 0; k2 < K2; k2++, row += C) {
                __m256 v0 = _mm256_loadu_ps(row), v1 = _mm256_loadu_ps(row + 8);
                __m256 v2 = _mm256_loadu_ps(row + 16), v3 = _mm256_loadu_ps(row + 24);
                if (k1 < K1) {
                    __m256 wa = _mm256_broadcast_ss(w + k1 * K2 + k2);
                    a0 = _mm256_fmadd_ps(wa, v0, a0);
                    a1 = _mm256_fmadd_ps(wa, v1, a1);
                    a2 = _mm256_fmadd_ps(wa, v2, a2);
                    a3 = _mm256_fmadd_ps(wa, v3, a3);
                }
                if (two && k1 > 0) {
                    __m256 wb = _mm256_broadcast_ss(w + (k1 - 1) * K2 + k2);
                    b0 = _mm256_fmadd_ps(wb, v0, b0);
                    b1 = _mm256_fmadd_ps(wb, v1, b1);
                    b2 = _mm256_fmadd_ps(wb, v2, b2);
                    b3 = _mm256_fmadd_ps(wb, v3, b3);
                }
            }
        }
        _mm256_storeu_ps(o0 + j, a0);
        _mm256_storeu_ps(o0 + j + 8, a1);
        _mm256_storeu_ps(o0 + j + 16, a2);
        _mm256_storeu_ps(o0 + j + 24, a3);
        if (two) {
            _mm256_storeu_ps(o1 + j, b0);
            _mm256_storeu_ps(o1 + j + 8, b1);
            _mm256_storeu_ps(o1 + j + 16, b2);
            _mm256_storeu_ps(o1 + j + 24, b3);
        }
    }
}

/* ---- drivers ------------------------------------------------------------ */

static int symmetric(const double *t, size_t K)
{
    for (size_t k = 0; k < K / 2; k++)
        if (t[k] != t[K - 1 - k])
            return 0;
    return 1;
}

/* Per-thread buffers. */
typedef struct {
    float *ext;     /* one extended input row (separable) */
    float *ring;    /* ring rows */
    float *cst;     /* a row of the CONSTANT mode's value */
    float *ob;      /* two output chunks */
    const float **rows, **slots;    /* rows of a vertical pass; ring slot -> row */
} bufs;

static void free_bufs(bufs *b, int n)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++) {
        free(b[t].ext);
        free(b[t].ring);
        free(b[t].cst);
        free(b[t].ob);
        free(b[t].rows);
    }
    free(b);
}

static size_t widest(const cvcpu_item *it, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (it[i].x1 - it[i].x0 > w)
            w = it[i].x1 - it[i].x0;
    return w;
}

/* Ring slot of extended row q (q >= qbase). */
static inline size_t slot_of(ptrdiff_t q, ptrdiff_t qbase, size_t R)
{
    return (size_t)(q - qbase) % R;
}

typedef struct {
    const cvcpu_img *g;
    float *tv, *th;         /* taps as float (a one-tap axis folded into the other) */
    size_t K1, K2;          /* as g's, but 1 where folded */
    int symv, symh;
    float cst;              /* the value of a row outside the input (CONSTANT) */
} sep_plan;

/* Horizontal pass of extended row q into dst (m32 columns); returns the
 * row to read for it (dst, or the constant row). */
static const float *sep_row(const sep_plan *s, const cvcpu_item *it, ptrdiff_t q, float *ext,
                            float *dst, const float *cst, size_t m32)
{
    const cvcpu_img *g = s->g;
    const char *row = cvcpu_img_row(g, q);
    if (!row)
        return cst;
    if (s->K2 == 1 && s->K1 > 1) { /* the row itself (its tap is in tv) */
        cvcpu_img_load_ext(g, row, it->x0, it->x1, dst);
        return dst;
    }
    cvcpu_img_load_ext(g, row, it->x0, it->x1, ext);
    if (s->symh)
        h_symmetric(dst, ext, m32, s->th, s->K2, g->C);
    else
        h_general(dst, ext, m32, s->th, s->K2, g->C);
    return dst;
}

static void sep_item(const sep_plan *s, const cvcpu_item *it, bufs *b)
{
    const cvcpu_img *g = s->g;
    const size_t C = g->C, K1 = s->K1, R = K1 + 1;
    const size_t m = (it->x1 - it->x0) * C, m32 = cvcpu_round32(m);
    const size_t oes = convolve_dtype_size(g->out_type);
    const size_t off = it->x0 * C * oes;
    float *ob0 = b->ob, *ob1 = b->ob + CHUNK;

    if (K1 == 1) { /* one pass: rows straight to the output */
        for (size_t y = it->y0; y < it->y1; y++) {
            const float *r = sep_row(s, it, (ptrdiff_t)y - (ptrdiff_t)g->lo1, b->ext, b->ring,
                                     b->cst, m32);
            cvcpu_img_store(g, cvcpu_img_out(g, y) + off, r, m);
        }
        return;
    }

    const float **rows = b->rows, **slotp = b->slots;
    const ptrdiff_t qbase = (ptrdiff_t)it->y0 - (ptrdiff_t)g->lo1;
    ptrdiff_t qnext = qbase;
    for (size_t y = it->y0; y < it->y1; y += 2) {
        const int two = y + 1 < it->y1;
        const ptrdiff_t q0 = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
        const ptrdiff_t qlast = q0 + (ptrdiff_t)K1 - 1 + two;
        for (; qnext <= qlast; qnext++) {
            size_t sl = slot_of(qnext, qbase, R);
            slotp[sl] = sep_row(s, it, qnext, b->ext, b->ring + sl * m32, b->cst, m32);
        }
        for (size_t k = 0; k < K1 + (size_t)two; k++)
            rows[k] = slotp[slot_of(q0 + (ptrdiff_t)k, qbase, R)];
        if (!two) /* a second row that is not stored: row 0 is summed as always */
            rows[K1] = rows[K1 - 1];
        char *d0 = cvcpu_img_out(g, y) + off;
        char *d1 = two ? cvcpu_img_out(g, y + 1) + off : NULL;
        for (size_t c = 0; c < m; c += CHUNK) {
            size_t len = m - c < CHUNK ? m - c : CHUNK, len16 = (len + 15) / 16 * 16;
            if (s->symv)
                v2_symmetric(ob0, ob1, rows, c, len16, s->tv, K1);
            else
                v2_general(ob0, ob1, rows, c, len16, s->tv, K1);
            cvcpu_img_store(g, d0 + c * oes, ob0, len);
            if (two)
                cvcpu_img_store(g, d1 + c * oes, ob1, len);
        }
    }
}

/* Per thread: R ring rows of `ring` floats, `ext` floats of extended row. */
static bufs *alloc_bufs(int threads, size_t R, size_t ring, size_t ext, size_t cst)
{
    bufs *b = calloc((size_t)threads, sizeof *b);
    if (!b)
        return NULL;
    for (int t = 0; t < threads; t++) {
        b[t].ext = ext ? cvcpu_img_alloc(ext) : NULL;
        b[t].ring = cvcpu_img_alloc(R * ring);
        b[t].cst = cvcpu_img_alloc(cst);
        b[t].ob = cvcpu_img_alloc(2 * CHUNK);
        b[t].rows = malloc(2 * (R + 1) * sizeof *b[t].rows);
        b[t].slots = b[t].rows ? b[t].rows + R + 1 : NULL;
        if ((ext && !b[t].ext) || !b[t].ring || !b[t].cst || !b[t].ob || !b[t].rows) {
            free_bufs(b, threads);
            return NULL;
        }
    }
    return b;
}

static float *float_taps(const double *t, size_t K, double scale)
{
    float *f = malloc((K ? K : 1) * sizeof *f);
    if (f)
        for (size_t k = 0; k < K; k++)
            f[k] = (float)(t[k] * scale);
    return f;
}

convolve_status cvcpu_img_separable(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    sep_plan s;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.K1 = g->K1;
    s.K2 = g->K2;
    /* a one-tap axis is folded into the other's taps */
    double sv = 1.0, sh = 1.0;
    if (s.K1 == 1)
        sh = p->taps[1][0];
    else if (s.K2 == 1)
        sv = p->taps[2][0];
    s.tv = float_taps(p->taps[1], s.K1, sv);
    s.th = float_taps(p->taps[2], s.K2, sh);
    s.symv = s.K1 > 1 && symmetric(p->taps[1], s.K1);
    s.symh = symmetric(p->taps[2], s.K2);
    double hsum = 0;
    for (size_t k = 0; k < s.K2; k++)
        hsum += p->taps[2][k] * sh;
    if (s.K2 == 1 && s.K1 > 1)
        hsum = 1.0; /* rows are the input itself */
    s.cst = (float)(p->cval * hsum);

    cvcpu_item *items = NULL;
    size_t cols = s.K1 > 1 ? RING_FLOATS / (s.K1 + 2) : 8192;
    size_t nitems = cvcpu_img_items(g, cols, &items);
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    bufs *b = NULL;
    if (nitems && s.tv && s.th) {
        size_t m32 = cvcpu_round32(widest(items, nitems) * g->C);
        size_t ext = m32 + (g->K2 - 1) * g->C + 32;
        size_t slots = s.K1 > 1 ? s.K1 + 1 : 1;
        int raw = s.K2 == 1 && s.K1 > 1;
        b = alloc_bufs(g->threads, slots, raw ? ext : m32, raw ? 0 : ext, m32);
    }
    if (b) {
        for (int t = 0; t < g->threads; t++)
            for (size_t i = 0; i < cvcpu_round32(widest(items, nitems) * g->C); i++)
                b[t].cst[i] = s.cst;
        const ptrdiff_t n = (ptrdiff_t)nitems;
        CVCPU_OMP(omp parallel num_threads(g->threads))
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            CVCPU_OMP(omp for schedule(dynamic, 1))
            for (ptrdiff_t i = 0; i < n; i++)
                sep_item(&s, &items[i], &b[t]);
        }
        st = CONVOLVE_OK;
    }
    free_bufs(b, g->threads);
    free(items);
    free(s.tv);
    free(s.th);
    return st;
}

/* ---- dense --------------------------------------------------------------- */

static void dense_item(const cvcpu_img *g, const float *w, const cvcpu_item *it, bufs *b,
                       size_t stride)
{
    const size_t C = g->C, K1 = g->K1, K2 = g->K2, R = K1 + 1;
    const size_t m = (it->x1 - it->x0) * C;
    const size_t oes = convolve_dtype_size(g->out_type);
    const size_t off = it->x0 * C * oes;
    float *ob0 = b->ob, *ob1 = b->ob + CHUNK;
    const float *ptr[CVCPU_IMAGE_DENSE_MAX + 1], *slotp[CVCPU_IMAGE_DENSE_MAX + 1];
    const ptrdiff_t qbase = (ptrdiff_t)it->y0 - (ptrdiff_t)g->lo1;
    ptrdiff_t qnext = qbase;
    for (size_t y = it->y0; y < it->y1; y += 2) {
        const int two = y + 1 < it->y1;
        const ptrdiff_t q0 = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
        const ptrdiff_t qlast = q0 + (ptrdiff_t)K1 - 1 + two;
        for (; qnext <= qlast; qnext++) {
            size_t sl = slot_of(qnext, qbase, R);
            const char *row = cvcpu_img_row(g, qnext);
            if (row) {
                cvcpu_img_load_ext(g, row, it->x0, it->x1, b->ring + sl * stride);
                slotp[sl] = b->ring + sl * stride;
            } else {
                slotp[sl] = b->cst;
            }
        }
        for (size_t k = 0; k < K1 + (size_t)two; k++)
            ptr[k] = slotp[slot_of(q0 + (ptrdiff_t)k, qbase, R)];
        char *d0 = cvcpu_img_out(g, y) + off;
        char *d1 = two ? cvcpu_img_out(g, y + 1) + off : NULL;
        for (size_t c = 0; c < m; c += CHUNK) {
            size_t len = m - c < CHUNK ? m - c : CHUNK;
            dense2(ob0, ob1, ptr, c, cvcpu_round32(len), w, K1, K2, C, two);
            cvcpu_img_store(g, d0 + c * oes, ob0, len);
            if (two)
                cvcpu_img_store(g, d1 + c * oes, ob1, len);
        }
    }
}

convolve_status cvcpu_img_dense(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    float *w = float_taps(p->weights, p->kcount, 1.0);
    cvcpu_item *items = NULL;
    size_t nitems = cvcpu_img_items(g, RING_FLOATS / (g->K1 + 2), &items);
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    bufs *b = NULL;
    size_t stride = 0;
    if (nitems && w) {
        stride = cvcpu_round32(widest(items, nitems) * g->C) + (g->K2 - 1) * g->C + 32;
        b = alloc_bufs(g->threads, g->K1 + 1, stride, 0, stride);
    }
    if (b) {
        for (int t = 0; t < g->threads; t++)
            for (size_t i = 0; i < stride; i++)
                b[t].cst[i] = (float)p->cval;
        const ptrdiff_t n = (ptrdiff_t)nitems;
        CVCPU_OMP(omp parallel num_threads(g->threads))
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            CVCPU_OMP(omp for schedule(dynamic, 1))
            for (ptrdiff_t i = 0; i < n; i++)
                dense_item(g, w, &items[i], &b[t], stride);
        }
        st = CONVOLVE_OK;
    }
    free_bufs(b, g->threads);
    free(items);
    free(w);
    return st;
}

#else /* not x86-64: cvcpu_image_check refuses every problem */

convolve_status cvcpu_img_separable(const cvcpu_img *g)
{
    (void)g;
    return CONVOLVE_ERROR_INTERNAL;
}

convolve_status cvcpu_img_dense(const cvcpu_img *g)
{
    (void)g;
    return CONVOLVE_ERROR_INTERNAL;
}

#endif

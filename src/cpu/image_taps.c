/*
 * image_taps.c - the image strategy's float paths (image.h), on rows of
 * interleaved channels with horizontal taps C elements apart: separable
 * filters of up to 9 rows (vertical pass on the input rows, four output
 * rows at a time, then the horizontal pass on pieces of row in L1,
 * converted and stored as it goes), taller separable filters (horizontal
 * pass per input row into a ring of float rows, then the vertical pass on
 * the ring, symmetric taps folded) and small dense filters (a ring of
 * converted input rows, two output rows per pass). AVX2 + FMA kernels, and
 * AVX-512 ones for the ring path, which then serves every separable filter.
 */
#include "image.h"
#include "fast.h"

#include <stdlib.h>
#include <string.h>

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>


/* Floats per thread for the dense path's ring of rows (in L2). */
#define CVCPU_RING_FLOATS ((size_t)64 << 10)
/* Bytes per thread for the K1 + 1 input rows of a tile (in L2). */
#define CVCPU_ROWS_BYTES ((size_t)256 << 10)
/* Filters of up to this many rows read the input rows in the vertical pass
 * (converting each element once per tap); taller ones convert each input
 * row once into a ring of float rows. */
#define CVCPU_DIRECT_ROWS 9
/* Elements per piece of a row between the vertical and horizontal passes
 * (stays in L1). */
#define HCHUNK 2048
/* The ring path prefetches the input row this many rows ahead of the one
 * it converts (Zen 5, RGB 4096^2 uint8, K = 5, best of 8: 8.46 ms without,
 * 7.41 ms at 2 rows; 1 to 8 rows within noise of 2) */
#define CVCPU_PREFETCH_ROWS 2

/* ---- separable kernels ---------------------------------------------------- */

/* Row element types of the vertical pass: the input's, or rows converted to float. */
enum { ROW_U8, ROW_U16, ROW_F32 };

/* 8 elements at element e of a row of type ty, as float. */
CVCPU_AVX2 static CVCPU_INLINE __m256 ld8(const char *row, size_t e, int ty)
{
    if (ty == ROW_F32)
        return _mm256_loadu_ps((const float *)(const void *)row + e);
    if (ty == ROW_U16)
        return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(
            _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * e))));
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(row + e))));
}

/* Rows of output the short vertical pass computes at once. */
#define VROWS 4

/*
 * The vertical pass of short filters (K <= 9 rows) over the elements
 * [e0, e1), VROWS output rows at once: o[j][e - e0] = c[j] + sum_{i<K}
 * w[i] * r[j + i][e] for j < VROWS, from the K + VROWS - 1 input rows r
 * (rows of cval in CONSTANT mode are rows of zeros here, their share in
 * c[j]), 8 columns at a time: each row is loaded and converted once and
 * feeds every output row it belongs to; taps in registers, the sum in the
 * same order (i ascending) for every row whichever j it is. Up to 7 values
 * more are written past e1 - e0. The last piece of a row is read through
 * copies in `tail` ((K + VROWS) * 32 bytes), never past the row's end.
 */
CVCPU_AVX2 static CVCPU_INLINE void vrange4_t(const char *const *restrict r, size_t e0, size_t e1,
                                              const float *restrict w, const size_t K,
                                              const int ty, const float *restrict c,
                                              float *const *restrict o, char *tail)
{
    __m256 wk[9];
    for (size_t i = 0; i < K; i++)
        wk[i] = _mm256_broadcast_ss(w + i);
    const __m256 c0 = _mm256_set1_ps(c[0]), c1 = _mm256_set1_ps(c[1]);
    const __m256 c2 = _mm256_set1_ps(c[2]), c3 = _mm256_set1_ps(c[3]);
    const char *rr[9 + VROWS];
    for (size_t k = 0; k < K + VROWS - 1; k++)
        rr[k] = r[k];
    for (size_t e = e0; e < e1; e += 8) {
        size_t at = e;
        if (e + 8 > e1) { /* the last piece: each row's elements copied into a zeroed block */
            const size_t es = ty == ROW_U16 ? 2 : 1;
            for (size_t k = 0; k < K + VROWS - 1; k++) {
                memset(tail + 32 * k, 0, 32);
                memcpy(tail + 32 * k, r[k] + e * es, (e1 - e) * es);
                rr[k] = tail + 32 * k;
            }
            at = 0;
        }
        __m256 a[VROWS] = {c0, c1, c2, c3};
        for (size_t k = 0; k < K + VROWS - 1; k++) {
            const __m256 v = ld8(rr[k], at, ty);
            for (size_t j = 0; j < VROWS; j++)
                if (k >= j && k - j < K)
                    a[j] = _mm256_fmadd_ps(wk[k - j], v, a[j]);
        }
        for (size_t j = 0; j < VROWS; j++)
            _mm256_storeu_ps(o[j] + (e - e0), a[j]);
    }
}

CVCPU_AVX2 static void vrange4(const char *const *r, size_t e0, size_t e1, const float *w,
                               size_t K, int ty, const float *c, float *const *o, char *tail)
{
#define CVCPU_VR(KK)                                                                       \
    do {                                                                                 \
        if (ty == ROW_U8)                                                                \
            vrange4_t(r, e0, e1, w, KK, ROW_U8, c, o, tail);                         \
        else                                                                             \
            vrange4_t(r, e0, e1, w, KK, ROW_U16, c, o, tail);                        \
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
                                            const float *restrict w, size_t K, size_t C,
                                            int sym, int t)
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
                a0 = _mm256_fmadd_ps(wk, _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(q)),
                                     a0);
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
#define CVCPU_HP_TYPE(T)                                                                   \
    do {                                                                                 \
        if (K == 3)                                                                      \
            CVCPU_HP(3, 0, T);                                                           \
        else if (K == 5)                                                                 \
            CVCPU_HP(5, 0, T);                                                           \
        else if (K == 7)                                                                 \
            CVCPU_HP(7, 0, T);                                                           \
        else if (K == 9)                                                                 \
            CVCPU_HP(9, 0, T);                                                           \
        else if (K < 9 || !sym)                                                          \
            CVCPU_HP(K, 0, T);                                                           \
        else                                                                             \
            CVCPU_HP(K, 1, T);                                                           \
    } while (0)
    switch (g->out_type) {
    case CONVOLVE_UINT8: CVCPU_HP_TYPE(CVCPU_OUT_U8); break;
    case CONVOLVE_UINT16: CVCPU_HP_TYPE(CVCPU_OUT_U16); break;
    default: CVCPU_HP_TYPE(CVCPU_OUT_F32); break;
    }
#undef CVCPU_HP_TYPE
#undef CVCPU_HP
}

/* Dense, 16 columns from c of two rows: a = sum_{k1<K1, k2<K2}
 * w[k1*K2 + k2] * r[k1][c + k2*C], b the same on r[k1 + 1] (two = 1; else
 * b is not computed): every loaded vector feeds both rows. */
CVCPU_AVX2 static CVCPU_INLINE void dcol(const float *const *r, size_t c, const float *w,
                                         size_t K1, size_t K2, size_t C, int two, __m256 *a0,
                                         __m256 *a1, __m256 *b0, __m256 *b1)
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
                                            const float *const *r, size_t m, const float *w,
                                            int t)
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
    switch (g->out_type) {
    case CONVOLVE_UINT8: dpass_t(g, d0, d1, r, m, w, CVCPU_OUT_U8); break;
    case CONVOLVE_UINT16: dpass_t(g, d0, d1, r, m, w, CVCPU_OUT_U16); break;
    default: dpass_t(g, d0, d1, r, m, w, CVCPU_OUT_F32); break;
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
    float *ext;                     /* a piece of extended input row */
    float *ring;                    /* ring rows */
    float *cst;                     /* a row of the CONSTANT mode's value */
    const float **rows, **slots;    /* rows of a vertical pass; ring slot -> row */
    void *block;                    /* (b[0]) the block holding every thread's buffers */
} bufs;

/* The buffers' block goes back to the plan's scratch. */
static void free_bufs(const cvcpu_img *g, bufs *b)
{
    if (!b)
        return;
    cvcpu_img_scratch_give(g->scratch, b[0].block);
    free(b);
}

/* Floats of a row buffer of n values (as cvcpu_img_alloc), in bytes. */
static size_t buf_bytes(size_t n)
{
    return (cvcpu_round32(n) + 32) * sizeof(float);
}

/* Per thread: R ring rows of `ring` floats, `ext` floats of extended row,
 * a constant row of `cst` floats of value v; all in one block from the
 * plan's scratch (b[0].block). */
static bufs *alloc_bufs(const cvcpu_img *g, size_t R, size_t ring, size_t ext, size_t cst,
                        float v)
{
    const int threads = g->threads;
    bufs *b = calloc((size_t)threads, sizeof *b);
    if (!b)
        return NULL;
    size_t rows = (2 * (R + 1) * sizeof(const float *) + 63) / 64 * 64;
    size_t each = (ext ? buf_bytes(ext) : 0) + buf_bytes(R * ring) + buf_bytes(cst) + rows;
    char *block = cvcpu_img_scratch_take(g->scratch, each * (size_t)threads);
    if (!block) {
        free(b);
        return NULL;
    }
    b[0].block = block;
    for (int t = 0; t < threads; t++) {
        char *q = block + each * (size_t)t;
        b[t].ext = ext ? (float *)(void *)q : NULL;
        q += ext ? buf_bytes(ext) : 0;
        b[t].ring = (float *)(void *)q;
        q += buf_bytes(R * ring);
        b[t].cst = (float *)(void *)q;
        q += buf_bytes(cst);
        b[t].rows = (const float **)(void *)q;
        b[t].slots = b[t].rows + R + 1;
        for (size_t i = 0; i < cst; i++)
            b[t].cst[i] = v;
    }
    return b;
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

static float *float_taps(const double *t, size_t K, double scale)
{
    float *f = malloc((K ? K : 1) * sizeof *f);
    if (f)
        for (size_t k = 0; k < K; k++)
            f[k] = (float)(t[k] * scale);
    return f;
}

/* Per-thread buffers of the short separable pass. */
typedef struct {
    float *e[VROWS];        /* a piece of each output row after the vertical pass, extended */
    float *h[2][VROWS];     /* [side][row]: the vertical pass at the source pixels of the
                               extension past the row's left and right ends */
    const char **rows;      /* K1 + VROWS - 1 input rows */
    char *tail;             /* (K1 + VROWS) * 32 bytes */
} vbufs;

static void free_vbufs(vbufs *b, int n)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < VROWS; j++) {
            free(b[t].e[j]);
            free(b[t].h[0][j]);
            free(b[t].h[1][j]);
        }
        free(b[t].rows);
        free(b[t].tail);
    }
    free(b);
}

/* ext, halo: floats per row piece and per extension. */
static vbufs *alloc_vbufs(int threads, size_t ext, size_t halo, size_t K1)
{
    vbufs *b = calloc((size_t)threads, sizeof *b);
    if (!b)
        return NULL;
    for (int t = 0; t < threads; t++) {
        int ok = 1;
        for (int j = 0; j < VROWS; j++) {
            ok &= (b[t].e[j] = cvcpu_img_alloc(ext)) != NULL;
            ok &= (b[t].h[0][j] = cvcpu_img_alloc(halo)) != NULL;
            ok &= (b[t].h[1][j] = cvcpu_img_alloc(halo)) != NULL;
        }
        b[t].rows = malloc((K1 + VROWS) * sizeof *b[t].rows);
        b[t].tail = malloc((K1 + VROWS) * 32);
        if (!ok || !b[t].rows || !b[t].tail) {
            free_vbufs(b, threads);
            return NULL;
        }
    }
    return b;
}

typedef struct {
    const cvcpu_img *g;
    float *tv, *th;         /* taps as float */
    int symv, symh;
    float cst;              /* CONSTANT: the vertical pass past the row's ends, cval * sum(tv) */
    size_t piece;           /* output pixels per piece of a row */
    const char *zeros;      /* a row of zeros: the short pass's rows of cval */
    int avx512;             /* the ring path's AVX-512 kernels */
} sep_plan;

/* Where the extension of a tile past one end of the row comes from: the
 * extended pixels [xa, xb) (outside the row), their source pixels in
 * [s0, s1) (none in CONSTANT mode). */
typedef struct {
    ptrdiff_t xa, xb, s0, s1;
} side;

static side side_of(const cvcpu_img *g, ptrdiff_t xa, ptrdiff_t xb)
{
    side sd = {xa, xb, 0, 0};
    if (xa >= xb || g->p->mode == CVI_MODE_CONSTANT)
        return sd;
    sd.s0 = (ptrdiff_t)g->W;
    for (ptrdiff_t x = xa; x < xb; x++) {
        ptrdiff_t s = cvi_boundary_index(x, (ptrdiff_t)g->W, g->p->mode);
        sd.s0 = s < sd.s0 ? s : sd.s0;
        sd.s1 = s + 1 > sd.s1 ? s + 1 : sd.s1;
    }
    return sd;
}

/* Output rows out[0..VROWS) (NULL: not stored) of tile it: the vertical
 * pass of rows r[0..K1 + VROWS - 1) piece by piece, extended past the
 * row's ends, then the horizontal pass into the output. c: the CONSTANT
 * rows' share (see vrange4). */
static void sep_rows(const sep_plan *s, const cvcpu_item *it, const side sd[2], vbufs *b,
                     const char *const *r, const float *c, char *const *out)
{
    const cvcpu_img *g = s->g;
    const int ty = g->in16 ? ROW_U16 : ROW_U8;
    const size_t C = g->C, K1 = g->K1, K2 = g->K2;
    const ptrdiff_t W = (ptrdiff_t)g->W, lo2 = (ptrdiff_t)g->lo2;
    const ptrdiff_t hi2 = (ptrdiff_t)(K2 - 1) - lo2;
    const size_t oes = convolve_dtype_size(g->out_type);
    /* the vertical pass at the extension's source pixels */
    for (int i = 0; i < 2; i++)
        if (sd[i].s0 < sd[i].s1)
            vrange4(r, (size_t)sd[i].s0 * C, (size_t)sd[i].s1 * C, s->tv, K1, ty, c, b->h[i],
                    b->tail);
    for (size_t p = it->x0; p < it->x1; p += s->piece) {
        const size_t p1 = p + s->piece < it->x1 ? p + s->piece : it->x1;
        const ptrdiff_t xa = (ptrdiff_t)p - lo2, xb = (ptrdiff_t)p1 + hi2;
        const ptrdiff_t ia = xa > 0 ? xa : 0, ib = xb < W ? xb : W;
        float *o[VROWS];
        for (int j = 0; j < VROWS; j++)
            o[j] = b->e[j] + (size_t)(ia - xa) * C;
        vrange4(r, (size_t)ia * C, (size_t)ib * C, s->tv, K1, ty, c, o, b->tail);
        /* the extension: copies of the source pixels, or the constant */
        for (int i = 0; i < 2; i++) {
            const ptrdiff_t lo = i ? (ib > xa ? ib : xa) : xa, hi = i ? xb : (ia < xb ? ia : xb);
            for (ptrdiff_t x = lo; x < hi; x++) {
                const ptrdiff_t src = sd[i].s0 < sd[i].s1 ? cvi_boundary_index(x, W, g->p->mode)
                                                          : -1;
                for (int j = 0; j < VROWS; j++) {
                    float *d = b->e[j] + (size_t)(x - xa) * C;
                    if (src >= 0)
                        memcpy(d, b->h[i][j] + (size_t)(src - sd[i].s0) * C, C * sizeof *d);
                    else
                        for (size_t ch = 0; ch < C; ch++)
                            d[ch] = s->cst;
                }
            }
        }
        for (int j = 0; j < VROWS; j++)
            if (out[j])
                hpass(g, out[j] + p * C * oes, b->e[j], (p1 - p) * C, s->th, K2, s->symh);
    }
}

static void sep_item(const sep_plan *s, const cvcpu_item *it, vbufs *b)
{
    const cvcpu_img *g = s->g;
    const size_t K1 = g->K1;
    const ptrdiff_t lo2 = (ptrdiff_t)g->lo2, hi2 = (ptrdiff_t)(g->K2 - 1) - lo2;
    const ptrdiff_t W = (ptrdiff_t)g->W;
    side sd[2];
    const ptrdiff_t xa = (ptrdiff_t)it->x0 - lo2, xb = (ptrdiff_t)it->x1 + hi2;
    sd[0] = side_of(g, xa, xb < 0 ? xb : 0);
    sd[1] = side_of(g, xa > W ? xa : W, xb);
    const char **r = b->rows;
    for (size_t y = it->y0; y < it->y1; y += VROWS) {
        const ptrdiff_t q0 = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
        char *out[VROWS];
        float c[VROWS];
        for (size_t j = 0; j < VROWS; j++)
            out[j] = y + j < it->y1 ? cvcpu_img_out(g, y + j) : NULL;
        /* rows outside the input (CONSTANT) are zeros, cval times their taps the share */
        for (size_t k = 0; k < K1 + VROWS - 1; k++) {
            const char *row = cvcpu_img_row(g, q0 + (ptrdiff_t)k);
            r[k] = row ? row : s->zeros;
        }
        for (size_t j = 0; j < VROWS; j++) {
            double sh = 0;
            for (size_t i = 0; i < K1; i++)
                if (!cvcpu_img_row(g, q0 + (ptrdiff_t)(j + i)))
                    sh += g->p->taps[1][i];
            c[j] = (float)(g->p->cval * sh);
        }
        sep_rows(s, it, sd, b, r, c, out);
    }
    cvcpu_img_store_done(g);
}

/* ---- separable, taller filters: horizontal pass first ----------------- */

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
                                           const float *restrict w, size_t K, int sym,
                                           __m256 x[4], __m256 y[4])
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
                wk, _mm256_add_ps(_mm256_loadu_ps(a1 + 8 * i), _mm256_loadu_ps(b1 + 8 * i)),
                y[i]);
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

CVCPU_AVX2 static void vemit(const cvcpu_img *g, char *d0, char *d1, const char *const *r,
                             size_t m, const float *w, size_t K, int sym)
{
#define CVCPU_VEMIT(SYM, T) vemit_t(g, d0, d1, r, m, w, K, SYM, T)
    switch (g->out_type) {
    case CONVOLVE_UINT8: sym ? CVCPU_VEMIT(1, CVCPU_OUT_U8) : CVCPU_VEMIT(0, CVCPU_OUT_U8); break;
    case CONVOLVE_UINT16: sym ? CVCPU_VEMIT(1, CVCPU_OUT_U16) : CVCPU_VEMIT(0, CVCPU_OUT_U16); break;
    default: sym ? CVCPU_VEMIT(1, CVCPU_OUT_F32) : CVCPU_VEMIT(0, CVCPU_OUT_F32); break;
    }
#undef CVCPU_VEMIT
}

/* ---- AVX-512 kernels of the ring path ----------------------------------- */

/* Output rows the AVX-512 vertical pass computes at once. */
#define VROWS512 8

/* Stores 16 floats as output kind t at d (rounded, saturated and NaN to 0
 * as cvcpu_emit16: max(v, 0) gives 0 for NaN). */
CVCPU_AVX512 static CVCPU_INLINE __m512i cvt512(__m512 x, float hi)
{
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(x, _mm512_setzero_ps()),
                                            _mm512_set1_ps(hi)));
}

/* Stores 64 floats (x[0..3]) as output kind t at d. */
CVCPU_AVX512 static CVCPU_INLINE void emit64_512(char *d, const __m512 *x, int t, int nt)
{
    if (t == CVCPU_OUT_U8) {
        __m128i q[4];
        for (int i = 0; i < 4; i++)
            q[i] = _mm512_cvtepi32_epi8(cvt512(x[i], 255.0f));
        if (nt && !((uintptr_t)d & 15) && ((uintptr_t)d & 63)) { /* rows 16-byte aligned */
            for (int i = 0; i < 4; i++)
                _mm_stream_si128((__m128i *)(void *)(d + 16 * i), q[i]);
            return;
        }
        __m512i v = _mm512_castsi128_si512(q[0]);
        v = _mm512_inserti32x4(v, q[1], 1);
        v = _mm512_inserti32x4(v, q[2], 2);
        v = _mm512_inserti32x4(v, q[3], 3);
        if (nt && !((uintptr_t)d & 63))
            _mm512_stream_si512((void *)d, v);
        else
            _mm512_storeu_si512((void *)d, v);
    } else if (t == CVCPU_OUT_U16) {
        for (int i = 0; i < 4; i += 2) {
            __m512i v = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(cvt512(x[i], 65535.0f)));
            v = _mm512_inserti64x4(v, _mm512_cvtepi32_epi16(cvt512(x[i + 1], 65535.0f)), 1);
            char *e = d + 64 * (i / 2);
            if (nt && !((uintptr_t)e & 63))
                _mm512_stream_si512((void *)e, v);
            else
                _mm512_storeu_si512((void *)e, v);
        }
    } else {
        for (int i = 0; i < 4; i++) {
            float *e = (float *)(void *)d + 16 * i;
            if (nt && !((uintptr_t)e & 63))
                _mm512_stream_ps(e, x[i]);
            else
                _mm512_storeu_ps(e, x[i]);
        }
    }
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
#define CVCPU_SH(S)                                                                        \
    case S:                                                                              \
        for (int i = 0; i < NV; i++)                                                     \
            out[i] = _mm512_castsi512_ps(_mm512_alignr_epi32(v[i + 1], v[i], S));        \
        break;
        CVCPU_SH(1) CVCPU_SH(2) CVCPU_SH(3) CVCPU_SH(4) CVCPU_SH(5) CVCPU_SH(6) CVCPU_SH(7)
        CVCPU_SH(8) CVCPU_SH(9) CVCPU_SH(10) CVCPU_SH(11) CVCPU_SH(12) CVCPU_SH(13)
        CVCPU_SH(14) default: CVCPU_SH(15)
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

CVCPU_AVX512 static void hrow512(float *dst, const float *src, size_t n, const float *w,
                                 size_t K, size_t C, int sym)
{
    /* short symmetric filters of 1 to 4 channels: every offset known at
     * compile time, so each aligned vector is loaded once for all taps */
#define CVCPU_HR(KK, CC) hrow512_t(dst, src, n, w, KK, CC, 1)
#define CVCPU_HR_C(KK)                                                                     \
    switch (C) {                                                                         \
    case 1: CVCPU_HR(KK, 1); return;                                                     \
    case 2: CVCPU_HR(KK, 2); return;                                                     \
    case 3: CVCPU_HR(KK, 3); return;                                                     \
    case 4: CVCPU_HR(KK, 4); return;                                                     \
    default: CVCPU_HR(KK, C); return;                                                    \
    }
    if (sym && !CVCPU_SANITIZED) {
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
                                                 const float *const *r, size_t m,
                                                 const float *w, size_t K, int sym, int t)
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
                                                  const float *const *r, size_t m,
                                                  const float *w, const size_t K, const int t)
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
#define CVCPU_VE_K(T)                                                                      \
    do {                                                                                 \
        if (!sym)                                                                        \
            CVCPU_VE(K, 0, T);                                                           \
        else if (all && K == 3)                                                          \
            CVCPU_VS(3, T);                                                              \
        else if (all && K == 5)                                                          \
            CVCPU_VS(5, T);                                                              \
        else if (all && K == 7)                                                          \
            CVCPU_VS(7, T);                                                              \
        else if (all && K == 9)                                                          \
            CVCPU_VS(9, T);                                                              \
        else if (K == 5)                                                                 \
            CVCPU_VE(5, 1, T);                                                           \
        else if (K == 9)                                                                 \
            CVCPU_VE(9, 1, T);                                                           \
        else                                                                             \
            CVCPU_VE(K, 1, T);                                                           \
    } while (0)
    /* every output row stored: the short kernels (not under ASan, as the
     * other compile-time specialisations) */
    int all = !CVCPU_SANITIZED;
    for (int j = 0; j < VROWS512; j++)
        all &= d[j] != NULL;
    switch (g->out_type) {
    case CONVOLVE_UINT8: CVCPU_VE_K(CVCPU_OUT_U8); break;
    case CONVOLVE_UINT16: CVCPU_VE_K(CVCPU_OUT_U16); break;
    default: CVCPU_VE_K(CVCPU_OUT_F32); break;
    }
#undef CVCPU_VE_K
#undef CVCPU_VS
#undef CVCPU_VE
}

/* Taller filters: each input row of the tile is converted (in pieces that
 * stay in L1) and filtered along the row once, into a ring of K1 + 1 rows
 * in L2 (rows outside the input in CONSTANT mode: one row of
 * cval * sum(th)); the vertical pass reads the ring, two output rows at a
 * time. No column is filtered twice, whatever the tile's width. */
static void tall_item(const sep_plan *s, const cvcpu_item *it, bufs *b, size_t stride)
{
    const cvcpu_img *g = s->g;
    const size_t C = g->C, K1 = g->K1, nr = s->avx512 ? VROWS512 : 2, R = K1 + nr;
    const size_t m = (it->x1 - it->x0) * C;
    const size_t off = it->x0 * C * convolve_dtype_size(g->out_type);
    const char **rows = (const char **)b->rows, **slots = (const char **)b->slots;
    const ptrdiff_t qbase = (ptrdiff_t)it->y0 - (ptrdiff_t)g->lo1;
    ptrdiff_t qnext = qbase;
    for (size_t y = it->y0; y < it->y1; y += nr) {
        const size_t ny = it->y1 - y < nr ? it->y1 - y : nr; /* rows stored */
        const ptrdiff_t q0 = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
        for (; qnext <= q0 + (ptrdiff_t)(K1 + ny) - 2; qnext++) {
            const size_t sl = slot_of(qnext, qbase, R);
            const char *row = cvcpu_img_row(g, qnext);
            float *d = b->ring + sl * stride;
            slots[sl] = (const char *)(const void *)(row ? d : b->cst);
            {
                const char *ahead = cvcpu_img_row(g, qnext + CVCPU_PREFETCH_ROWS);
                if (ahead) {
                    const size_t es = g->in16 ? 2 : 1;
                    const char *a0 = ahead + it->x0 * C * es, *a1 = ahead + it->x1 * C * es;
                    for (const char *pf = a0; pf < a1; pf += 64)
                        _mm_prefetch(pf, _MM_HINT_T0);
                }
            }
            for (size_t x = it->x0; row && x < it->x1; x += s->piece) {
                size_t x1 = x + s->piece < it->x1 ? x + s->piece : it->x1;
                cvcpu_img_load_ext(g, row, x, x1, b->ext);
                size_t n = cvcpu_round32((x1 - x) * C);
                if (s->avx512)
                    hrow512(d + (x - it->x0) * C, b->ext, n, s->th, g->K2, C, s->symh);
                else
                    hrow(g, d + (x - it->x0) * C, b->ext, n, s->th, g->K2, s->symh);
            }
        }
        /* rows past the last one read are not stored: any present row will do */
        for (size_t k = 0; k < K1 + nr - 1; k++)
            rows[k] = slots[slot_of(q0 + (ptrdiff_t)(k < K1 + ny - 1 ? k : K1 + ny - 2), qbase, R)];
        char *d[VROWS512];
        for (size_t j = 0; j < nr; j++)
            d[j] = j < ny ? cvcpu_img_out(g, y + j) + off : NULL;
        if (s->avx512)
            vemit512(g, d, (const float *const *)(const void *)rows, m, s->tv, K1, s->symv);
        else
            vemit(g, d[0], d[1], rows, m, s->tv, K1, s->symv);
    }
    cvcpu_img_store_done(g);
}

convolve_status cvcpu_img_separable(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    const size_t C = g->C, K1 = g->K1, K2 = g->K2;
    sep_plan s;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.tv = float_taps(p->taps[1], K1, 1.0);
    s.th = float_taps(p->taps[2], K2, 1.0);
    s.symv = K1 > 1 && symmetric(p->taps[1], K1);
    s.symh = symmetric(p->taps[2], K2);
    double vsum = 0, hsum = 0;
    for (size_t k = 0; k < K1; k++)
        vsum += p->taps[1][k];
    for (size_t k = 0; k < K2; k++)
        hsum += p->taps[2][k];
    s.cst = (float)(p->cval * vsum);
    s.avx512 = g->avx512;
    /* AVX-512: the ring path for all (its kernels beat the short path's) */
    const int tall = K1 > CVCPU_DIRECT_ROWS || s.avx512;
    const size_t nr = s.avx512 ? VROWS512 : 2; /* output rows per vertical pass */
    /* pieces of a row of about HCHUNK elements, long next to the filter's
     * halo (multiples of 32 pixels where the horizontal pass comes first) */
    s.piece = HCHUNK / C;
    if (s.piece < 8 * (K2 - 1))
        s.piece = 8 * (K2 - 1);
    s.piece = (s.piece + 31) / 32 * 32; /* rows of 32-element stores stay aligned */
    if (s.piece < 32)
        s.piece = 32;

    /* tiles: the K1 + 1 rows the vertical pass reads stay in L2 */
    size_t es = tall ? sizeof(float) : g->in16 ? 2 : 1;
    cvcpu_item *items = NULL;
    size_t nitems = cvcpu_img_items(g, CVCPU_ROWS_BYTES / ((K1 + nr) * es), &items);
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    if (nitems && s.tv && s.th) {
        size_t wide = widest(items, nitems);
        size_t piece = s.piece < wide ? s.piece : wide;
        size_t ext = cvcpu_round32(piece * C) + (K2 - 1) * C + 64;
        if (tall) {
            /* an odd number of cache lines from ring row to ring row: they do
             * not all fall into the same L1 sets */
            size_t stride = cvcpu_odd_lines(cvcpu_round32(wide * C) + 32);
            bufs *b = alloc_bufs(g, K1 + nr, stride, ext, stride,
                                 (float)(p->cval * hsum));
            if (b) {
                CVCPU_RUN_ITEMS(g, nitems, tall_item(&s, &items[i], &b[t], stride));
                st = CONVOLVE_OK;
            }
            free_bufs(g, b);
        } else {
            size_t span = K2 + 1 < g->W ? K2 + 1 : g->W;
            vbufs *b = alloc_vbufs(g->threads, ext, span * C + 64, K1);
            char *zeros = calloc(g->n + 32, g->in16 ? 2 : 1);
            s.zeros = zeros;
            if (b && zeros) {
                CVCPU_RUN_ITEMS(g, nitems, sep_item(&s, &items[i], &b[t]));
                st = CONVOLVE_OK;
            }
            free(zeros);
            free_vbufs(b, g->threads);
        }
    }
    free(items);
    free(s.tv);
    free(s.th);
    return st;
}

/* ---- dense --------------------------------------------------------------- */

static void dense_item(const cvcpu_img *g, const float *w, const cvcpu_item *it, bufs *b,
                       size_t stride)
{
    const size_t C = g->C, K1 = g->K1, R = K1 + 1;
    const size_t m = (it->x1 - it->x0) * C;
    const size_t off = it->x0 * C * convolve_dtype_size(g->out_type);
    const float **rows = b->rows, **slotp = b->slots;
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
            rows[k] = slotp[slot_of(q0 + (ptrdiff_t)k, qbase, R)];
        dpass(g, cvcpu_img_out(g, y) + off, two ? cvcpu_img_out(g, y + 1) + off : NULL, rows, m,
              w);
    }
    cvcpu_img_store_done(g);
}

convolve_status cvcpu_img_dense(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    float *w = float_taps(p->weights, p->kcount, 1.0);
    cvcpu_item *items = NULL;
    size_t nitems = cvcpu_img_items(g, CVCPU_RING_FLOATS / (g->K1 + 1), &items);
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    bufs *b = NULL;
    size_t stride = 0;
    if (nitems && w) {
        stride = cvcpu_odd_lines(cvcpu_round32(widest(items, nitems) * g->C) +
                                 (g->K2 - 1) * g->C + 32);
        b = alloc_bufs(g, g->K1 + 1, stride, 0, stride, (float)p->cval);
    }
    if (b) {
        CVCPU_RUN_ITEMS(g, nitems, dense_item(g, w, &items[i], &b[t], stride));
        st = CONVOLVE_OK;
    }
    free_bufs(g, b);
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

/*
 * image_taps.c - the image strategy's float paths (image.h), on rows of
 * interleaved channels with horizontal taps C elements apart: separable
 * filters of up to 9 rows (vertical pass on the input rows, four output
 * rows at a time, then the horizontal pass on pieces of row in L1,
 * converted and stored as it goes), taller separable filters (horizontal
 * pass per input row into a ring of float rows, then the vertical pass on
 * the ring, symmetric taps folded) and small dense filters (a ring of
 * converted input rows, two output rows per pass). The drivers: tiles,
 * rows and buffers. The kernels are image_taps_avx2.c's and
 * image_taps_avx512.c's, through the table of the instruction set in use
 * (image_taps.h), filled here once per process; with AVX-512 the ring path
 * serves every separable filter.
 */
#include "image_taps.h"
#include "fast.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef CVCPU_IMAGE_X86

/* Floats per thread for the dense path's ring of rows (in L2). */
#define CVCPU_RING_FLOATS ((size_t)64 << 10)
/* Bytes per thread for the K1 + 1 input rows of a tile (in L2). */
#define CVCPU_ROWS_BYTES ((size_t)256 << 10)
/* Elements per piece of a row between the vertical and horizontal passes
 * (stays in L1). */
#define HCHUNK 2048
/* The ring path prefetches the input row this many rows ahead of the one
 * it converts (docs/architecture.md, "Measured choices") */
#define CVCPU_PREFETCH_ROWS 2

/* ---- the kernels' table ---------------------------------------------------- */

/* Indexed by instruction set (CVCPU_ISA_*); filled once. */
static cvcpu_img_kernels g_kernels[CVCPU_ISA_AVX512 + 1];
static pthread_once_t g_kernels_once = PTHREAD_ONCE_INIT;

/* t with the non-NULL kernels of `over` (and its row counts). */
static cvcpu_img_kernels layer(cvcpu_img_kernels t, const cvcpu_img_kernels *over)
{
    t.short_rows = over->short_rows;
    t.ring_rows = over->ring_rows;
    t.vrange = over->vrange ? over->vrange : t.vrange;
    t.hpass = over->hpass ? over->hpass : t.hpass;
    t.hrow = over->hrow ? over->hrow : t.hrow;
    t.vring = over->vring ? over->vring : t.vring;
    t.dpass = over->dpass ? over->dpass : t.dpass;
    return t;
}

static void fill_kernels(void)
{
    g_kernels[CVCPU_ISA_AVX2] = cvcpu_img_kernels_avx2;
    g_kernels[CVCPU_ISA_AVX512] = layer(cvcpu_img_kernels_avx2, &cvcpu_img_kernels_avx512);
}

/* The kernels of g's instruction set (AVX2, which the check requires, or
 * AVX-512). */
static const cvcpu_img_kernels *kernels(const cvcpu_img *g)
{
    pthread_once(&g_kernels_once, fill_kernels);
    return &g_kernels[g->avx512 ? CVCPU_ISA_AVX512 : CVCPU_ISA_AVX2];
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
    float *ext;                  /* a piece of extended input row */
    float *ring;                 /* ring rows */
    float *cst;                  /* a row of the CONSTANT mode's value */
    const float **rows, **slots; /* rows of a vertical pass; ring slot -> row */
    void *block;                 /* (b[0]) the block holding every thread's buffers */
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
static bufs *alloc_bufs(const cvcpu_img *g, size_t R, size_t ring, size_t ext, size_t cst, float v)
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
    float *e[CVCPU_VROWS];    /* a piece of each output row after the vertical pass, extended */
    float *h[2][CVCPU_VROWS]; /* [side][row]: the vertical pass at the source pixels of the
                               extension past the row's left and right ends */
    const char **rows;        /* K1 + CVCPU_VROWS - 1 input rows */
    char *tail;               /* (K1 + CVCPU_VROWS) * 32 bytes */
} vbufs;

static void free_vbufs(vbufs *b, int n)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < CVCPU_VROWS; j++) {
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
        for (int j = 0; j < CVCPU_VROWS; j++) {
            ok &= (b[t].e[j] = cvcpu_img_alloc(ext)) != NULL;
            ok &= (b[t].h[0][j] = cvcpu_img_alloc(halo)) != NULL;
            ok &= (b[t].h[1][j] = cvcpu_img_alloc(halo)) != NULL;
        }
        b[t].rows = malloc((K1 + CVCPU_VROWS) * sizeof *b[t].rows);
        b[t].tail = malloc((K1 + CVCPU_VROWS) * 32);
        if (!ok || !b[t].rows || !b[t].tail) {
            free_vbufs(b, threads);
            return NULL;
        }
    }
    return b;
}

typedef struct {
    const cvcpu_img *g;
    float *tv, *th; /* taps as float */
    int symv, symh;
    float cst;         /* CONSTANT: the vertical pass past the row's ends, cval * sum(tv) */
    size_t piece;      /* output pixels per piece of a row */
    const char *zeros; /* a row of zeros: the short pass's rows of cval */
    const cvcpu_img_kernels *k; /* the instruction set's kernels */
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

/* Output rows out[0..CVCPU_VROWS) (NULL: not stored) of tile it: the vertical
 * pass of rows r[0..K1 + CVCPU_VROWS - 1) piece by piece, extended past the
 * row's ends, then the horizontal pass into the output. c: the CONSTANT
 * rows' share (see cvcpu_img_kernels.vrange). */
static void sep_rows(const sep_plan *s, const cvcpu_item *it, const side sd[2], vbufs *b,
                     const char *const *r, const float *c, char *const *out)
{
    const cvcpu_img *g = s->g;
    const int ty = g->in16 ? CVCPU_ROW_U16 : CVCPU_ROW_U8;
    const size_t C = g->C, K1 = g->K1, K2 = g->K2;
    const ptrdiff_t W = (ptrdiff_t)g->W, lo2 = (ptrdiff_t)g->lo2;
    const ptrdiff_t hi2 = (ptrdiff_t)(K2 - 1) - lo2;
    const size_t oes = convolve_dtype_size(g->out_type);
    /* the vertical pass at the extension's source pixels */
    for (int i = 0; i < 2; i++)
        if (sd[i].s0 < sd[i].s1)
            s->k->vrange(r, (size_t)sd[i].s0 * C, (size_t)sd[i].s1 * C, s->tv, K1, ty, c, b->h[i],
                         b->tail);
    for (size_t p = it->x0; p < it->x1; p += s->piece) {
        const size_t p1 = p + s->piece < it->x1 ? p + s->piece : it->x1;
        const ptrdiff_t xa = (ptrdiff_t)p - lo2, xb = (ptrdiff_t)p1 + hi2;
        const ptrdiff_t ia = xa > 0 ? xa : 0, ib = xb < W ? xb : W;
        float *o[CVCPU_VROWS];
        for (int j = 0; j < CVCPU_VROWS; j++)
            o[j] = b->e[j] + (size_t)(ia - xa) * C;
        s->k->vrange(r, (size_t)ia * C, (size_t)ib * C, s->tv, K1, ty, c, o, b->tail);
        /* the extension: copies of the source pixels, or the constant */
        for (int i = 0; i < 2; i++) {
            const ptrdiff_t lo = i ? (ib > xa ? ib : xa) : xa, hi = i ? xb : (ia < xb ? ia : xb);
            for (ptrdiff_t x = lo; x < hi; x++) {
                const ptrdiff_t src = sd[i].s0 < sd[i].s1 ? cvi_boundary_index(x, W, g->p->mode)
                                                          : -1;
                for (int j = 0; j < CVCPU_VROWS; j++) {
                    float *d = b->e[j] + (size_t)(x - xa) * C;
                    if (src >= 0)
                        memcpy(d, b->h[i][j] + (size_t)(src - sd[i].s0) * C, C * sizeof *d);
                    else
                        for (size_t ch = 0; ch < C; ch++)
                            d[ch] = s->cst;
                }
            }
        }
        for (int j = 0; j < CVCPU_VROWS; j++)
            if (out[j])
                s->k->hpass(g, out[j] + p * C * oes, b->e[j], (p1 - p) * C, s->th, K2, s->symh);
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
    for (size_t y = it->y0; y < it->y1; y += CVCPU_VROWS) {
        const ptrdiff_t q0 = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
        char *out[CVCPU_VROWS];
        float c[CVCPU_VROWS];
        for (size_t j = 0; j < CVCPU_VROWS; j++)
            out[j] = y + j < it->y1 ? cvcpu_img_out(g, y + j) : NULL;
        /* rows outside the input (CONSTANT) are zeros, cval times their taps the share */
        for (size_t k = 0; k < K1 + CVCPU_VROWS - 1; k++) {
            const char *row = cvcpu_img_row(g, q0 + (ptrdiff_t)k);
            r[k] = row ? row : s->zeros;
        }
        for (size_t j = 0; j < CVCPU_VROWS; j++) {
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

/* Taller filters: each input row of the tile is converted (in pieces that
 * stay in L1) and filtered along the row once, into a ring of K1 + 1 rows
 * in L2 (rows outside the input in CONSTANT mode: one row of
 * cval * sum(th)); the vertical pass reads the ring, the kernels'
 * ring_rows output rows at a time. No column is filtered twice, whatever the tile's width. */
static void tall_item(const sep_plan *s, const cvcpu_item *it, bufs *b, size_t stride)
{
    const cvcpu_img *g = s->g;
    const size_t C = g->C, K1 = g->K1, nr = s->k->ring_rows, R = K1 + nr;
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
                        __builtin_prefetch(pf, 0, 3);
                }
            }
            for (size_t x = it->x0; row && x < it->x1; x += s->piece) {
                size_t x1 = x + s->piece < it->x1 ? x + s->piece : it->x1;
                cvcpu_img_load_ext(g, row, x, x1, b->ext);
                size_t n = cvcpu_round32((x1 - x) * C);
                s->k->hrow(g, d + (x - it->x0) * C, b->ext, n, s->th, g->K2, s->symh);
            }
        }
        /* rows past the last one read are not stored: any present row will do */
        for (size_t k = 0; k < K1 + nr - 1; k++)
            rows[k] = slots[slot_of(q0 + (ptrdiff_t)(k < K1 + ny - 1 ? k : K1 + ny - 2), qbase, R)];
        char *d[CVCPU_RING_ROWS_MAX];
        for (size_t j = 0; j < nr; j++)
            d[j] = j < ny ? cvcpu_img_out(g, y + j) + off : NULL;
        s->k->vring(g, d, (const float *const *)(const void *)rows, m, s->tv, K1, s->symv);
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
    s.k = kernels(g);
    /* the short path up to the kernels' short_rows (AVX-512: none, its ring
     * path beats the short path) */
    const int tall = K1 > s.k->short_rows;
    const size_t nr = s.k->ring_rows; /* output rows per vertical pass */
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
            bufs *b = alloc_bufs(g, K1 + nr, stride, ext, stride, (float)(p->cval * hsum));
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

static void dense_item(const cvcpu_img *g, const cvcpu_img_kernels *kern, const float *w,
                       const cvcpu_item *it, bufs *b, size_t stride)
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
        kern->dpass(g, cvcpu_img_out(g, y) + off, two ? cvcpu_img_out(g, y + 1) + off : NULL, rows,
                    m, w);
    }
    cvcpu_img_store_done(g);
}

convolve_status cvcpu_img_dense(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    const cvcpu_img_kernels *k = kernels(g);
    float *w = float_taps(p->weights, p->kcount, 1.0);
    cvcpu_item *items = NULL;
    size_t nitems = cvcpu_img_items(g, CVCPU_RING_FLOATS / (g->K1 + 1), &items);
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    bufs *b = NULL;
    size_t stride = 0;
    if (nitems && w) {
        stride = cvcpu_odd_lines(cvcpu_round32(widest(items, nitems) * g->C) + (g->K2 - 1) * g->C +
                                 32);
        b = alloc_bufs(g, g->K1 + 1, stride, 0, stride, (float)p->cval);
    }
    if (b) {
        CVCPU_RUN_ITEMS(g, nitems, dense_item(g, k, w, &items[i], &b[t], stride));
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

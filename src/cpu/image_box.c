/*
 * image_box.c - the image strategy's box filters (image.h): separable
 * filters whose taps are a along the rows' axis (K1 of them) and b along
 * the row (K2), on uint8/uint16 images. Exact integer sums: a running sum
 * per column over the K1 rows of the window (add the row that enters,
 * subtract the one that leaves), then a prefix sum along the row, C elements
 * apart (the channels stay interleaved), whose differences are the window
 * sums S; each output is S * a * b, rounded once. Sums are 32-bit: the
 * prefix wraps around, its differences do not (K1 * K2 * max < 2^32).
 */
#include "image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>

/* Elements per column tile: the column sums and prefix sums (8 bytes per
 * element) stay within L2. */
#define BOX_COLS 16384

typedef struct {
    const cvcpu_img *g;
    float scale_f; /* a * b as float (the float path) */
    double scale;  /* a * b */
    int use_float; /* scale in float (cvcpu_image_box_float) */
    uint32_t cval; /* the CONSTANT mode's value (an integer) */
} box_plan;

typedef struct {
    uint32_t *c;      /* column sums of the extended tile */
    uint32_t *pz;     /* C zeros, then the prefix sums of c */
    int32_t *hx, *hs; /* extended pixels outside the row, and their sources */
} box_bufs;

/* The value of element e of pixel x of row (NULL: cval; x < 0: cval). */
static inline uint32_t box_at(const box_plan *b, const char *row, int32_t x, size_t ch)
{
    const cvcpu_img *g = b->g;
    if (!row || x < 0)
        return b->cval;
    size_t i = (size_t)x * g->C + ch;
    return g->in16 ? ((const uint16_t *)(const void *)row)[i] : ((const uint8_t *)row)[i];
}

/* c[i] += add[i] - sub[i] over n elements of the input rows (NULL: the
 * value add_c or sub_c everywhere). */
CVCPU_AVX2 static void col_update(uint32_t *c, const char *add, const char *sub, size_t n, int in16,
                                  uint32_t add_c, uint32_t sub_c)
{
    const __m256i ca = _mm256_set1_epi32((int)add_c), cs = _mm256_set1_epi32((int)sub_c);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i va, vs;
        if (in16) {
            va = add ? _mm256_cvtepu16_epi32(
                           _mm_loadu_si128((const __m128i *)(const void *)(add + 2 * i)))
                     : ca;
            vs = sub ? _mm256_cvtepu16_epi32(
                           _mm_loadu_si128((const __m128i *)(const void *)(sub + 2 * i)))
                     : cs;
        } else {
            va = add ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(add + i))) : ca;
            vs = sub ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(sub + i))) : cs;
        }
        __m256i v = _mm256_loadu_si256((const __m256i *)(c + i));
        v = _mm256_sub_epi32(_mm256_add_epi32(v, va), vs);
        _mm256_storeu_si256((__m256i *)(c + i), v);
    }
    for (; i < n; i++) {
        uint32_t a = add ? (in16 ? ((const uint16_t *)(const void *)add)[i]
                                 : ((const uint8_t *)add)[i])
                         : add_c;
        uint32_t s = sub ? (in16 ? ((const uint16_t *)(const void *)sub)[i]
                                 : ((const uint8_t *)sub)[i])
                         : sub_c;
        c[i] += a - s;
    }
}

/* Lanes shifted up by s (0 < s < 8), zeros in. */
CVCPU_AVX2 static CVCPU_INLINE __m256i shift_up(__m256i v, int s)
{
    /* t = [0, low half of v] */
    __m256i t = _mm256_permute2x128_si256(v, v, 0x08);
    switch (s) {
    case 1: return _mm256_alignr_epi8(v, t, 12);
    case 2: return _mm256_alignr_epi8(v, t, 8);
    case 3: return _mm256_alignr_epi8(v, t, 4);
    case 4: return t;
    case 5: return _mm256_slli_si256(t, 4);
    case 6: return _mm256_slli_si256(t, 8);
    default: return _mm256_slli_si256(t, 12);
    }
}

/* pz[C + i] = c[i] + pz[i] for i < n (n a multiple of 8; pz[0..C) = 0):
 * prefix sums of each channel along the row, modulo 2^32. Within a vector
 * by shifted adds (C, 2C, 4C lanes), then the carry: lane j gets the
 * previous vector's lane 8 - C + j % C; where C divides 8 the carry is its
 * own pattern and only the vector totals chain. */
CVCPU_AVX2 static CVCPU_INLINE void prefix_t(uint32_t *pz, const uint32_t *c, size_t n, size_t C)
{
    uint32_t *P = pz + C;
    if (C >= 8) {
        for (size_t i = 0; i < n; i += 8) {
            __m256i v = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(c + i)),
                                         _mm256_loadu_si256((const __m256i *)(pz + i)));
            _mm256_storeu_si256((__m256i *)(P + i), v);
        }
        return;
    }
    int idx[8];
    for (int j = 0; j < 8; j++)
        idx[j] = 8 - (int)C + j % (int)C;
    const __m256i pat = _mm256_loadu_si256((const __m256i *)(const void *)idx);
    const int periodic = 8 % C == 0;
    __m256i carry = _mm256_setzero_si256(), prev = carry;
    for (size_t i = 0; i < n; i += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(c + i));
        for (size_t s = C; s < 8; s *= 2)
            v = _mm256_add_epi32(v, shift_up(v, (int)s));
        if (periodic) { /* prev holds the previous vector's own sums */
            carry = _mm256_add_epi32(carry, _mm256_permutevar8x32_epi32(prev, pat));
            prev = v;
            v = _mm256_add_epi32(v, carry);
        } else { /* prev holds the previous prefix sums */
            v = _mm256_add_epi32(v, _mm256_permutevar8x32_epi32(prev, pat));
            prev = v;
        }
        _mm256_storeu_si256((__m256i *)(P + i), v);
    }
}

CVCPU_AVX2 static void prefix(uint32_t *pz, const uint32_t *c, size_t n, size_t C)
{
    switch (C) {
    case 1: prefix_t(pz, c, n, 1); break;
    case 2: prefix_t(pz, c, n, 2); break;
    case 3: prefix_t(pz, c, n, 3); break;
    case 4: prefix_t(pz, c, n, 4); break;
    default: prefix_t(pz, c, n, C); break;
    }
}

/* Output e < m of the row at d: (pz[e + span] - pz[e]) * scale, rounded
 * and stored as output kind t (32 at a time, the rest through a buffer). */
CVCPU_AVX2 static CVCPU_INLINE void window_t(const cvcpu_img *g, char *d, const uint32_t *pz,
                                             size_t m, size_t span, float scale, int t)
{
    const size_t oes = t == CVCPU_OUT_U8 ? 1 : t == CVCPU_OUT_U16 ? 2 : 4;
    const __m256 s = _mm256_set1_ps(scale);
    __m256 x[4];
    for (size_t e = 0; e < m; e += 32) {
        for (int i = 0; i < 4; i++) {
            const uint32_t *p = pz + e + 8 * i;
            __m256i w = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(p + span)),
                                         _mm256_loadu_si256((const __m256i *)p));
            x[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(w), s);
        }
        if (e + 32 <= m) {
            cvcpu_emit32(d + e * oes, x[0], x[1], x[2], x[3], t, g->nt);
        } else {
            float v[32];
            for (int i = 0; i < 4; i++)
                _mm256_storeu_ps(v + 8 * i, x[i]);
            cvcpu_img_store(g, d + e * oes, v, m - e);
        }
    }
}

CVCPU_AVX2 static void window(const cvcpu_img *g, char *d, const uint32_t *pz, size_t m,
                              size_t span, float scale)
{
    switch (cvcpu_out_kind(g->out_type)) {
    case CVCPU_OUT_U8: window_t(g, d, pz, m, span, scale, CVCPU_OUT_U8); break;
    case CVCPU_OUT_U16: window_t(g, d, pz, m, span, scale, CVCPU_OUT_U16); break;
    default: window_t(g, d, pz, m, span, scale, CVCPU_OUT_F32); break;
    }
}

static void box_item(const box_plan *b, const cvcpu_item *it, box_bufs *buf)
{
    const cvcpu_img *g = b->g;
    const size_t C = g->C, K1 = g->K1, K2 = g->K2, es = g->in16 ? 2 : 1;
    const ptrdiff_t W = (ptrdiff_t)g->W;
    const ptrdiff_t ea = (ptrdiff_t)it->x0 - (ptrdiff_t)g->lo2;
    const size_t E = it->x1 - it->x0 + K2 - 1, EC = E * C;
    const size_t m = (it->x1 - it->x0) * C;
    const size_t off = it->x0 * C * convolve_dtype_size(g->out_type);
    const size_t n = cvcpu_round32(EC) + 32; /* prefix sums reach past the last window */
    /* the extended pixels [ia, ib) inside the row are summed as they are */
    const ptrdiff_t ia = ea > 0 ? ea : 0;
    const ptrdiff_t ib = ea + (ptrdiff_t)E < W ? ea + (ptrdiff_t)E : W;
    const size_t in0 = (size_t)(ia - ea) * C, inn = (size_t)(ib - ia) * C;
    uint32_t *c = buf->c;
    memset(c, 0, n * sizeof *c);
    /* the others: copies of an inside pixel's sum where the mode maps them
     * to one ([0, ncopy) of hx/hs), running sums of their own where it
     * maps them elsewhere ([ncopy, nrun)), K1 * cval in CONSTANT mode */
    size_t ncopy = 0, nrun = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t x = 0; x < E; x++) {
            const ptrdiff_t xs = ea + (ptrdiff_t)x;
            if (xs >= ia && xs < ib)
                continue;
            const ptrdiff_t src = cvi_boundary_index(xs, W, g->p->mode);
            const int inside = src >= ia && src < ib;
            if (pass == 0 && src < 0)
                for (size_t ch = 0; ch < C; ch++)
                    c[x * C + ch] = (uint32_t)K1 * b->cval;
            if (src >= 0 && inside == (pass == 0)) {
                buf->hx[nrun] = (int32_t)x;
                buf->hs[nrun++] = (int32_t)(inside ? src - ea : src);
            }
            if (pass == 0 && inside)
                ncopy = nrun;
        }
    const ptrdiff_t q0 = (ptrdiff_t)it->y0 - (ptrdiff_t)g->lo1;
    for (size_t k = 0; k < K1; k++) {
        const char *row = cvcpu_img_row(g, q0 + (ptrdiff_t)k);
        if (inn)
            col_update(c + in0, row ? row + (size_t)ia * C * es : NULL, NULL, inn, g->in16, b->cval,
                       0);
        for (size_t h = ncopy; h < nrun; h++)
            for (size_t ch = 0; ch < C; ch++)
                c[(size_t)buf->hx[h] * C + ch] += box_at(b, row, buf->hs[h], ch);
    }
    for (size_t y = it->y0; y < it->y1; y++) {
        if (y > it->y0) { /* slide the window down one row */
            const ptrdiff_t q = (ptrdiff_t)y - (ptrdiff_t)g->lo1;
            const char *add = cvcpu_img_row(g, q + (ptrdiff_t)K1 - 1);
            const char *sub = cvcpu_img_row(g, q - 1);
            if (add != sub) {
                if (inn)
                    col_update(c + in0, add ? add + (size_t)ia * C * es : NULL,
                               sub ? sub + (size_t)ia * C * es : NULL, inn, g->in16, b->cval,
                               b->cval);
                for (size_t h = ncopy; h < nrun; h++)
                    for (size_t ch = 0; ch < C; ch++)
                        c[(size_t)buf->hx[h] * C + ch] += box_at(b, add, buf->hs[h], ch) -
                                                          box_at(b, sub, buf->hs[h], ch);
            }
        }
        for (size_t h = 0; h < ncopy; h++)
            memcpy(c + (size_t)buf->hx[h] * C, c + (size_t)buf->hs[h] * C, C * sizeof *c);
        prefix(buf->pz, c, n, C);
        if (b->use_float) {
            window(g, cvcpu_img_out(g, y) + off, buf->pz, m, K2 * C, b->scale_f);
        } else { /* sums beyond float's exact range: double, rounded once */
            char *d = cvcpu_img_out(g, y) + off;
            const size_t oes = convolve_dtype_size(g->out_type);
            for (size_t e = 0; e < m; e++) {
                uint32_t S = buf->pz[e + K2 * C] - buf->pz[e];
                cvi_store_double(g->out_type, d + e * oes, (double)S * b->scale);
            }
        }
    }
    cvcpu_img_store_done(g);
}

static void free_box_bufs(box_bufs *b, int n)
{
    if (!b)
        return;
    for (int t = 0; t < n; t++) {
        free(b[t].c);
        free(b[t].pz);
        free(b[t].hx);
    }
    free(b);
}

convolve_status cvcpu_img_box(const cvcpu_img *g)
{
    const cvi_problem *p = g->p;
    box_plan b;
    b.g = g;
    b.scale = p->taps[1][0] * p->taps[2][0];
    b.scale_f = (float)b.scale;
    b.use_float = cvcpu_image_box_float(p);
    b.cval = p->mode == CVI_MODE_CONSTANT ? (uint32_t)p->cval : 0;

    cvcpu_item *items = NULL;
    size_t nitems = cvcpu_img_items(g, BOX_COLS, &items);
    box_bufs *bufs = nitems ? calloc((size_t)g->threads, sizeof *bufs) : NULL;
    convolve_status st = CONVOLVE_ERROR_OUT_OF_MEMORY;
    if (bufs) {
        size_t wmax = 0;
        for (size_t i = 0; i < nitems; i++)
            if (items[i].x1 - items[i].x0 > wmax)
                wmax = items[i].x1 - items[i].x0;
        size_t E = wmax + g->K2 - 1, EC32 = cvcpu_round32(E * g->C);
        int ok = 1;
        for (int t = 0; t < g->threads && ok; t++) {
            bufs[t].c = (uint32_t *)(void *)cvcpu_img_alloc(EC32 + 64);
            bufs[t].pz = (uint32_t *)(void *)cvcpu_img_alloc(EC32 + 64 + g->C);
            bufs[t].hx = malloc(2 * E * sizeof(int32_t));
            bufs[t].hs = bufs[t].hx ? bufs[t].hx + E : NULL;
            ok = bufs[t].c && bufs[t].pz && bufs[t].hx;
        }
        if (ok) {
            CVCPU_RUN_ITEMS(g, nitems, box_item(&b, &items[i], &bufs[t]));
            st = CONVOLVE_OK;
        }
    }
    free_box_bufs(bufs, g->threads);
    free(items);
    return st;
}

#else /* not x86-64: cvcpu_image_check refuses every problem */

convolve_status cvcpu_img_box(const cvcpu_img *g)
{
    (void)g;
    return CONVOLVE_ERROR_INTERNAL;
}

#endif

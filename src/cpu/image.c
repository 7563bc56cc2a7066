/*
 * image.c - the `image` CPU strategy: which problems it serves, its error
 * bound, and what its drivers (image_box.c, image_taps.c) share: boundary
 * rows, items (column tiles and bands of rows), extended input rows
 * converted to float, output rows converted back (AVX2 with scalar tails),
 * scratch. Its entry, cvcpu_image, is image_entry.c.
 */
#include "image.h"
#include "fast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CVCPU_IMAGE_X86
#include <immintrin.h>
#endif

/* ---- which problems ----------------------------------------------------- */

static int all_equal(const double *t, size_t K)
{
    for (size_t k = 1; k < K; k++)
        if (t[k] != t[0])
            return 0;
    return 1;
}

static double type_max(convolve_dtype t)
{
    return t == CONVOLVE_UINT8 ? 255.0 : 65535.0;
}

/* The largest |value| the box path's sums may meet: the type's, or cval's. */
static double box_x_max(const cvi_problem *p)
{
    double x = type_max(p->in_type);
    if (p->mode == CVI_MODE_CONSTANT && p->cval > x)
        x = p->cval;
    return x;
}

int cvcpu_image_is_box(const cvi_problem *p)
{
    if (!p->separable || !all_equal(p->taps[1], p->ksize[1]) || !all_equal(p->taps[2], p->ksize[2]))
        return 0;
    /* cval joins the integer sums: it must be a non-negative integer */
    if (p->mode == CVI_MODE_CONSTANT &&
        !(p->cval >= 0 && p->cval <= 65535.0 && p->cval == floor(p->cval)))
        return 0;
    /* window sums in 32 bits */
    return (double)p->ksize[1] * (double)p->ksize[2] * box_x_max(p) < 4294967296.0;
}

/* 1 if the box path scales its sums in float (exact sums below 2^24 and
 * the float multiply's error below 1/(2 K1 K2) of a unit for box:R). */
int cvcpu_image_box_float(const cvi_problem *p)
{
    return (double)p->ksize[1] * (double)p->ksize[2] * box_x_max(p) <= 2097152.0;
}

/* 1 if a row's W pixels of C channels are contiguous (the pixel stride of a
 * row of one pixel does not matter: a streamed slab's may be 0). */
static int row_contiguous(ptrdiff_t px_stride, ptrdiff_t cstride, size_t W, size_t C, size_t es)
{
    return (W == 1 || px_stride == (ptrdiff_t)(C * es)) && (C == 1 || cstride == (ptrdiff_t)es);
}

convolve_status cvcpu_image_check(const cvi_problem *p, char *why, size_t why_size)
{
    const char *no = NULL;
#ifndef CVCPU_IMAGE_X86
    no = "the image strategy needs an x86-64 CPU with AVX2 and FMA";
#else
    if (cvcpu_isa() < CVCPU_ISA_AVX2)
        no = "the image strategy needs AVX2 and FMA, which this CPU lacks (or "
             "CONVOLVE_CPU_ISA excludes)";
#endif
    if (!no && p->ndim > 2)
        no = "the image strategy takes 1-D and 2-D arrays";
    else if (!no && p->in_type != CONVOLVE_UINT8 && p->in_type != CONVOLVE_UINT16)
        no = "the image strategy takes uint8 or uint16 input";
    else if (!no && cvi_truncates(p))
        no = "the image strategy computes in float (or integers): it does not give scipy's "
             "cast (CONVOLVE_CAST_TRUNCATE), which sums in double";
    else if (!no && p->out_type == CONVOLVE_FLOAT64)
        no = "the image strategy computes in float: it does not write float64";
    else if (!no && !row_contiguous(p->in_strides[2], p->in_cstride, p->shape[2], p->channels,
                                    convolve_dtype_size(p->in_type)))
        no = "the image strategy needs the input's pixels contiguous within a row, channels "
             "interleaved";
    else if (!no && !row_contiguous(p->out_strides[2], p->out_cstride, p->shape[2], p->channels,
                                    convolve_dtype_size(p->out_type)))
        no = "the image strategy needs the output's pixels contiguous within a row, channels "
             "interleaved";
    else if (!no && !p->separable && p->kcount > CVCPU_IMAGE_DENSE_MAX)
        no = "the image strategy takes separable filters and dense ones of at most 81 weights";
    if (no) {
        snprintf(why, why_size, "%s", no);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (why_size)
        why[0] = '\0';
    return CONVOLVE_OK;
}

static double abs_sum(const double *w, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(w[i]);
    return s;
}

double cvcpu_image_bound(const cvi_problem *p, double x_max)
{
    const double K1 = (double)p->ksize[1], K2 = (double)p->ksize[2];
    const double u = ldexp(1.0, -24);
    if (cvcpu_image_is_box(p)) {
        double ab = fabs(p->taps[1][0] * p->taps[2][0]);
        return (cvcpu_image_box_float(p) ? 4 * u : ldexp(1.0, -50)) * ab * K1 * K2 * x_max;
    }
    if (p->separable)
        return (K1 + K2 + 8) * u * abs_sum(p->taps[1], p->ksize[1]) *
               abs_sum(p->taps[2], p->ksize[2]) * x_max;
    return (K1 * K2 + 8) * u * abs_sum(p->weights, p->kcount) * x_max;
}

/* ---- shared pieces ------------------------------------------------------ */

const char *cvcpu_img_row(const cvcpu_img *g, ptrdiff_t q)
{
    ptrdiff_t r = cvi_boundary_index(q, (ptrdiff_t)g->H, g->p->mode);
    return r < 0 ? NULL : g->in + r * g->irs;
}

static size_t div_up(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

size_t cvcpu_img_items(const cvcpu_img *g, size_t cols, cvcpu_item **items)
{
    const size_t W = g->x1 - g->x0, H = g->y1 - g->y0;
    size_t T = cols / g->C;
    if (T < 8)
        T = 8;
    size_t nt = div_up(W, T);
    T = div_up(W, nt);
    nt = div_up(W, T);
    /* enough items for dynamic scheduling to even out, in bands tall enough
     * that the K1 - 1 rows each band reads again cost little */
    size_t nb = 1;
    if (g->threads > 1 && nt < 4 * (size_t)g->threads)
        nb = div_up(4 * (size_t)g->threads, nt);
    size_t hmin = 8 * (g->K1 - 1) > 32 ? 8 * (g->K1 - 1) : 32;
    if (nb > 1 && div_up(H, nb) < hmin)
        nb = H > hmin ? H / hmin : 1;
    size_t h = div_up(H, nb);
    nb = div_up(H, h);
    cvcpu_item *it = malloc(nt * nb * sizeof *it);
    if (!it)
        return 0;
    for (size_t b = 0, k = 0; b < nb; b++)
        for (size_t t = 0; t < nt; t++, k++) {
            it[k].x0 = g->x0 + t * T;
            it[k].x1 = g->x0 + ((t + 1) * T < W ? (t + 1) * T : W);
            it[k].y0 = g->y0 + b * h;
            it[k].y1 = g->y0 + ((b + 1) * h < H ? (b + 1) * h : H);
        }
    *items = it;
    return nt * nb;
}

float *cvcpu_img_alloc(size_t n)
{
    return (float *)cvcpu_alloc(cvcpu_round32(n) + 32, sizeof(float));
}

/* ---- conversions ---------------------------------------------------------- */

#ifdef CVCPU_IMAGE_X86
CVCPU_AVX2 static void load_u8(float *dst, const unsigned char *src, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(src + i));
        __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)));
        _mm256_storeu_ps(dst + i + 8,
                         _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8))));
        _mm256_storeu_ps(dst + i + 16, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi)));
        _mm256_storeu_ps(dst + i + 24,
                         _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                      _mm_loadl_epi64((const __m128i *)(src + i)))));
    for (; i < n; i++)
        dst[i] = (float)src[i];
}

CVCPU_AVX2 static void load_u16(float *dst, const unsigned short *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(
                                      _mm_loadu_si128((const __m128i *)(src + i)))));
    for (; i < n; i++)
        dst[i] = (float)src[i];
}

/* rint, saturation and NaN -> 0: min(max, v) keeps NaN (the second operand
 * of minps is returned for NaN), cvtps2dq makes NaN and -inf INT_MIN, and
 * the unsigned packs saturate that to 0. */
CVCPU_AVX2 static void store_u8(unsigned char *dst, const float *src, size_t n)
{
    const __m256 hi = _mm256_set1_ps(255.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i)));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i + 8)));
        __m256i c = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i + 16)));
        __m256i d = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i + 24)));
        __m256i r = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_permutevar8x32_epi32(r, order));
    }
    for (; i < n; i++)
        dst[i] = cvi_saturate_u8((double)src[i]);
}

CVCPU_AVX2 static void store_u16(unsigned short *dst, const float *src, size_t n)
{
    const __m256 hi = _mm256_set1_ps(65535.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i)));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_loadu_ps(src + i + 8)));
        __m256i r = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(dst + i), r);
    }
    for (; i < n; i++)
        dst[i] = cvi_saturate_u16((double)src[i]);
}
#endif

/* Converts n contiguous input elements at src to float. */
static void load_input(const cvcpu_img *g, float *dst, const char *src, size_t n)
{
#ifdef CVCPU_IMAGE_X86
    if (g->avx512) { /* the fast backend's AVX-512 conversions */
        const cvcpu_cvt *k = cvcpu_cvt_kernels(CVCPU_ISA_AVX512);
        (g->in16 ? k->from_u16 : k->from_u8)(dst, src, n);
    } else if (g->in16)
        load_u16(dst, (const unsigned short *)(const void *)src, n);
    else
        load_u8(dst, (const unsigned char *)src, n);
#else
    for (size_t i = 0; i < n; i++)
        dst[i] = g->in16 ? (float)((const unsigned short *)(const void *)src)[i]
                         : (float)((const unsigned char *)src)[i];
#endif
}

void cvcpu_img_load_ext(const cvcpu_img *g, const char *row, size_t x0, size_t x1, float *dst)
{
    const size_t C = g->C, es = g->in16 ? 2 : 1;
    const ptrdiff_t W = (ptrdiff_t)g->W;
    const ptrdiff_t a = (ptrdiff_t)x0 - (ptrdiff_t)g->lo2;
    const ptrdiff_t b = (ptrdiff_t)x1 + (ptrdiff_t)(g->K2 - 1 - g->lo2);
    const float cval = (float)g->p->cval;
    if (!row) {
        for (size_t i = 0, n = (size_t)(b - a) * C; i < n; i++)
            dst[i] = cval;
        return;
    }
    const ptrdiff_t ia = a > 0 ? a : 0, ib = b < W ? b : W;
    for (ptrdiff_t x = a; x < b; x++) {
        if (x == ia && ia < ib) { /* the pixels inside the row, in one piece */
            load_input(g, dst + (size_t)(x - a) * C, row + (size_t)x * C * es,
                       (size_t)(ib - ia) * C);
            x = ib - 1;
            continue;
        }
        ptrdiff_t s = cvi_boundary_index(x, W, g->p->mode);
        float *d = dst + (size_t)(x - a) * C;
        if (s < 0)
            for (size_t c = 0; c < C; c++)
                d[c] = cval;
        else
            load_input(g, d, row + (size_t)s * C * es, C);
    }
}

void cvcpu_img_store(const cvcpu_img *g, char *dst, const float *src, size_t n)
{
    switch (g->out_type) {
    case CONVOLVE_UINT8:
#ifdef CVCPU_IMAGE_X86
        store_u8((unsigned char *)dst, src, n);
#else
        for (size_t i = 0; i < n; i++)
            ((unsigned char *)dst)[i] = cvi_saturate_u8((double)src[i]);
#endif
        break;
    case CONVOLVE_UINT16:
#ifdef CVCPU_IMAGE_X86
        store_u16((unsigned short *)(void *)dst, src, n);
#else
        for (size_t i = 0; i < n; i++)
            ((unsigned short *)(void *)dst)[i] = cvi_saturate_u16((double)src[i]);
#endif
        break;
    default: memcpy(dst, src, n * sizeof(float)); break;
    }
}

/* ---- scratch ----------------------------------------------------------------- */

/* The block's size sits in a header before the 64-byte aligned data. */
#define CVCPU_SCRATCH_HEAD 64

void cvcpu_img_scratch_init(cvcpu_img_scratch *s)
{
    atomic_init(&s->block, NULL);
}

void cvcpu_img_scratch_free(cvcpu_img_scratch *s)
{
    if (s)
        free(atomic_exchange(&s->block, NULL));
}

void *cvcpu_img_scratch_take(cvcpu_img_scratch *s, size_t bytes)
{
    char *b = s ? atomic_exchange(&s->block, NULL) : NULL;
    if (b && *(const size_t *)(const void *)b >= bytes)
        return b + CVCPU_SCRATCH_HEAD;
    free(b);
    if (bytes > SIZE_MAX - 2 * CVCPU_SCRATCH_HEAD)
        return NULL;
    size_t total = (CVCPU_SCRATCH_HEAD + bytes + 63) / 64 * 64;
    b = aligned_alloc(64, total);
    if (!b)
        return NULL;
    *(size_t *)(void *)b = bytes;
    return b + CVCPU_SCRATCH_HEAD;
}

void cvcpu_img_scratch_give(cvcpu_img_scratch *s, void *data)
{
    if (!data)
        return;
    char *b = (char *)data - CVCPU_SCRATCH_HEAD;
    if (!s) {
        free(b);
        return;
    }
    free(atomic_exchange(&s->block, b));
}

/*
 * image.h - the `image` CPU strategy: 2-D uint8/uint16 images with
 * interleaved channels (gray, RGB, RGBA, any count), computed on the rows as
 * they lie in memory. A row of W pixels of C channels is one row of W*C
 * elements; a filter's horizontal taps are C elements apart, so channels are
 * never separated or copied apart.
 *
 * Three families (image.c picks one):
 *   - box (image_box.c): separable filters whose taps along each axis are all
 *     equal: exact integer running sums (a vertical running sum per column,
 *     a prefix sum along the row), then one multiply and the rounding;
 *   - separable (image_taps.c): short filters (up to 9 rows) take the
 *     vertical pass first, on the input rows as they are (four output rows
 *     a pass), then the horizontal pass on a piece of row in L1; taller
 *     ones the horizontal pass first (each input row converted once) into
 *     a ring of float rows, then the vertical pass on the ring, symmetric
 *     taps folded (x[k] + x[K-1-k] added before the multiply).
 *     With AVX-512 every separable filter takes the ring path (kernels
 *     of its own: shifted vectors from aligned loads and valignd, eight
 *     output rows per vertical pass with each ring row loaded once);
 *   - dense (image_taps.c): small non-separable filters on a ring of
 *     converted input rows, two output rows per pass over the ring.
 * image_taps.c drives the last two; their kernels are one file per
 * instruction set (image_taps_avx2.c, image_taps_avx512.c), reached through
 * a table (image_taps.h).
 * Work is split into column tiles whose rings stay in L2 and bands of rows,
 * spread over OpenMP threads.
 *
 * Accuracy (docs/cpu-fast.md, "Accuracy"): float sums, so every
 * output is rint(v) of a computed v with |v - exact| <= cvcpu_image_bound();
 * box filters sum exactly and round once.
 */
#ifndef CONVOLVE_CPU_IMAGE_H
#define CONVOLVE_CPU_IMAGE_H

#include "cpu_backend.h"
#include "fast.h"

#include <stdatomic.h>
#include <stdint.h>

/* Why the image strategy cannot serve p ("" and CONVOLVE_OK when it can):
 * it takes 1-D and 2-D problems with uint8 or uint16 input, uint8, uint16
 * or float32 output, pixels contiguous within a row (channels interleaved,
 * no gaps) in both input and output, a separable filter or a dense one of at
 * most CVCPU_IMAGE_DENSE_MAX taps, and an x86-64 CPU with AVX2 and FMA. */
convolve_status cvcpu_image_check(const cvi_problem *p, char *why, size_t why_size);

/* Row buffers a plan keeps from one execution to the next: one block, lent
 * to one execution at a time (an execution running while another holds it
 * allocates its own). Allocating and freeing them on every execution let
 * glibc return the pages to the system each time, and touching them again
 * cost more than the filtering on small images ("Measured choices",
 * docs/architecture.md). */
typedef struct cvcpu_img_scratch {
    _Atomic(void *) block;
} cvcpu_img_scratch;

/* An empty scratch, and freeing what it holds (s may be NULL). */
void cvcpu_img_scratch_init(cvcpu_img_scratch *s);
void cvcpu_img_scratch_free(cvcpu_img_scratch *s);

/* Runs the image strategy on p (which cvcpu_image_check accepted).
 * `threads`: how many threads to use (at least 1); `scratch`: the plan's
 * row buffers, or NULL (allocated and freed here). Errors: OUT_OF_MEMORY
 * (row buffers). */
convolve_status cvcpu_image(const cvi_problem *p, int threads, const void *in, void *out,
                            cvcpu_img_scratch *scratch);

/* The largest dense (non-separable) filter the image strategy takes. */
#define CVCPU_IMAGE_DENSE_MAX 81

/*
 * The bound on |v - exact| for a result v that the image strategy computes
 * before rounding it to an integer output (or storing it as float32), where
 * exact is the true sum of weights times the extended input and X = x_max
 * the largest |value| the filter reads (|cval| included in CONSTANT mode):
 *   box (taps a along axis 1, b along axis 2; the sum S is exact):
 *               2^-22 * |a b| * K1 * K2 * X  when K1 * K2 * X <= 2^21
 *               (S * a b in float), else 2^-50 * |a b| * K1 * K2 * X (double)
 *   separable:  (K1 + K2 + 8) * 2^-24 * sum|tv| * sum|th| * X
 *   dense:      (K1 * K2 + 8) * 2^-24 * sum|w| * X
 * An integer output equals the exact result rounded to nearest (ties to
 * even) and saturated unless the exact result lies within this bound of a
 * half-integer; there it may be the other neighbour (off by one). With box
 * taps 1/K1 and 1/K2 and K1 * K2 odd (box:R) no exact result lies that
 * close to a half-integer (S / (K1 K2) is at least 1 / (2 K1 K2) away), so
 * box outputs are exactly rounded.
 */
double cvcpu_image_bound(const cvi_problem *p, double x_max);

/* 1 if p goes to the integer box path (sums exact, one multiply). */
int cvcpu_image_is_box(const cvi_problem *p);

/* 1 if that multiply is in float (else double): see cvcpu_image_bound. */
int cvcpu_image_box_float(const cvi_problem *p);

/* ---- shared by image*.c ----------------------------------------------- */

#ifdef _OPENMP
#include <omp.h>
#define CVCPU_THREAD_NUM() omp_get_thread_num()
#else
#define CVCPU_THREAD_NUM() 0
#endif

/* Runs CALL for i in [0, nitems) on g->threads threads (dynamic schedule),
 * with t the thread's number (for its buffers). */
#define CVCPU_RUN_ITEMS(g, nitems, CALL)                  \
    do {                                                  \
        const ptrdiff_t n_ = (ptrdiff_t)(nitems);         \
        CVCPU_OMP(omp parallel num_threads((g)->threads)) \
        {                                                 \
            const int t = CVCPU_THREAD_NUM();             \
            CVCPU_OMP(omp for schedule(dynamic, 1))       \
            for (ptrdiff_t i = 0; i < n_; i++)            \
                CALL;                                     \
        }                                                 \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
#define CVCPU_IMAGE_X86 1
#define CVCPU_INLINE __attribute__((always_inline)) inline

#include <immintrin.h>
#endif

/* One execution: the problem seen as rows of n = W * C elements. */
typedef struct cvcpu_img {
    const cvi_problem *p;
    const char *in;
    char *out;
    size_t W, H, C, n;     /* pixels per row, rows, channels, elements per row */
    size_t x0, x1, y0, y1; /* the outputs computed: pixels [x0, x1) of rows [y0, y1)
                               (the whole image, or the problem's window) */
    int in16;              /* input uint16 (else uint8) */
    convolve_dtype out_type;
    ptrdiff_t irs, ors; /* bytes from one row to the next, input and output */
    int nt;             /* store large outputs around the caches */
    size_t K1, K2;      /* filter extents: vertical, horizontal */
    size_t lo1, lo2;    /* rows / pixels of the window before the output's own */
    int threads;
    int avx512;                 /* AVX-512 kernels (else AVX2): cvcpu_isa() once an execution */
    cvcpu_img_scratch *scratch; /* the plan's row buffers, or NULL */
} cvcpu_img;

/* A block of at least `bytes` bytes, 64-byte aligned: the scratch's if it
 * holds one large enough (s may be NULL). NULL when out of memory. */
void *cvcpu_img_scratch_take(cvcpu_img_scratch *s, size_t bytes);
/* Gives a block from cvcpu_img_scratch_take back to s (freed if s is NULL
 * or already holds another); data may be NULL. */
void cvcpu_img_scratch_give(cvcpu_img_scratch *s, void *data);

/* A piece of work: output pixels [x0, x1) of rows [y0, y1). */
typedef struct cvcpu_item {
    size_t x0, x1, y0, y1;
} cvcpu_item;

/* The input row holding extended row q (boundary mode applied), or NULL
 * when it is outside the input in CONSTANT mode (all cval). */
const char *cvcpu_img_row(const cvcpu_img *g, ptrdiff_t q);

/* Splits the outputs computed into items (column tiles of at most `cols`
 * elements, bands of rows) for g->threads threads; *items is malloc'ed.
 * Returns the count, 0 when out of memory. */
size_t cvcpu_img_items(const cvcpu_img *g, size_t cols, cvcpu_item **items);

/* Converts the extended input pixels [x0 - lo2, x1 + hi2) of input row
 * `row` (NULL: all cval) to float at dst: (x1 - x0 + K2 - 1) * C values. */
void cvcpu_img_load_ext(const cvcpu_img *g, const char *row, size_t x0, size_t x1, float *dst);

/* Stores n floats as the output type at dst (integers: rint, saturated,
 * NaN to 0, as cvi_store_double). */
void cvcpu_img_store(const cvcpu_img *g, char *dst, const float *src, size_t n);

/* The output row y. */
static inline char *cvcpu_img_out(const cvcpu_img *g, size_t y)
{
    return g->out + (ptrdiff_t)y * g->ors;
}

/* 64-byte aligned, zero-filled, n floats (rounded up); NULL on failure. */
float *cvcpu_img_alloc(size_t n);

/* Output types of the kernels (compile-time constants in them). */
enum { CVCPU_OUT_U8, CVCPU_OUT_U16, CVCPU_OUT_F32 };

static inline int cvcpu_out_kind(convolve_dtype t)
{
    return t == CONVOLVE_UINT8    ? CVCPU_OUT_U8
           : t == CONVOLVE_UINT16 ? CVCPU_OUT_U16
                                  : CVCPU_OUT_F32;
}

#ifdef CVCPU_IMAGE_X86
/* Stores 32 bytes at d: with nt and d 32-byte aligned, around the caches
 * (a non-temporal store: no read of the line first). */
CVCPU_AVX2 static CVCPU_INLINE void cvcpu_store32(char *d, __m256i v, int nt)
{
    if (nt && !((uintptr_t)d & 31))
        _mm256_stream_si256((__m256i *)(void *)d, v);
    else
        _mm256_storeu_si256((__m256i *)(void *)d, v);
}

/* Stores 16 floats (x0, x1) as output kind t at d. Integers: rint (the
 * default rounding), saturated, NaN to 0, as cvi_store_double: minps(max, v)
 * returns v when v is NaN, cvtps2dq turns NaN and -inf into INT_MIN, and
 * the unsigned packs saturate that to 0. */
CVCPU_AVX2 static CVCPU_INLINE void cvcpu_emit16(char *d, __m256 x0, __m256 x1, int t, int nt)
{
    if (t == CVCPU_OUT_U8) {
        const __m256 hi = _mm256_set1_ps(255.0f);
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(hi, x0));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(hi, x1));
        __m256i p = _mm256_packs_epi32(a, b); /* a0-3 b0-3 | a4-7 b4-7 */
        __m128i q = _mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        _mm_storeu_si128((__m128i *)(void *)d, _mm_shuffle_epi32(q, _MM_SHUFFLE(3, 1, 2, 0)));
    } else if (t == CVCPU_OUT_U16) {
        const __m256 hi = _mm256_set1_ps(65535.0f);
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(hi, x0));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(hi, x1));
        cvcpu_store32(d, _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8), nt);
    } else {
        cvcpu_store32(d, _mm256_castps_si256(x0), nt);
        cvcpu_store32(d + 32, _mm256_castps_si256(x1), nt);
    }
}

/* The same for 32 floats (x0..x3). */
CVCPU_AVX2 static CVCPU_INLINE void cvcpu_emit32(char *d, __m256 x0, __m256 x1, __m256 x2,
                                                 __m256 x3, int t, int nt)
{
    if (t == CVCPU_OUT_U8) {
        const __m256 hi = _mm256_set1_ps(255.0f);
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(hi, x0));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(hi, x1));
        __m256i c = _mm256_cvtps_epi32(_mm256_min_ps(hi, x2));
        __m256i e = _mm256_cvtps_epi32(_mm256_min_ps(hi, x3));
        /* a0-3 b0-3 c0-3 e0-3 | a4-7 b4-7 c4-7 e4-7, then in order */
        __m256i r = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, e));
        cvcpu_store32(d, _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)),
                      nt);
    } else {
        const size_t es = t == CVCPU_OUT_U16 ? 2 : 4;
        cvcpu_emit16(d, x0, x1, t, nt);
        cvcpu_emit16(d + 16 * es, x2, x3, t, nt);
    }
}

/* Ends a thread's non-temporal stores (before others may read them). */
static inline void cvcpu_img_store_done(const struct cvcpu_img *g)
{
    if (g->nt)
        _mm_sfence();
}
#endif

/* The drivers (image_taps.c, image_box.c). */
convolve_status cvcpu_img_separable(const cvcpu_img *g);
convolve_status cvcpu_img_dense(const cvcpu_img *g);
convolve_status cvcpu_img_box(const cvcpu_img *g);

static inline size_t cvcpu_round32(size_t n)
{
    return (n + 31) / 32 * 32;
}

/* n floats rounded up to an odd number of 64-byte lines: rows that far apart
 * do not all fall into the same cache sets. */
static inline size_t cvcpu_odd_lines(size_t n)
{
    size_t lines = (n + 15) / 16;
    return (lines | 1) * 16;
}

#endif

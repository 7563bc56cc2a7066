/*
 * harness.h - the small test harness shared by the C tests: checks that
 * count failures, a seeded random generator (the seed is printed, and
 * CONVOLVE_TEST_SEED replays one), random arrays that are never all zero,
 * poisoning, and the comparison of a result with a reference
 * (|out - ref| <= tol + |ref| * eps per element, and relative L2).
 */
#ifndef CONVOLVE_TEST_HARNESS_H
#define CONVOLVE_TEST_HARNESS_H

#include "convolve.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int h_failures = 0;
static int h_checks = 0;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        h_checks++;                                                         \
        if (!(cond)) {                                                      \
            h_failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

/* Checks a status; prints the context's message on failure. */
#define CHECK_OK(ctx, expr)                                                \
    do {                                                                   \
        convolve_status h_st_ = (expr);                                    \
        CHECK(h_st_ == CONVOLVE_OK, "%s: %s", convolve_status_name(h_st_), \
              convolve_last_error(ctx));                                   \
    } while (0)

/* Checks that expr fails with the given status and leaves a message. */
#define CHECK_STATUS(ctx, expr, want)                                               \
    do {                                                                            \
        convolve_status h_st_ = (expr);                                             \
        CHECK(h_st_ == (want), "got %s, want %s (%s)", convolve_status_name(h_st_), \
              convolve_status_name(want), convolve_last_error(ctx));                \
        if (h_st_ == (want) && (want) != CONVOLVE_OK && (ctx))                      \
            CHECK(convolve_last_error(ctx)[0] != '\0', "no error message");         \
    } while (0)

static uint64_t h_rng_state = 0;

static inline uint64_t h_rand_u64(void)
{
    uint64_t x = h_rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return h_rng_state = x;
}

/* Uniform in [lo, hi). */
static inline double h_uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(h_rand_u64() >> 11) * 0x1.0p-53);
}

/* Integer in [lo, hi]. */
static inline long h_randint(long lo, long hi)
{
    return lo + (long)(h_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* Seeds from CONVOLVE_TEST_SEED or the clock, and says which. */
static inline void h_seed(const char *test)
{
    const char *env = getenv("CONVOLVE_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    if (seed == 0)
        seed = 1;
    h_rng_state = seed * 0x9E3779B97F4A7C15ull | 1;
    printf("%s: seed %llu (replay with CONVOLVE_TEST_SEED=%llu)\n", test, (unsigned long long)seed,
           (unsigned long long)seed);
}

/* Fills n doubles with random values in [-1, 1), never all zero. */
static inline void h_fill(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = h_uniform(-1.0, 1.0);
    if (n && v[0] == 0.0)
        v[0] = 0.5;
}

/* Fills a typed buffer of n elements with random values: floats in [-1, 1)
 * scaled by `scale`, integers over their whole range. */
static inline void h_fill_typed(convolve_dtype t, void *data, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case CONVOLVE_FLOAT32: ((float *)data)[i] = (float)(scale * h_uniform(-1, 1)); break;
        case CONVOLVE_FLOAT64: ((double *)data)[i] = scale * h_uniform(-1, 1); break;
        case CONVOLVE_UINT8: ((uint8_t *)data)[i] = (uint8_t)h_randint(0, 255); break;
        case CONVOLVE_UINT16: ((uint16_t *)data)[i] = (uint16_t)h_randint(0, 65535); break;
        }
    }
}

/* Writes a poison pattern (NaN for floats, 0xAB.. for integers). */
static inline void h_poison(convolve_dtype t, void *data, size_t n)
{
    if (t == CONVOLVE_FLOAT32)
        for (size_t i = 0; i < n; i++)
            ((float *)data)[i] = NAN;
    else if (t == CONVOLVE_FLOAT64)
        for (size_t i = 0; i < n; i++)
            ((double *)data)[i] = NAN;
    else
        memset(data, 0xAB, n * convolve_dtype_size(t));
}

/* The bytes a layout spans (*bytes, from its lowest to its highest
 * element) and where element 0 lies in them (*origin): strides may be
 * negative. */
static inline void h_layout_extent(const convolve_layout *l, size_t *bytes, size_t *origin)
{
    ptrdiff_t lo = 0, hi = 0;
    for (int a = 0; a <= l->ndim; a++) {
        const ptrdiff_t r = a < l->ndim ? (ptrdiff_t)(l->shape[a] - 1) * l->strides[a]
                                        : (ptrdiff_t)(l->channels - 1) * l->channel_stride;
        if (r < 0)
            lo += r;
        else
            hi += r;
    }
    *bytes = (size_t)(hi - lo) + convolve_dtype_size(l->dtype);
    *origin = (size_t)(-lo);
}

/* Layout kinds the GPU tests draw: how an array of `shape` x C channels lies
 * in memory. */
enum {
    H_PACKED = 0, /* C order, channels interleaved */
    H_PITCHED,    /* rows padded by 5 elements, planes by one row */
    H_REVERSED,   /* pitched, rows in reverse order (negative stride) */
    H_PLANAR,     /* channels in planes of their own */
    H_STEPPED,    /* every other element of a larger array along x */
    H_LAYOUT_KINDS
};

/* Fills *l for kind k; *bytes receives the buffer's size and *origin where
 * element 0 lies in it (strides may be negative). */
static inline void h_make_layout(convolve_layout *l, convolve_dtype dt, int ndim,
                                 const size_t *shape, size_t C, int k, size_t *bytes,
                                 size_t *origin)
{
    const ptrdiff_t es = (ptrdiff_t)convolve_dtype_size(dt);
    convolve_layout_init(l, dt, ndim, shape, C);
    if (k == H_PITCHED || k == H_REVERSED) {
        ptrdiff_t step = (ptrdiff_t)C * es;
        for (int a = ndim - 1; a >= 0; a--) {
            l->strides[a] = step;
            step = step * (ptrdiff_t)shape[a] + (a == ndim - 1 ? 5 * es * (ptrdiff_t)C : 0);
        }
        if (k == H_REVERSED && ndim > 1)
            l->strides[ndim - 2] = -l->strides[ndim - 2];
    } else if (k == H_PLANAR) {
        ptrdiff_t step = es;
        for (int a = ndim - 1; a >= 0; a--) {
            l->strides[a] = step;
            step *= (ptrdiff_t)shape[a];
        }
        l->channel_stride = step;
    } else if (k == H_STEPPED) {
        ptrdiff_t step = 2 * (ptrdiff_t)C * es;
        for (int a = ndim - 1; a >= 0; a--) {
            l->strides[a] = step;
            step *= (ptrdiff_t)shape[a];
        }
    }
    h_layout_extent(l, bytes, origin);
}

/* Byte offset of packed element i (C order, channels last) in layout l. */
static inline ptrdiff_t h_layout_offset(const convolve_layout *l, size_t i)
{
    size_t c = i % l->channels, idx = i / l->channels;
    ptrdiff_t off = (ptrdiff_t)c * l->channel_stride;
    for (int a = l->ndim - 1; a >= 0; a--) {
        off += (ptrdiff_t)(idx % l->shape[a]) * l->strides[a];
        idx /= l->shape[a];
    }
    return off;
}

/* Copies n elements from a packed array into layout l at base, and back. */
static inline void h_scatter(const convolve_layout *l, char *base, const char *packed, size_t n)
{
    const size_t es = convolve_dtype_size(l->dtype);
    for (size_t i = 0; i < n; i++)
        memcpy(base + h_layout_offset(l, i), packed + i * es, es);
}

static inline void h_gather(const convolve_layout *l, const char *base, char *packed, size_t n)
{
    const size_t es = convolve_dtype_size(l->dtype);
    for (size_t i = 0; i < n; i++)
        memcpy(packed + i * es, base + h_layout_offset(l, i), es);
}

static inline double h_get(convolve_dtype t, const void *data, size_t i)
{
    switch (t) {
    case CONVOLVE_FLOAT32: return ((const float *)data)[i];
    case CONVOLVE_FLOAT64: return ((const double *)data)[i];
    case CONVOLVE_UINT8: return ((const uint8_t *)data)[i];
    default: return ((const uint16_t *)data)[i];
    }
}

typedef struct {
    size_t bad; /* elements outside tol + |ref| * eps (NaN counts) */
    size_t first_bad;
    double max_abs;        /* largest |out - ref| */
    double rel_l2;         /* ||out - ref|| / ||ref|| */
    double l2_err, l2_ref; /* ||out - ref||, ||ref|| */
} h_diff;

/* Compares n elements of out (type to) with ref (type tr). */
static inline h_diff h_compare(convolve_dtype to, const void *out, convolve_dtype tr,
                               const void *ref, size_t n, double tol, double eps)
{
    h_diff d = {0, 0, 0.0, 0.0, 0.0, 0.0};
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double o = h_get(to, out, i), r = h_get(tr, ref, i);
        double e = fabs(o - r);
        if (!(e <= tol + fabs(r) * eps)) {
            if (!d.bad)
                d.first_bad = i;
            d.bad++;
        }
        if (e > d.max_abs || e != e)
            d.max_abs = e;
        num += (o - r) * (o - r);
        den += r * r;
    }
    d.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    d.l2_err = sqrt(num);
    d.l2_ref = sqrt(den);
    return d;
}

/* Ends a test: prints the tally, returns the exit code. */
static inline int h_finish(const char *test)
{
    printf("%s: %d checks, %d failures\n", test, h_checks, h_failures);
    return h_failures ? 1 : 0;
}

#endif

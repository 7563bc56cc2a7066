/*
 * cast_cases.h - random cases of scipy's integer cast
 * (CONVOLVE_CAST_TRUNCATE), shared by test_cast.c (the CPU strategies) and
 * test_gpu_cast.c (the GPU's): each result is compared, element for
 * element and exactly, with a scalar model of the cast applied to the CPU
 * reference's float64 result. The model is written here from the
 * definition (not with the library's helpers): snap to an integer within
 * (weights + 1) * 2^-52 * max(|n|, 1), truncate toward zero to int64 (INT64_MIN out of
 * range), keep the low bits.
 */
#ifndef CONVOLVE_TEST_CAST_CASES_H
#define CONVOLVE_TEST_CAST_CASES_H

#include "harness.h"

static unsigned long long cc_model(double v, double divisor, size_t weights, convolve_dtype out)
{
    v /= divisor;
    double r = nearbyint(v);
    if (fabs(v - r) <= ((double)weights + 1.0) * 0x1p-52 * fmax(fabs(r), 1.0))
        v = r;
    long long i;
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        i = INT64_MIN;
    else
        i = (long long)trunc(v);
    unsigned long long u = (unsigned long long)i;
    return out == CONVOLVE_UINT8 ? (u & 0xffu) : (u & 0xffffu);
}

/* Runs each strategy of `strategies` (NULL: auto) on the packed input `in`
 * (layout *li; the output *lo, both packed C order, or with the layout kind
 * `kind` of harness.h for the strategies' runs) and compares every
 * element, poisoned first, with the model of the cast on the CPU
 * reference's float64 result. Strategies that refuse must say UNSUPPORTED;
 * `must_serve` must serve; served[s] counts those that did. picked, if
 * given, receives auto's strategy (a static name). */
static void cc_run(convolve_context *ctx, const convolve_filter *f, const convolve_layout *li,
                   const convolve_layout *lo, const void *in, const convolve_options *opt,
                   size_t kc, const char *const *strategies, int nstrat, const char *must_serve,
                   int *served, const char **picked, int kind)
{
    convolve_options o = *opt;
    const int nd = li->ndim;
    const size_t C = li->channels;
    const convolve_dtype in_t = li->dtype, out_t = lo->dtype;
    size_t count = C;
    for (int a = 0; a < nd; a++)
        count *= li->shape[a];
    convolve_layout lr, ls_in, ls_out;
    CHECK_OK(ctx, convolve_layout_init(&lr, CONVOLVE_FLOAT64, nd, li->shape, C));
    size_t in_bytes, in_origin, out_bytes, out_origin;
    h_make_layout(&ls_in, in_t, nd, li->shape, C, kind, &in_bytes, &in_origin);
    h_make_layout(&ls_out, out_t, nd, li->shape, C, kind, &out_bytes, &out_origin);
    char *sin = malloc(in_bytes), *sout = malloc(out_bytes);
    void *out = malloc(count * 2);
    double *ref = malloc(count * sizeof(double));
    memset(sin, 0x5A, in_bytes);
    h_scatter(&ls_in, sin + in_origin, in, count);
    convolve_options ro = o; /* the reference in double, no cast */
    ro.backend = CONVOLVE_BACKEND_CPU;
    ro.strategy = "reference";
    ro.integer_cast = CONVOLVE_CAST_ROUND_SATURATE;
    ro.divisor = 0.0;
    CHECK_OK(ctx, convolve_run(ctx, li, in, &lr, ref, f, &ro));

    for (int s = 0; s < nstrat; s++) {
        o.strategy = strategies[s];
        const char *name = strategies[s] ? strategies[s] : "auto";
        convolve_plan *plan = NULL;
        convolve_status st = convolve_plan_create(ctx, &plan, &ls_in, &ls_out, f, &o);
        if (st != CONVOLVE_OK) {
            CHECK(st == CONVOLVE_ERROR_UNSUPPORTED, "%s: %s: %s", name, convolve_status_name(st),
                  convolve_last_error(ctx));
            CHECK(!must_serve || strcmp(must_serve, name) != 0, "'%s' refused scipy's cast: %s",
                  name, convolve_last_error(ctx));
            continue;
        }
        served[s]++;
        if (!strategies[s] && picked)
            *picked = convolve_plan_strategy(plan);
        memset(sout, 0xAB, out_bytes);
        CHECK_OK(ctx, convolve_execute(plan, sin + in_origin, sout + out_origin));
        h_gather(&ls_out, sout + out_origin, out, count);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < count; i++) {
            unsigned long long got = out_t == CONVOLVE_UINT8 ? ((uint8_t *)out)[i]
                                                             : ((uint16_t *)out)[i];
            double dv = o.divisor ? o.divisor : 1.0;
            if (got != cc_model(ref[i], dv, kc, out_t) && bad++ == 0)
                first = i;
        }
        CHECK(bad == 0,
              "%s (%s) %dD %zu ch, %s -> %s, layout %d, mode %s, cval %g, "
              "divisor %g: %zu of %zu differ, first %zu: %llu, model %llu (sum %.17g)",
              name, convolve_plan_strategy(plan), nd, C, convolve_dtype_name(in_t),
              convolve_dtype_name(out_t), kind, convolve_mode_name(o.mode), o.cval, o.divisor, bad,
              count, first,
              out_t == CONVOLVE_UINT8 ? (unsigned long long)((uint8_t *)out)[first]
                                      : (unsigned long long)((uint16_t *)out)[first],
              cc_model(ref[first], o.divisor ? o.divisor : 1.0, kc, out_t), ref[first]);
        convolve_plan_free(plan);
    }
    free(sin);
    free(sout);
    free(out);
    free(ref);
}

/* One random case: a problem (dimensions, odd extents, 1 to 4
 * interleaved channels, every mode, integer, box or fractional weights,
 * separable or dense, an input type of the four) run with each strategy
 * of `strategies` on `backend` and compared with the model. Strategies
 * that refuse must say UNSUPPORTED; `must_serve` of them must serve. */
static void cc_case(convolve_context *ctx, convolve_backend backend, const char *const *strategies,
                    int nstrat, const char *must_serve, size_t max_extent, int *served)
{
    const int nd = (int)h_randint(1, 3);
    size_t shape[3], K[3], n = 1, kc = 1;
    for (int a = 0; a < nd; a++) {
        shape[a] = (size_t)h_randint(1, (long)(nd == 3 ? max_extent / 2 : max_extent));
        K[a] = (size_t)h_randint(1, 5);
        n *= shape[a];
        kc *= K[a];
    }
    const size_t C = (size_t)h_randint(1, 4);
    const convolve_dtype ins[4] = {CONVOLVE_UINT8, CONVOLVE_UINT16, CONVOLVE_FLOAT32,
                                   CONVOLVE_FLOAT64};
    const convolve_dtype in_t = ins[h_randint(0, 3)];
    const convolve_dtype out_t = h_randint(0, 1) ? CONVOLVE_UINT8 : CONVOLVE_UINT16;
    const int kind = (int)h_randint(0, 2); /* 0 integer, 1 box (divisor), 2 fractional */
    const int sep = (int)h_randint(0, 1);
    convolve_options o;
    convolve_options_init(&o);
    o.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    o.mode = (convolve_mode)h_randint(0, 4);
    o.cval = kind == 2 ? h_uniform(-300, 300) : (double)h_randint(-300, 300);
    o.backend = backend;
    o.integer_cast = CONVOLVE_CAST_TRUNCATE;
    o.divisor = kind == 1 ? (double)kc : 0.0;
    for (int a = 0; a < nd; a++)
        o.origin[a] = (ptrdiff_t)h_randint(-(long)(K[a] / 2), (long)((K[a] - 1) / 2));

    double *taps[3] = {NULL, NULL, NULL}, *dense = malloc(kc * sizeof(double));
    for (int a = 0; a < nd; a++) {
        taps[a] = malloc(K[a] * sizeof(double));
        for (size_t k = 0; k < K[a]; k++)
            taps[a][k] = kind == 0 ? (double)h_randint(-3, 3) : kind == 1 ? 1.0 : h_uniform(-2, 2);
        if (kind == 0 && K[a] == 1 && taps[a][0] == 0.0)
            taps[a][0] = 1.0;
    }
    for (size_t i = 0; i < kc; i++) { /* the outer product */
        size_t r = i;
        double w = 1.0;
        for (int a = nd - 1; a >= 0; a--) {
            w *= taps[a][r % K[a]];
            r /= K[a];
        }
        dense[i] = w;
    }
    convolve_filter *f = NULL;
    if (sep)
        CHECK_OK(ctx,
                 convolve_filter_create_separable(ctx, &f, nd, K, (const double *const *)taps));
    else
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, nd, K, dense));

    convolve_layout li, lo;
    CHECK_OK(ctx, convolve_layout_init(&li, in_t, nd, shape, C));
    CHECK_OK(ctx, convolve_layout_init(&lo, out_t, nd, shape, C));
    const size_t count = n * C;
    void *in = malloc(count * 8);
    /* integer inputs over their range; float inputs integers or fractions, large
     * enough that sums overflow the output type (wrap) and go negative */
    if (in_t == CONVOLVE_UINT8 || in_t == CONVOLVE_UINT16) {
        h_fill_typed(in_t, in, count, 1.0);
    } else {
        for (size_t i = 0; i < count; i++) {
            double v = kind == 2 ? h_uniform(-70000, 70000) : (double)h_randint(-70000, 70000);
            if (in_t == CONVOLVE_FLOAT32)
                ((float *)in)[i] = (float)v;
            else
                ((double *)in)[i] = v;
        }
    }
    cc_run(ctx, f, &li, &lo, in, &o, kc, strategies, nstrat, must_serve, served, NULL, 0);
    convolve_filter_free(f);
    for (int a = 0; a < nd; a++)
        free(taps[a]);
    free(dense);
    free(in);
}

/* One random case of the integer images the GPU's kernel of scipy's cast
 * (src/cuda/fast_cast.cu) serves: uint8 or uint16 in and out, 1 to 4
 * channels, odd sizes (some narrower than the filter, some wider than a
 * block's tile), a filter along y only, along x only (each given as taps,
 * or as dense weights), or separable along both, of 1 to 64 taps an axis,
 * every mode, cval, origin and layout kind, integer, box (with the divisor),
 * fractional or normalized fractional taps, on random images or on runs of
 * one value (half the cases: sums of a region at one value, which float
 * sums cannot decide); 1-D signals and 3-D volumes with one tap along axis
 * 0 too. Run with `strategies` as cc_run does, `kernel` (the strategy
 * that runs the kernel) required to serve unless the filter is dense along
 * both axes (then summed as given, which the kernel does not do); *picked
 * receives auto's choice. Returns 1 if `kernel` had to serve. */
static inline int cc_image_case(convolve_context *ctx, convolve_backend backend,
                                const char *const *strategies, int nstrat, const char *kernel,
                                size_t max_extent, int *served, const char **picked)
{
    const int r = (int)h_randint(0, 9);
    const int nd = r == 0 ? 1 : r == 1 ? 3 : 2;
    const int axes = (int)h_randint(0, 3); /* 0 y, 1 x, 2 both, 3 one axis as dense weights */
    size_t shape[3] = {1, 1, 1}, K[3] = {1, 1, 1}, n = 1, kc = 1;
    for (int a = 0; a < nd; a++) {
        const int wide = a == nd - 1 && h_randint(0, 3) == 0; /* past a tile of 256 elements */
        shape[a] = (size_t)h_randint(1, (long)(wide ? 300 : nd == 3 ? 6 : max_extent));
        n *= shape[a];
    }
    const int ya = nd - 2, xa = nd - 1; /* the axes along y and x (ya < 0 for 1-D) */
    for (int a = 0; a < nd; a++) {
        const int active = a == xa ? (nd == 1 || axes != 0) : a == ya ? axes != 1 : 0;
        if (!active)
            continue;
        const int big = (int)h_randint(0, 5);
        K[a] = (size_t)(big == 0 ? 64 : big == 1 ? h_randint(10, 40) : h_randint(1, 9));
    }
    if (axes == 3 && nd > 1 && K[ya] > 1 && K[xa] > 1)
        K[xa] = 1;
    for (int a = 0; a < nd; a++)
        kc *= K[a];
    const int dense = axes == 3 || h_randint(0, 7) == 0;
    const size_t C = (size_t)h_randint(1, 4);
    const convolve_dtype t = h_randint(0, 1) ? CONVOLVE_UINT8 : CONVOLVE_UINT16;
    /* 0 integer, 1 box (divisor), 2 fractional, 3 fractional summing to 1
     * an axis (a Gaussian's kind: sums of a region at one value are integers
     * up to rounding, which float sums cannot tell from below or above) */
    const int kind = (int)h_randint(0, 3);
    convolve_options o;
    convolve_options_init(&o);
    o.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    o.mode = (convolve_mode)h_randint(0, 4);
    o.cval = kind == 2 ? h_uniform(-300, 300) : (double)h_randint(kind == 3 ? 0 : -300, 300);
    o.backend = backend;
    o.integer_cast = CONVOLVE_CAST_TRUNCATE;
    o.divisor = kind == 1 ? (double)kc : 0.0;
    for (int a = 0; a < nd; a++)
        o.origin[a] = (ptrdiff_t)h_randint(-(long)(K[a] / 2), (long)((K[a] - 1) / 2));
    double *taps[3] = {NULL, NULL, NULL}, *w = malloc(kc * sizeof(double));
    for (int a = 0; a < nd; a++) {
        taps[a] = malloc(K[a] * sizeof(double));
        double sum = 0.0;
        for (size_t k = 0; k < K[a]; k++) {
            taps[a][k] = kind == 0   ? (double)h_randint(-3, 3)
                         : kind == 1 ? 1.0
                         : kind == 2 ? h_uniform(-1, 2)
                                     : h_uniform(0.05, 1);
            sum += taps[a][k];
        }
        if (kind == 3)
            for (size_t k = 0; k < K[a]; k++)
                taps[a][k] /= sum;
        if (K[a] == 1 && kind != 1 && kind != 3) /* a tap that scales */
            taps[a][0] = kind == 0 ? (double)h_randint(1, 2) : h_uniform(0.5, 1.5);
    }
    for (size_t i = 0; i < kc; i++) { /* the outer product */
        size_t q = i;
        double v = 1.0;
        for (int a = nd - 1; a >= 0; a--) {
            v *= taps[a][q % K[a]];
            q /= K[a];
        }
        w[i] = v;
    }
    convolve_filter *f = NULL;
    if (dense)
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, nd, K, w));
    else
        CHECK_OK(ctx,
                 convolve_filter_create_separable(ctx, &f, nd, K, (const double *const *)taps));
    convolve_layout li, lo;
    CHECK_OK(ctx, convolve_layout_init(&li, t, nd, shape, C));
    CHECK_OK(ctx, convolve_layout_init(&lo, t, nd, shape, C));
    void *in = malloc(n * C * 2);
    h_fill_typed(t, in, n * C, 1.0);
    if (h_randint(0, 1)) { /* runs of one value (0 and the type's largest among them) */
        const long top = t == CONVOLVE_UINT8 ? 255 : 65535;
        for (size_t i = 0; i < n * C;) {
            const long pick = h_randint(0, 3);
            const long v = pick == 0 ? 0 : pick == 1 ? top : h_randint(0, top);
            for (size_t r = (size_t)h_randint(1, (long)(3 * max_extent)); r > 0 && i < n * C;
                 r--, i++) {
                if (t == CONVOLVE_UINT8)
                    ((uint8_t *)in)[i] = (uint8_t)v;
                else
                    ((uint16_t *)in)[i] = (uint16_t)v;
            }
        }
    }
    const int expect = !(dense && nd > 1 && K[ya] > 1 && K[xa] > 1);
    cc_run(ctx, f, &li, &lo, in, &o, kc, strategies, nstrat, expect ? kernel : NULL, served, picked,
           (int)h_randint(0, H_LAYOUT_KINDS - 1));
    convolve_filter_free(f);
    for (int a = 0; a < nd; a++)
        free(taps[a]);
    free(w);
    free(in);
    return expect;
}

/* One 2-D integer image filtered along y only with K positive taps
 * (normalized fractional, a Gaussian's kind, or a box with the divisor):
 * rows x width pixels of 1 to 4 channels, rows whose bytes allow 4-element
 * loads, every mode (a cval of zero or a positive integer), any origin,
 * random values or runs of one value (0 and the type's largest among
 * them), the layout packed: the y pass the Python package runs for
 * Gaussian and box filters (src/cuda/fast_cast.cu's cvk_cast_ypass_kernel),
 * on images tall enough for many of its strips. Run with `strategies` as
 * cc_run does; `kernel` must serve. */
static inline void cc_ypass_case(convolve_context *ctx, convolve_backend backend,
                                 const char *const *strategies, int nstrat, const char *kernel,
                                 size_t K, size_t rows, convolve_dtype t, int *served)
{
    const size_t C = (size_t)h_randint(1, 4);
    size_t width = (size_t)h_randint(1, 700);
    while (width * C % 4)
        width++;
    const size_t shape[2] = {rows, width}, Ks[2] = {K, 1};
    const int box = h_randint(0, 2) == 0;
    double *ty = malloc(K * sizeof(double)), tx = 1.0, sum = 0.0;
    for (size_t k = 0; k < K; k++)
        sum += ty[k] = box ? 1.0 : h_uniform(0.05, 1);
    if (!box)
        for (size_t k = 0; k < K; k++)
            ty[k] /= sum;
    const double *taps[2] = {ty, &tx};
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, 2, Ks, taps));
    convolve_options o;
    convolve_options_init(&o);
    o.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    o.mode = (convolve_mode)h_randint(0, 4);
    o.cval = h_randint(0, 1) ? 0.0 : (double)h_randint(1, 300);
    o.backend = backend;
    o.integer_cast = CONVOLVE_CAST_TRUNCATE;
    o.divisor = box ? (double)K : 0.0;
    o.origin[0] = (ptrdiff_t)h_randint(-(long)(K / 2), (long)((K - 1) / 2));
    convolve_layout li, lo;
    CHECK_OK(ctx, convolve_layout_init(&li, t, 2, shape, C));
    CHECK_OK(ctx, convolve_layout_init(&lo, t, 2, shape, C));
    const size_t n = rows * width * C;
    void *in = malloc(n * 2);
    h_fill_typed(t, in, n, 1.0);
    if (h_randint(0, 1)) {
        const long top = t == CONVOLVE_UINT8 ? 255 : 65535;
        for (size_t i = 0; i < n;) {
            const long pick = h_randint(0, 3);
            const long v = pick == 0 ? 0 : pick == 1 ? top : h_randint(0, top);
            for (size_t r = (size_t)h_randint(1, (long)(3 * width * C)); r > 0 && i < n; r--, i++) {
                if (t == CONVOLVE_UINT8)
                    ((uint8_t *)in)[i] = (uint8_t)v;
                else
                    ((uint16_t *)in)[i] = (uint16_t)v;
            }
        }
    }
    cc_run(ctx, f, &li, &lo, in, &o, K, strategies, nstrat, kernel, served, NULL, 0);
    convolve_filter_free(f);
    free(ty);
    free(in);
}

#endif

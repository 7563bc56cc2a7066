/*
 * test_cpu_image.c - the `image` CPU strategy (src/cpu/image*.c) against the
 * exact double-precision reference on fresh random data: uint8 and uint16
 * input, uint8/uint16/float32 output; gray, 2, 3 (RGB), 4 (RGBA), 5 and 7
 * channels interleaved; 1-D and 2-D; sizes from 1x1, 1xN and Nx1 up to
 * several column tiles and bands; every mode, CONSTANT with integer,
 * non-integer and negative cval; origins at both ends; convolve and
 * correlate; Gaussian and box (named), equal-tap boxes of any scale, random
 * separable (symmetric or not, even extents, longer than the image), dyadic
 * taps, dense random and integer filters; padded row pitches, sub-regions
 * and negative row strides in and out; 1 and 2 threads.
 *
 * Each output is checked exactly against the documented rounding
 * (docs/cpu-fast.md, cvcpu_image_bound): an integer output must equal the
 * exact result rounded to nearest (ties to even) and saturated, except where
 * the exact result lies within the bound of the half-integer between the
 * two neighbours, where the other neighbour is allowed; float32 outputs lie
 * within the bound (plus float32's own rounding). Box filters with taps 1/K
 * (box:R), dyadic taps and integer dense weights must be exact everywhere.
 * Outputs are poisoned first and bytes outside the output view must stay
 * poisoned. Results must not depend on the thread count, `fast` must give
 * the image strategy's results, and the strategy must refuse (UNSUPPORTED,
 * with a reason) what it does not serve.
 */
#include "harness.h"
#include "internal.h"
#include "cpu/cpu_backend.h"
#include "cpu/fast.h"
#include "cpu/image.h"

static convolve_context *ctx;

enum {
    F_GAUSS,    /* gaussian:S */
    F_BOX,      /* box:R (taps 1/(2R+1)): exact */
    F_EQUAL,    /* all taps equal to some a (per axis), any extent */
    F_SEP,      /* random signed separable taps */
    F_SYM,      /* random positive symmetric taps */
    F_DYADIC,   /* taps k / 2^p: float sums exact, so outputs exact */
    F_DENSE,    /* random signed dense weights */
    F_INTDENSE, /* dense integer weights: exact */
    F_KINDS
};

static const char *k_kind_names[F_KINDS] = {"gauss", "box",    "equal", "sep",
                                            "sym",   "dyadic", "dense", "intdense"};

typedef struct {
    int ndim;
    size_t H, W, C;
    convolve_dtype tin, tout;
    int kind;
    size_t K1, K2;     /* extents (K1 = 1 for 1-D) */
    double sigma;      /* F_GAUSS */
    int radius;        /* F_BOX */
    size_t ipad, opad; /* extra elements per row */
    int ineg, oneg;    /* rows in reverse order in memory */
    int narrow;        /* input values in [0, 16) (ties more likely) */
    convolve_options opt;
    double grid; /* F_DYADIC, F_INTDENSE: 2^p * sum|w| (all weights are
                               multiples of 2^-p), set by make_filter */
} icase;

static void describe(const icase *c, char *s, size_t n)
{
    snprintf(s, n,
             "%dD %zux%zu c%zu %s K=%zux%zu %s->%s %s cval=%g %s origin=%td,%td threads=%d "
             "pad=%zu/%zu neg=%d/%d%s",
             c->ndim, c->H, c->W, c->C, k_kind_names[c->kind], c->K1, c->K2,
             convolve_dtype_name(c->tin), convolve_dtype_name(c->tout),
             convolve_mode_name(c->opt.mode), c->opt.cval,
             c->opt.operation == CONVOLVE_OP_CORRELATE ? "correlate" : "convolve", c->opt.origin[0],
             c->opt.origin[1], c->opt.threads, c->ipad, c->opad, c->ineg, c->oneg,
             c->narrow ? " narrow" : "");
}

/* The filter of a case (NULL on failure, which is checked). */
static convolve_filter *make_filter(icase *c)
{
    convolve_filter *f = NULL;
    char spec[64];
    size_t shape[2] = {c->K1, c->K2};
    const size_t *sh = c->ndim == 2 ? shape : shape + 1;
    if (c->kind == F_GAUSS || c->kind == F_BOX) {
        if (c->kind == F_GAUSS)
            snprintf(spec, sizeof spec, "gaussian:%.17g", c->sigma);
        else
            snprintf(spec, sizeof spec, "box:%d", c->radius);
        CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, spec, c->ndim));
        return f;
    }
    if (c->kind == F_DENSE || c->kind == F_INTDENSE) {
        size_t n = c->K1 * c->K2;
        double *w = malloc(n * sizeof *w);
        h_fill(w, n);
        if (c->kind == F_INTDENSE)
            for (size_t i = 0; i < n; i++)
                w[i] = (double)h_randint(-3, 4);
        if (c->kind == F_INTDENSE && w[0] == 0)
            w[0] = 1;
        c->grid = 0;
        for (size_t i = 0; i < n; i++)
            c->grid += fabs(w[i]);
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, sh, w));
        free(w);
        return f;
    }
    double *t[2];
    c->grid = 1;
    for (int a = 0; a < 2; a++) {
        size_t K = a ? c->K2 : c->K1;
        t[a] = malloc(K * sizeof(double));
        h_fill(t[a], K);
        double eq = h_randint(0, 2) == 0 ? 1.0 : h_uniform(0.05, 0.6);
        int p = (int)h_randint(1, 3);
        for (size_t k = 0; k < K; k++) {
            switch (c->kind) {
            case F_EQUAL: t[a][k] = eq; break;
            case F_SYM: t[a][k] = fabs(t[a][K - 1 - k < k ? K - 1 - k : k]) + 0.01; break;
            case F_DYADIC: t[a][k] = (double)h_randint(0, 4) / (double)(1 << p); break;
            default: break;
            }
        }
        if (c->kind == F_SYM)
            for (size_t k = 0; k < K / 2; k++)
                t[a][K - 1 - k] = t[a][k];
        if (c->kind == F_DYADIC && t[a][0] == 0)
            t[a][0] = 0.5;
        double sum = 0;
        for (size_t k = 0; k < K; k++)
            sum += fabs(t[a][k]);
        c->grid *= sum * (double)(1 << p);
    }
    const double *const taps2[2] = {t[0], t[1]};
    CHECK_OK(ctx,
             convolve_filter_create_separable(ctx, &f, c->ndim, c->ndim == 2 ? shape : shape + 1,
                                              c->ndim == 2 ? taps2 : taps2 + 1));
    free(t[0]);
    free(t[1]);
    return f;
}

/* An image layout over a buffer: pitch = W*C + pad elements per row; with
 * neg, row 0 is the last in memory. *base is element 0's byte offset. */
static convolve_layout image_layout(const icase *c, convolve_dtype t, size_t pad, int neg,
                                    size_t *base, size_t *bytes)
{
    convolve_layout l;
    size_t shape[2] = {c->H, c->W};
    convolve_layout_init(&l, t, c->ndim, c->ndim == 2 ? shape : shape + 1, c->C);
    size_t es = convolve_dtype_size(t), pitch = (c->W * c->C + pad) * es;
    l.channel_stride = (ptrdiff_t)es;
    l.strides[c->ndim - 1] = (ptrdiff_t)(c->C * es);
    *base = 0;
    if (c->ndim == 2) {
        l.strides[0] = neg ? -(ptrdiff_t)pitch : (ptrdiff_t)pitch;
        if (neg)
            *base = (c->H - 1) * pitch;
    }
    *bytes = (c->ndim == 2 ? c->H : 1) * pitch;
    return l;
}

/* Element i (C order, channels last) of an image layout at buf + base. */
static double image_get(const convolve_layout *l, const char *p, const icase *c, size_t i)
{
    size_t ch = i % c->C, x = (i / c->C) % c->W, y = i / c->C / c->W;
    ptrdiff_t off = (ptrdiff_t)ch * l->channel_stride + (ptrdiff_t)x * l->strides[l->ndim - 1];
    if (l->ndim == 2)
        off += (ptrdiff_t)y * l->strides[0];
    return h_get(l->dtype, p + off, 0);
}

/* The exact rounding of v to an integer type, as cvi_store_double. */
static double round_sat(convolve_dtype t, double v)
{
    double top = t == CONVOLVE_UINT8 ? 255 : 65535;
    if (!(v > 0))
        return 0;
    return v >= top ? top : rint(v);
}

typedef struct {
    size_t count, off_by_one, bad, first_bad;
    double got_bad, exact_bad;
} verdict;

/* Compares got (layout lo at obase) with the exact values; bound as
 * cvcpu_image_bound. */
static verdict judge(const icase *c, const convolve_layout *lo, const char *o, const double *exact,
                     double bound)
{
    verdict v = {0, 0, 0, 0, 0, 0};
    v.count = (c->ndim == 2 ? c->H : 1) * c->W * c->C;
    /* the reference's own error (double, same sums) is far below 1e-9 */
    const double slack = 1e-9;
    for (size_t i = 0; i < v.count; i++) {
        double g = image_get(lo, o, c, i), e = exact[i];
        int ok;
        if (c->tout == CONVOLVE_FLOAT32) {
            ok = fabs(g - e) <= bound + fabs(e) * 0x1.0p-24 + slack;
        } else {
            double want = round_sat(c->tout, e);
            ok = g == want;
            if (!ok && fabs(g - want) == 1) { /* allowed within the bound of the half between */
                double half = 0.5 * (g + want);
                ok = fabs(e - half) <= bound + slack;
                v.off_by_one += ok;
            }
        }
        if (!ok) {
            if (!v.bad) {
                v.first_bad = i;
                v.got_bad = g;
                v.exact_bad = e;
            }
            v.bad++;
        }
    }
    return v;
}

/* 1 if every byte of buf outside the view equals the poison byte. */
static int untouched_outside(const icase *c, const convolve_layout *l, const unsigned char *buf,
                             size_t base, size_t bytes)
{
    unsigned char *mark = calloc(bytes, 1);
    size_t es = convolve_dtype_size(l->dtype), n = (c->ndim == 2 ? c->H : 1) * c->W;
    for (size_t px = 0; px < n; px++) {
        size_t x = px % c->W, y = px / c->W;
        ptrdiff_t off = (ptrdiff_t)base + (ptrdiff_t)x * l->strides[l->ndim - 1] +
                        (l->ndim == 2 ? (ptrdiff_t)y * l->strides[0] : 0);
        memset(mark + off, 1, c->C * es);
    }
    int ok = 1;
    for (size_t i = 0; i < bytes && ok; i++)
        ok = mark[i] || buf[i] == 0xAB;
    free(mark);
    return ok;
}

static double g_worst_ratio = 0; /* largest |got - exact| / bound seen (float32 out) */
static size_t g_cases = 0, g_off_by_one = 0, g_outputs = 0;

/* Runs one case; returns 1 if it ran. */
static int run_case(icase *c)
{
    char tag[400];
    describe(c, tag, sizeof tag);
    convolve_filter *f = make_filter(c);
    if (!f)
        return 0;

    size_t ibase, ibytes, obase, obytes;
    convolve_layout li = image_layout(c, c->tin, c->ipad, c->ineg, &ibase, &ibytes);
    convolve_layout lo = image_layout(c, c->tout, c->opad, c->oneg, &obase, &obytes);
    size_t ies = convolve_dtype_size(c->tin);
    char *ibuf = malloc(ibytes + 16);
    h_fill_typed(c->tin, ibuf, ibytes / ies, 1.0);
    if (c->narrow)
        for (size_t i = 0; i < ibytes / ies; i++) {
            if (c->tin == CONVOLVE_UINT8)
                ((uint8_t *)ibuf)[i] &= 15;
            else
                ((uint16_t *)(void *)ibuf)[i] &= 15;
        }
    const char *in = ibuf + ibase;
    size_t count = (c->ndim == 2 ? c->H : 1) * c->W * c->C;
    double xmax = 0;
    for (size_t i = 0; i < count; i++) {
        double v = image_get(&li, in, c, i);
        if (v > xmax)
            xmax = v;
    }
    if (c->opt.mode == CONVOLVE_MODE_CONSTANT && fabs(c->opt.cval) > xmax)
        xmax = fabs(c->opt.cval);

    /* exact values: the reference into float64 */
    convolve_layout lref;
    size_t shape[2] = {c->H, c->W};
    convolve_layout_init(&lref, CONVOLVE_FLOAT64, c->ndim, c->ndim == 2 ? shape : shape + 1, c->C);
    double *exact = malloc(count * sizeof *exact);
    convolve_options ro = c->opt;
    ro.backend = CONVOLVE_BACKEND_CPU;
    ro.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &li, in, &lref, exact, f, &ro));

    /* the image strategy */
    convolve_options so = c->opt;
    so.backend = CONVOLVE_BACKEND_CPU;
    so.strategy = "image";
    convolve_plan *plan = NULL;
    convolve_status st = convolve_plan_create(ctx, &plan, &li, &lo, f, &so);
    CHECK(st == CONVOLVE_OK, "%s: plan: %s: %s", tag, convolve_status_name(st),
          convolve_last_error(ctx));
    unsigned char *obuf = malloc(obytes), *obuf2 = malloc(obytes);
    int ran = 0;
    if (st == CONVOLVE_OK) {
        double bound = cvcpu_image_bound(&plan->problem, xmax);
        int box = cvcpu_image_is_box(&plan->problem);
        memset(obuf, 0xAB, obytes);
        CHECK_OK(ctx, convolve_execute(plan, in, obuf + obase));
        CHECK(untouched_outside(c, &lo, obuf, obase, obytes), "%s: wrote outside the output view",
              tag);
        verdict v = judge(c, &lo, (const char *)obuf + obase, exact, bound);
        CHECK(v.bad == 0,
              "%s: %zu of %zu outputs outside the documented rounding (first %zu: got %.9g, "
              "exact %.12g, bound %.3g)",
              tag, v.bad, v.count, v.first_bad, v.got_bad, v.exact_bad, bound);
        /* exact everywhere: box:R on the box path; dyadic taps and integer
         * weights while every partial sum is a float (integer cval) */
        int cint = c->opt.mode != CONVOLVE_MODE_CONSTANT || c->opt.cval == floor(c->opt.cval);
        int exact_kind = (c->kind == F_BOX && box) ||
                         ((c->kind == F_DYADIC || c->kind == F_INTDENSE) && cint &&
                          xmax * c->grid <= 0x1.0p22);
        if (exact_kind && c->tout != CONVOLVE_FLOAT32)
            CHECK(v.off_by_one == 0, "%s: %zu outputs off by one where exact rounding is claimed",
                  tag, v.off_by_one);
        if (c->kind == F_BOX || c->kind == F_EQUAL)
            CHECK(box == (c->opt.mode != CONVOLVE_MODE_CONSTANT ||
                          (c->opt.cval >= 0 && c->opt.cval == floor(c->opt.cval))),
                  "%s: the box path was%s taken", tag, box ? "" : " not");
        if (c->tout == CONVOLVE_FLOAT32 && bound > 0)
            for (size_t i = 0; i < count; i++) {
                double r = fabs(image_get(&lo, (const char *)obuf + obase, c, i) - exact[i]) /
                           (bound + fabs(exact[i]) * 0x1.0p-24);
                if (r > g_worst_ratio)
                    g_worst_ratio = r;
            }
        g_off_by_one += v.off_by_one;
        g_outputs += v.count;
        g_cases++;
        ran = 1;

        /* the other thread count gives the same bytes; `fast` takes this path */
        convolve_options to = so;
        to.threads = c->opt.threads == 1 ? 2 : 1;
        if (h_randint(0, 1))
            to.strategy = "fast";
        memset(obuf2, 0xAB, obytes);
        CHECK_OK(ctx, convolve_run(ctx, &li, in, &lo, obuf2 + obase, f, &to));
        CHECK(memcmp(obuf, obuf2, obytes) == 0, "%s: %s with %d threads differs", tag, to.strategy,
              to.threads);
    }
    convolve_plan_free(plan);
    convolve_filter_free(f);
    free(ibuf), free(exact), free(obuf), free(obuf2);
    return ran;
}

static const convolve_dtype k_out[3] = {CONVOLVE_UINT8, CONVOLVE_UINT16, CONVOLVE_FLOAT32};
static const size_t k_channels[8] = {1, 1, 3, 4, 2, 3, 5, 7};

/* Origins inside the filter: sometimes at either end. */
static ptrdiff_t random_origin(size_t K)
{
    long k = (long)K;
    switch (h_randint(0, 3)) {
    case 0: return -(k / 2);
    case 1: return (k - 1) / 2;
    default: return h_randint(-(k / 2), (k - 1) / 2);
    }
}

static icase random_case(int big)
{
    icase c;
    memset(&c, 0, sizeof c);
    convolve_options_init(&c.opt);
    c.ndim = h_randint(0, 9) ? 2 : 1;
    c.C = k_channels[h_randint(0, 7)];
    c.tin = h_randint(0, 2) ? CONVOLVE_UINT8 : CONVOLVE_UINT16;
    c.tout = h_randint(0, 1) ? c.tin : k_out[h_randint(0, 2)];
    static const size_t tiny[6] = {1, 1, 2, 3, 5, 7};
    c.H = c.ndim == 1       ? 1
          : h_randint(0, 3) ? (size_t)h_randint(1, big ? 150 : 40)
                            : tiny[h_randint(0, 5)];
    c.W = h_randint(0, 3) ? (size_t)h_randint(1, big ? 900 : 60) : tiny[h_randint(0, 5)];
    c.kind = (int)h_randint(0, F_KINDS - 1);
    c.K1 = c.ndim == 2 ? (size_t)h_randint(1, big ? 21 : 9) : 1;
    c.K2 = (size_t)h_randint(1, big ? 21 : 9);
    if (c.kind == F_GAUSS) {
        c.sigma = h_uniform(0.2, big ? 5.0 : 2.2);
        c.K1 = c.ndim == 2 ? 2 * (size_t)floor(4 * c.sigma + 0.5) + 1 : 1;
        c.K2 = 2 * (size_t)floor(4 * c.sigma + 0.5) + 1;
    } else if (c.kind == F_BOX) {
        c.radius = (int)h_randint(0, big ? 15 : 4);
        c.K1 = c.ndim == 2 ? 2 * (size_t)c.radius + 1 : 1;
        c.K2 = 2 * (size_t)c.radius + 1;
    } else if (c.kind == F_DENSE || c.kind == F_INTDENSE) {
        while (c.K1 * c.K2 > CVCPU_IMAGE_DENSE_MAX)
            c.K2--;
    }
    switch (h_randint(0, 5)) {
    case 0:
        c.opt.mode = CONVOLVE_MODE_CONSTANT;
        c.opt.cval = (double)h_randint(0, 255);
        break;
    case 1:
        c.opt.mode = CONVOLVE_MODE_CONSTANT;
        c.opt.cval = h_uniform(-3, 300);
        break;
    default:
        c.opt.mode = (convolve_mode)h_randint(0, 4);
        c.opt.cval = -2;
        break;
    }
    c.opt.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    if (c.ndim == 2) {
        c.opt.origin[0] = random_origin(c.K1);
        c.opt.origin[1] = random_origin(c.K2);
    } else {
        c.opt.origin[0] = random_origin(c.K2);
    }
    c.opt.threads = (int)h_randint(1, 2);
    c.ipad = h_randint(0, 1) ? 0 : (size_t)h_randint(1, 9);
    c.opad = h_randint(0, 1) ? 0 : (size_t)h_randint(1, 9);
    c.ineg = h_randint(0, 4) == 0;
    c.oneg = h_randint(0, 4) == 0;
    c.narrow = h_randint(0, 5) == 0;
    return c;
}

/* Filters and layouts the strategy must refuse, with a reason. */
static void refusals(void)
{
    size_t shape[3] = {6, 7, 5}, k3[3] = {3, 3, 3};
    double w[729];
    for (int i = 0; i < 729; i++)
        w[i] = 0.01 * (i % 7 + 1);
    convolve_filter *f2 = NULL, *f3 = NULL, *big = NULL;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f2, "gaussian:1", 2));
    CHECK_OK(ctx, convolve_filter_create(ctx, &f3, 3, k3, w));
    size_t k9[2] = {9, 10}; /* 90 dense weights */
    CHECK_OK(ctx, convolve_filter_create(ctx, &big, 2, k9, w));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "image";
    convolve_layout a, b;
    convolve_plan *p = NULL;
    /* float input, float64 output, 3-D, planar channels, a big dense filter */
    convolve_layout_init(&a, CONVOLVE_FLOAT32, 2, shape, 3);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &a, f2, &o), CONVOLVE_ERROR_UNSUPPORTED);
    convolve_layout_init(&a, CONVOLVE_UINT8, 2, shape, 3);
    convolve_layout_init(&b, CONVOLVE_FLOAT64, 2, shape, 3);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &b, f2, &o), CONVOLVE_ERROR_UNSUPPORTED);
    convolve_layout_init(&a, CONVOLVE_UINT8, 3, shape, 1);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &a, f3, &o), CONVOLVE_ERROR_UNSUPPORTED);
    convolve_layout_init(&a, CONVOLVE_UINT8, 2, shape, 3);
    a.channel_stride = (ptrdiff_t)(shape[0] * shape[1]);
    a.strides[1] = 1;
    a.strides[0] = (ptrdiff_t)shape[1];
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &a, f2, &o), CONVOLVE_ERROR_UNSUPPORTED);
    convolve_layout_init(&a, CONVOLVE_UINT16, 2, shape, 1);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &a, big, &o), CONVOLVE_ERROR_UNSUPPORTED);
    /* no AVX2: refused (the other strategies serve) */
    cvcpu_fast_limit_isa(0);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &a, &a, f2, &o), CONVOLVE_ERROR_UNSUPPORTED);
    cvcpu_fast_limit_isa(-1);
    convolve_filter_free(f2);
    convolve_filter_free(f3);
    convolve_filter_free(big);
}

/* Hand-picked: the benchmark's filters on an image of several column tiles
 * and bands, every channel count the benchmark uses, every mode. */
static void larger(void)
{
    static const char *filters[] = {"gaussian:0.5", "gaussian:2", "gaussian:4", "box:1", "box:15"};
    for (int i = 0; i < 5; i++) {
        icase c;
        memset(&c, 0, sizeof c);
        convolve_options_init(&c.opt);
        c.ndim = 2;
        c.C = (size_t)(i % 3 == 0 ? 1 : i % 3 == 1 ? 3 : 4);
        c.H = 61 + (size_t)i;
        c.W = (i == 4 ? 4400 : 2300) + (size_t)i; /* box: wider than a box tile */
        c.tin = CONVOLVE_UINT8;
        c.tout = i == 2 ? CONVOLVE_UINT16 : CONVOLVE_UINT8;
        c.opt.mode = (convolve_mode)i;
        c.opt.cval = 7;
        c.opt.threads = 2;
        c.opt.operation = CONVOLVE_OP_CORRELATE;
        if (filters[i][0] == 'g') {
            c.kind = F_GAUSS;
            c.sigma = atof(filters[i] + 9);
            c.K1 = c.K2 = 2 * (size_t)floor(4 * c.sigma + 0.5) + 1;
        } else {
            c.kind = F_BOX;
            c.radius = atoi(filters[i] + 4);
            c.K1 = c.K2 = 2 * (size_t)c.radius + 1;
        }
        run_case(&c);
    }
    /* outputs past 16 MB: stored around the caches (aligned 32-byte blocks,
     * unaligned ends) */
    for (int i = 0; i < 2; i++) {
        icase c;
        memset(&c, 0, sizeof c);
        convolve_options_init(&c.opt);
        c.ndim = 2;
        c.C = 4;
        c.H = i ? 1030 : 2049;
        c.W = 2101;
        c.tin = CONVOLVE_UINT8;
        c.tout = i ? CONVOLVE_UINT16 : CONVOLVE_UINT8;
        c.opt.mode = CONVOLVE_MODE_REFLECT;
        c.opt.threads = 2;
        c.opt.operation = CONVOLVE_OP_CORRELATE;
        c.opad = (size_t)i * 3;
        c.kind = i ? F_GAUSS : F_BOX;
        c.sigma = 0.5;
        c.radius = 1;
        c.K1 = c.K2 = i ? 5 : 3;
        run_case(&c);
    }
}

int main(int argc, char **argv)
{
    h_seed("test_cpu_image");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    char why[CVI_REASON_SIZE];
    cvi_problem probe;
    memset(&probe, 0, sizeof probe);
    probe.ndim = 2;
    probe.in_type = probe.out_type = CONVOLVE_UINT8;
    probe.channels = 1;
    probe.in_strides[2] = probe.out_strides[2] = 1;
    probe.separable = 1;
    if (cvcpu_image_check(&probe, why, sizeof why) != CONVOLVE_OK) {
        printf("test_cpu_image: skipped: %s\n", why);
        convolve_context_free(ctx);
        return 77;
    }
    refusals();
    /* every instruction set's kernels this CPU runs (AVX-512, then AVX2) */
    for (int isa = CVCPU_ISA_AVX512; isa >= CVCPU_ISA_AVX2; isa--) {
        cvcpu_fast_limit_isa(isa);
        if (isa == CVCPU_ISA_AVX512 && cvcpu_isa() < isa)
            continue;
        for (int r = 0; r < rounds && h_failures <= 30; r++) {
            icase c = random_case(0);
            run_case(&c);
        }
        for (int r = 0; r < rounds / 20 && h_failures <= 30; r++) {
            icase c = random_case(1);
            run_case(&c);
        }
        larger();
    }
    cvcpu_fast_limit_isa(-1);
    printf("test_cpu_image: %zu cases, %zu outputs, %zu off by one within the bound; float32 "
           "errors up to %.3f of the bound\n",
           g_cases, g_outputs, g_off_by_one, g_worst_ratio);
    convolve_context_free(ctx);
    return h_finish("test_cpu_image");
}

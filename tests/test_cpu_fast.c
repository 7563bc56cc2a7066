/*
 * test_cpu_fast.c - the fast CPU strategies (fast, direct, separable, fft)
 * against the exact reference on fresh random data: dims 1-3, odd, even and
 * one-element extents, filters longer than the input, every mode with a
 * non-zero cval, origins at both ends, convolve and correlate, every dtype
 * in and out, channels 1/3/4, pitched, negative-stride, planar and
 * broadcast layouts, dense and separable filters, 1 and 2 threads, and each
 * instruction set (portable C, AVX2, AVX-512) the CPU has.
 *
 * Outputs are poisoned first; bytes of the output buffer outside the view
 * must stay poisoned. Float results must lie within tol + |ref| * eps of the
 * reference per element (tol = eps * sum |w| * max |x|, eps = 1e-5 for float
 * compute, 1e-12 double, 1e-7 double stored as float32), and the L2 error
 * within eps of max(||ref||, 0.1 * sum |w| * max |x| * sqrt(n)): random
 * signed weights cancel, and float accumulation is accurate relative to the
 * sum of |terms|, not to a result near zero. Cases with positive data and
 * weights (as the benchmarks) must meet relative L2 <= eps itself. Integer
 * results lie within 1 of the reference.
 */
#include "harness.h"
#include "cpu/cpu_backend.h"
#include "cpu/fast.h"

static convolve_context *ctx;

/* the last is the reference itself, run only when asked for by name (it
 * checks the harness: layouts, poisoning, comparison) */
static const char *k_strategies[] = {"fast", "direct", "separable", "fft", "reference"};
#define NSTRAT 4

/* A random strided layout over a buffer: *base is the offset in bytes of
 * element 0 from the buffer's start, *bytes the buffer size. */
typedef struct {
    convolve_layout lay;
    size_t base, bytes;
} view;

static view make_view(convolve_dtype t, int ndim, const size_t *shape, size_t channels, int kind,
                      int allow_zero)
{
    view v;
    memset(&v, 0, sizeof v);
    convolve_layout_init(&v.lay, t, ndim, shape, channels);
    size_t es = convolve_dtype_size(t);
    if (kind == 0) { /* contiguous */
        v.bytes = convolve_layout_count(&v.lay) * es;
        return v;
    }
    /* dims in memory order, innermost first: channel first (interleaved) or
     * last (planar); each stride skips `gap` extra elements */
    size_t ext[4];
    ptrdiff_t *str[4];
    int nd = 0;
    int planar = kind == 3;
    if (!planar) {
        ext[nd] = channels;
        str[nd++] = &v.lay.channel_stride;
    }
    for (int a = ndim - 1; a >= 0; a--) {
        ext[nd] = shape[a];
        str[nd++] = &v.lay.strides[a];
    }
    if (planar) {
        ext[nd] = channels;
        str[nd++] = &v.lay.channel_stride;
    }
    size_t span = 1; /* elements */
    for (int d = 0; d < nd; d++) {
        size_t step = span * (kind == 1 && d == 0 ? (size_t)h_randint(1, 2) : 1);
        *str[d] = (ptrdiff_t)(step * es);
        span = step * ext[d] + (kind == 1 ? (size_t)h_randint(0, 3) : 0);
    }
    /* negative strides (kind 2) and a broadcast axis (inputs only) */
    ptrdiff_t low = 0, high = 0;
    for (int d = 0; d < nd; d++) {
        if (kind == 2 && h_randint(0, 1))
            *str[d] = -*str[d];
        if (allow_zero && kind == 4 && d > 0 && d == nd - 1)
            *str[d] = 0;
        ptrdiff_t reach = (ptrdiff_t)(ext[d] - 1) * *str[d];
        if (reach < 0)
            low += reach;
        else
            high += reach;
    }
    v.base = (size_t)(-low);
    v.bytes = (size_t)(high - low) + es;
    return v;
}

/* Byte offset of element (i0, i1, i2, c) (i padded to 3 axes, slowest first). */
static ptrdiff_t view_offset(const view *v, const size_t *idx, size_t c)
{
    int nd = v->lay.ndim;
    ptrdiff_t off = (ptrdiff_t)v->base + (ptrdiff_t)c * v->lay.channel_stride;
    for (int a = 0; a < nd; a++)
        off += (ptrdiff_t)idx[3 - nd + a] * v->lay.strides[a];
    return off;
}

/* Reads a view of the buffer that starts at buf into doubles, in C order
 * with channels last. */
static void view_read(const view *v, const void *buf, double *dst)
{
    size_t sh[3] = {1, 1, 1};
    int nd = v->lay.ndim;
    for (int a = 0; a < nd; a++)
        sh[3 - nd + a] = v->lay.shape[a];
    size_t k = 0, idx[3];
    for (idx[0] = 0; idx[0] < sh[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < sh[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < sh[2]; idx[2]++)
                for (size_t c = 0; c < v->lay.channels; c++)
                    dst[k++] = h_get(v->lay.dtype, (const char *)buf + view_offset(v, idx, c), 0);
}

/* 1 if every byte of buf outside the view still holds the poison of `clean`. */
static int untouched_outside(const view *v, const unsigned char *buf, const unsigned char *clean)
{
    unsigned char *mark = calloc(v->bytes, 1);
    size_t sh[3] = {1, 1, 1}, es = convolve_dtype_size(v->lay.dtype), idx[3];
    int nd = v->lay.ndim, ok = 1;
    for (int a = 0; a < nd; a++)
        sh[3 - nd + a] = v->lay.shape[a];
    for (idx[0] = 0; idx[0] < sh[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < sh[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < sh[2]; idx[2]++)
                for (size_t c = 0; c < v->lay.channels; c++)
                    memset(mark + view_offset(v, idx, c), 1, es);
    for (size_t i = 0; i < v->bytes && ok; i++)
        if (!mark[i] && buf[i] != clean[i])
            ok = 0;
    free(mark);
    return ok;
}

typedef struct {
    int ndim;
    size_t shape[3], kshape[3], channels;
    int separable;
    int positive; /* data and weights in [0, 1): relative L2 <= eps strictly */
    convolve_dtype tin, tout;
    int in_kind, out_kind;
    convolve_options opt;
} fcase;

static void describe(const fcase *c, char *s, size_t n)
{
    snprintf(s, n,
             "%dD %zux%zux%zu c%zu k=%zux%zux%zu%s %s->%s in%d out%d %s %s cval=%g "
             "origin=%td,%td,%td threads=%d",
             c->ndim, c->shape[0], c->shape[1], c->shape[2], c->channels, c->kshape[0],
             c->kshape[1], c->kshape[2], c->separable ? " sep" : "", convolve_dtype_name(c->tin),
             convolve_dtype_name(c->tout), c->in_kind, c->out_kind, convolve_mode_name(c->opt.mode),
             c->opt.operation == CONVOLVE_OP_CORRELATE ? "correlate" : "convolve", c->opt.cval,
             c->opt.origin[0], c->opt.origin[1], c->opt.origin[2], c->opt.threads);
}

static int is_float(convolve_dtype t)
{
    return t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
}

/* Runs one case through every applicable strategy; returns the number of
 * strategy runs compared. */
static int run_case(const fcase *c, const char *only)
{
    char tag[320];
    describe(c, tag, sizeof tag);
    size_t kn = 1;
    for (int a = 0; a < c->ndim; a++)
        kn *= c->kshape[a];

    /* filter */
    convolve_filter *f = NULL;
    double *w = malloc(kn * sizeof *w), wabs = 0;
    if (c->separable) {
        double *taps[3];
        for (int a = 0; a < c->ndim; a++) {
            taps[a] = malloc(c->kshape[a] * sizeof(double));
            h_fill(taps[a], c->kshape[a]);
            for (size_t i = 0; c->positive && i < c->kshape[a]; i++)
                taps[a][i] = fabs(taps[a][i]);
        }
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, c->ndim, c->kshape,
                                                       (const double *const *)taps));
        for (int a = 0; a < c->ndim; a++)
            free(taps[a]);
        convolve_filter_weights(f, w, kn);
    } else {
        h_fill(w, kn);
        for (size_t i = 0; c->positive && i < kn; i++)
            w[i] = fabs(w[i]);
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->kshape, w));
    }
    for (size_t i = 0; i < kn; i++)
        wabs += fabs(w[i]);
    free(w);
    if (!f)
        return 0;

    /* input */
    view vi = make_view(c->tin, c->ndim, c->shape, c->channels, c->in_kind, 1);
    size_t ies = convolve_dtype_size(c->tin);
    void *ibuf = malloc(vi.bytes + ies);
    h_fill_typed(c->tin, ibuf, vi.bytes / ies, 1.0);
    for (size_t i = 0; c->positive && c->tin == CONVOLVE_FLOAT32 && i < vi.bytes / ies; i++)
        ((float *)ibuf)[i] = fabsf(((float *)ibuf)[i]);
    for (size_t i = 0; c->positive && c->tin == CONVOLVE_FLOAT64 && i < vi.bytes / ies; i++)
        ((double *)ibuf)[i] = fabs(((double *)ibuf)[i]);
    const void *in = (const char *)ibuf + vi.base;
    double xmax = c->tin == CONVOLVE_UINT8 ? 255 : c->tin == CONVOLVE_UINT16 ? 65535 : 1;
    if (fabs(c->opt.cval) > xmax)
        xmax = fabs(c->opt.cval);

    /* exact reference: float64 contiguous, and in the output dtype */
    size_t count = 1;
    for (int a = 0; a < c->ndim; a++)
        count *= c->shape[a];
    count *= c->channels;
    convolve_layout lref, lref_t;
    convolve_layout_init(&lref, CONVOLVE_FLOAT64, c->ndim, c->shape, c->channels);
    convolve_layout_init(&lref_t, c->tout, c->ndim, c->shape, c->channels);
    double *ref = malloc(count * sizeof *ref), *got = malloc(count * sizeof *got);
    void *ref_t = malloc(count * convolve_dtype_size(c->tout));
    convolve_options ro = c->opt;
    ro.backend = CONVOLVE_BACKEND_CPU;
    ro.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &vi.lay, in, &lref, ref, f, &ro));
    CHECK_OK(ctx, convolve_run(ctx, &vi.lay, in, &lref_t, ref_t, f, &ro));
    double *reft = malloc(count * sizeof *reft);
    for (size_t i = 0; i < count; i++)
        reft[i] = h_get(c->tout, ref_t, i);

    /* each strategy */
    view vo = make_view(c->tout, c->ndim, c->shape, c->channels, c->out_kind, 0);
    size_t oes = convolve_dtype_size(c->tout);
    unsigned char *obuf = malloc(vo.bytes + oes), *clean = malloc(vo.bytes + oes);
    h_poison(c->tout, clean, vo.bytes / oes + 1);
    int dbl = c->tin == CONVOLVE_FLOAT64 || c->tout == CONVOLVE_FLOAT64;
    /* float32 outputs of a double computation are rounded to float32 */
    double prec = !dbl ? 1e-5 : c->tout == CONVOLVE_FLOAT32 ? 1e-7 : 1e-12;
    double scale = wabs * xmax, tol = prec * scale, eps = prec;
    int runs = 0;
    for (int s = 0; s <= NSTRAT; s++) {
        if (only ? strcmp(only, k_strategies[s]) != 0 : s == NSTRAT)
            continue;
        convolve_options so = c->opt;
        so.backend = CONVOLVE_BACKEND_CPU;
        so.strategy = k_strategies[s];
        convolve_plan *plan = NULL;
        convolve_status st = convolve_plan_create(ctx, &plan, &vi.lay, &vo.lay, f, &so);
        if (!strcmp(k_strategies[s], "separable") && !convolve_filter_is_separable(f)) {
            CHECK(st == CONVOLVE_ERROR_UNSUPPORTED, "%s: separable on a dense filter: %s", tag,
                  convolve_status_name(st));
            convolve_plan_free(plan);
            continue;
        }
        if (st == CONVOLVE_ERROR_UNSUPPORTED && !strcmp(k_strategies[s], "fft")) {
            convolve_plan_free(plan);
            continue;
        }
        CHECK(st == CONVOLVE_OK, "%s: plan %s: %s: %s", tag, k_strategies[s],
              convolve_status_name(st), convolve_last_error(ctx));
        if (st != CONVOLVE_OK)
            continue;
        memcpy(obuf, clean, vo.bytes + oes);
        void *out = obuf + vo.base;
        CHECK_OK(ctx, convolve_execute(plan, in, out));
        convolve_plan_free(plan);
        runs++;
        CHECK(untouched_outside(&vo, obuf, clean), "%s: %s wrote outside the output view", tag,
              k_strategies[s]);
        view_read(&vo, obuf, got);
        if (is_float(c->tout)) {
            h_diff d = h_compare(CONVOLVE_FLOAT64, got, CONVOLVE_FLOAT64, ref, count, tol, eps);
            double rnorm = 0;
            for (size_t i = 0; i < count; i++)
                rnorm += ref[i] * ref[i];
            rnorm = sqrt(rnorm);
            double floor_norm = c->positive ? 0.0 : 0.1 * scale * sqrt((double)count);
            double l2 = d.rel_l2 * (rnorm > 0 ? rnorm : 1.0);
            double limit = prec < 1e-10 ? 1e-10 : prec;
            double denom = rnorm > floor_norm ? rnorm : floor_norm;
            CHECK(d.bad == 0 && l2 <= limit * denom,
                  "%s: %s: %zu bad (first %zu: %g vs %g), max err %g, rel L2 %g", tag,
                  k_strategies[s], d.bad, d.first_bad, d.bad ? got[d.first_bad] : 0.0,
                  d.bad ? ref[d.first_bad] : 0.0, d.max_abs, d.rel_l2);
        } else {
            /* within 1 of the reference's rounding, and the float sums'
             * tolerance of float outputs (tol: large weights of mixed signs
             * on uint16 data make float32 partial sums past 2^24); further
             * only where the float sum lies within tolerance of a rounding
             * boundary */
            h_diff d = h_compare(CONVOLVE_FLOAT64, got, CONVOLVE_FLOAT64, reft, count, 1.0 + tol,
                                 0.0);
            CHECK(d.bad == 0,
                  "%s: %s: %zu integers off by more than 1 + %g (first %zu: %g vs %g, exact %g)",
                  tag, k_strategies[s], d.bad, tol, d.first_bad, d.bad ? got[d.first_bad] : 0.0,
                  d.bad ? reft[d.first_bad] : 0.0, d.bad ? ref[d.first_bad] : 0.0);
            size_t off = 0;
            for (size_t i = 0; i < count; i++)
                if (got[i] != reft[i] && fabs(ref[i] - floor(ref[i]) - 0.5) > tol + 1e-9 &&
                    ref[i] > -0.5 && ref[i] < (c->tout == CONVOLVE_UINT8 ? 255.5 : 65535.5))
                    off++;
            CHECK(off == 0, "%s: %s: %zu integers rounded differently away from a tie", tag,
                  k_strategies[s], off);
        }
        if (h_failures > 30)
            break;
    }
    free(ibuf), free(ref), free(got), free(ref_t), free(reft), free(obuf), free(clean);
    convolve_filter_free(f);
    return runs;
}

static const convolve_dtype k_types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                          CONVOLVE_UINT16};

/* A random small case; `big` makes extents larger (several tiles and bands). */
static fcase random_case(int big)
{
    fcase c;
    memset(&c, 0, sizeof c);
    c.ndim = (int)h_randint(1, 3);
    convolve_options_init(&c.opt);
    c.opt.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    c.opt.mode = (convolve_mode)h_randint(0, 4);
    c.opt.cval = h_uniform(-3, 3);
    c.opt.threads = (int)h_randint(1, 2);
    static const size_t chans[3] = {1, 3, 4};
    c.channels = h_randint(0, 3) ? 1 : chans[h_randint(0, 2)];
    c.separable = (int)h_randint(0, 1);
    c.tin = k_types[h_randint(0, 3)];
    c.tout = k_types[h_randint(0, 3)];
    c.in_kind = (int)h_randint(0, 4);
    c.out_kind = (int)h_randint(0, 3);
    for (int a = 0; a < c.ndim; a++) {
        long maxn = c.ndim == 1   ? (big ? 5000 : 70)
                    : c.ndim == 2 ? (big ? 300 : 23)
                                  : (big ? 40 : 9);
        c.shape[a] = (size_t)(h_randint(0, 5) ? h_randint(1, maxn) : 1);
        long maxk = c.ndim == 1 ? 40 : c.ndim == 2 ? 12 : 6;
        if (big)
            maxk = c.ndim == 1 ? 300 : c.ndim == 2 ? 33 : 9;
        c.kshape[a] = (size_t)h_randint(1, maxk); /* may exceed the input */
        long K = (long)c.kshape[a];
        int end = (int)h_randint(0, 3); /* origins at both ends sometimes */
        c.opt.origin[a] = end == 0   ? -(K / 2)
                          : end == 1 ? (K - 1) / 2
                                     : h_randint(-(K / 2), (K - 1) / 2);
    }
    return c;
}

static void random_rounds(int rounds, int big, const char *only)
{
    for (int r = 0; r < rounds && h_failures <= 30; r++) {
        fcase c = random_case(big);
        run_case(&c, only);
    }
}

/* Hand-picked corners: one element, long filters, every mode and dtype pair. */
static void corners(const char *only)
{
    for (int m = 0; m < 5; m++) {
        for (int ti = 0; ti < 4; ti++) {
            for (int to = 0; to < 4; to++) {
                fcase c;
                memset(&c, 0, sizeof c);
                convolve_options_init(&c.opt);
                c.opt.mode = (convolve_mode)m;
                c.opt.cval = 1.75;
                c.opt.threads = 2;
                c.tin = k_types[ti];
                c.tout = k_types[to];
                c.channels = 1;
                /* one element, filter 5 */
                c.ndim = 1;
                c.shape[0] = 1;
                c.kshape[0] = 5;
                run_case(&c, only);
                /* 2-D 1x1 input, separable 4x3 filter with origins at the ends */
                c.ndim = 2;
                c.shape[0] = c.shape[1] = 1;
                c.kshape[0] = 4;
                c.kshape[1] = 3;
                c.opt.origin[0] = -2;
                c.opt.origin[1] = 1;
                c.separable = 1;
                run_case(&c, only);
                /* filter much longer than the input, 3-D, 3 channels, strided */
                c.ndim = 3;
                c.shape[0] = 2, c.shape[1] = 3, c.shape[2] = 5;
                c.kshape[0] = 7, c.kshape[1] = 8, c.kshape[2] = 13;
                c.opt.origin[0] = 3, c.opt.origin[1] = -4, c.opt.origin[2] = 0;
                c.channels = 3;
                c.in_kind = 1 + (m + ti) % 4;
                c.out_kind = 1 + (m + to) % 3;
                c.separable = (m + ti + to) % 2;
                c.opt.operation = CONVOLVE_OP_CORRELATE;
                run_case(&c, only);
            }
        }
    }
}

/* 2-D images of several tiles and bands: a large dense filter in every mode
 * (FFT and direct), a large separable one on 3-channel uint8, and positive
 * float32 data as the benchmarks use (r = 1, 3, 7, 15; dense and separable)
 * where the relative L2 error itself must be <= 1e-5. */
static void larger(const char *only)
{
    for (int m = 0; m < 5; m++) {
        fcase c;
        memset(&c, 0, sizeof c);
        convolve_options_init(&c.opt);
        c.opt.mode = (convolve_mode)m;
        c.opt.cval = -0.5;
        c.opt.threads = 2;
        c.opt.operation = m % 2 ? CONVOLVE_OP_CONVOLVE : CONVOLVE_OP_CORRELATE;
        c.ndim = 2;
        c.shape[0] = 97, c.shape[1] = 1100 + (size_t)m;
        c.kshape[0] = 31, c.kshape[1] = 30;
        c.opt.origin[1] = m - 2;
        c.channels = 1;
        c.tin = c.tout = CONVOLVE_FLOAT32;
        run_case(&c, only);
        c.separable = 1;
        c.tin = CONVOLVE_UINT8;
        c.channels = 3;
        c.shape[1] = 300;
        c.tout = m % 2 ? CONVOLVE_UINT8 : CONVOLVE_FLOAT32;
        run_case(&c, only);
    }
    static const int radii[4] = {1, 3, 7, 15};
    for (int i = 0; i < 4; i++) {
        fcase c;
        memset(&c, 0, sizeof c);
        convolve_options_init(&c.opt);
        c.opt.operation = CONVOLVE_OP_CORRELATE;
        c.opt.threads = 2;
        c.ndim = 2;
        c.shape[0] = 131, c.shape[1] = 517;
        c.kshape[0] = c.kshape[1] = (size_t)(2 * radii[i] + 1);
        c.channels = 1;
        c.tin = c.tout = CONVOLVE_FLOAT32;
        c.positive = 1;
        run_case(&c, only);
        c.separable = 1;
        run_case(&c, only);
    }
}

/* Integer outputs round to nearest, ties to even, saturate, and make NaN 0,
 * exactly as the reference, on every instruction set and in SIMD bodies and
 * tails alike (a unit filter passes the values through). */
static void integer_edges(void)
{
    static const float v[] = {-1e30f,   -INFINITY, NAN,      -0.5f,    -0.0f,  0.5f,
                              1.5f,     2.5f,      3.49f,    127.5f,   128.5f, 254.5f,
                              255.49f,  255.5f,    256.0f,   1000.0f,  3e9f,   INFINITY,
                              65534.5f, 65535.49f, 65535.5f, 65536.0f, 1e10f,  7.0f};
    const size_t nv = sizeof v / sizeof v[0], n = 5 * nv + 3;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = v[i % nv];
    uint16_t ref16[128], got16[128];
    uint8_t ref8[128], got8[128];
    const double one = 1.0;
    size_t K = 1;
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &K, &one));
    convolve_layout Lx, L8, L16;
    convolve_layout_init(&Lx, CONVOLVE_FLOAT32, 1, &n, 1);
    convolve_layout_init(&L8, CONVOLVE_UINT8, 1, &n, 1);
    convolve_layout_init(&L16, CONVOLVE_UINT16, 1, &n, 1);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &Lx, x, &L8, ref8, f, &o));
    CHECK_OK(ctx, convolve_run(ctx, &Lx, x, &L16, ref16, f, &o));
    CHECK(ref8[6] == 2 && ref8[7] == 2 && ref8[13] == 255 && ref16[2] == 0 && ref16[20] == 65535,
          "reference rounding: %d %d %d %d %d", ref8[6], ref8[7], ref8[13], ref16[2], ref16[20]);
    for (int isa = 0; isa <= 2; isa++) {
        cvcpu_fast_limit_isa(isa);
        for (int s = 0; s < NSTRAT; s++) {
            if (!strcmp(k_strategies[s], "separable"))
                continue;
            o.strategy = k_strategies[s];
            memset(got8, 0xAB, sizeof got8);
            memset(got16, 0xAB, sizeof got16);
            CHECK_OK(ctx, convolve_run(ctx, &Lx, x, &L8, got8, f, &o));
            CHECK_OK(ctx, convolve_run(ctx, &Lx, x, &L16, got16, f, &o));
            for (size_t i = 0; i < n; i++) {
                CHECK(got8[i] == ref8[i], "isa %d %s: uint8 of %g is %d, want %d", isa,
                      k_strategies[s], x[i], got8[i], ref8[i]);
                CHECK(got16[i] == ref16[i], "isa %d %s: uint16 of %g is %d, want %d", isa,
                      k_strategies[s], x[i], got16[i], ref16[i]);
            }
        }
    }
    cvcpu_fast_limit_isa(-1);
    convolve_filter_free(f);
    free(x);
}

/* Inputs allocated to the byte, with rows whose in-place middle ends at the
 * end of the array (n = 17 mod 128 for 3 taps, and neighbours): kernels must
 * not read past a row's last needed element (AddressSanitizer sees it). */
static void exact_rows(void)
{
    static const size_t ns[] = {145, 273, 274, 401, 530, 1041};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        for (size_t K = 3; K <= 7; K += 2) {
            for (int nd = 1; nd <= 2; nd++) {
                size_t shape[2] = {nd == 2 ? 3 : ns[i], ns[i]}, k[2] = {K, K};
                size_t n = nd == 2 ? 3 * ns[i] : ns[i];
                float *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got);
                float *ref = malloc(n * sizeof *ref);
                h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
                double taps[7];
                h_fill(taps, K);
                const double *tp[2] = {taps, taps};
                convolve_filter *f;
                CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, nd, k, tp));
                convolve_layout L;
                convolve_layout_init(&L, CONVOLVE_FLOAT32, nd, shape + (2 - nd), 1);
                convolve_options o;
                convolve_options_init(&o);
                o.backend = CONVOLVE_BACKEND_CPU;
                o.mode = CONVOLVE_MODE_NEAREST;
                o.strategy = "reference";
                CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, ref, f, &o));
                for (int s = 0; s < NSTRAT; s++) {
                    o.strategy = k_strategies[s];
                    CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, got, f, &o));
                    h_diff d = h_compare(CONVOLVE_FLOAT32, got, CONVOLVE_FLOAT32, ref, n, 1e-4,
                                         1e-5);
                    CHECK(d.bad == 0, "exact rows n=%zu K=%zu %dD %s: %zu bad", ns[i], K, nd,
                          k_strategies[s], d.bad);
                }
                convolve_filter_free(f);
                free(x), free(got), free(ref);
            }
        }
    }
}

/* Short work with the default thread count on a loaded machine: no more
 * threads than free cores, at least one; an unknown load changes nothing. */
static void threads_for_load(void)
{
    static const int k_cases[][3] = {/* threads, free cores, want */
                                     {2, -1, 2}, {2, 2, 2}, {2, 5, 2},    {2, 1, 1},
                                     {2, 0, 1},  {4, 0, 1}, {16, 15, 15}, {16, 3, 3}};
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        int got = cvcpu_threads_for_free(k_cases[i][0], k_cases[i][1]);
        CHECK(got == k_cases[i][2], "%d threads, %d free cores: %d, want %d", k_cases[i][0],
              k_cases[i][1], got, k_cases[i][2]);
    }
    int f = cvcpu_free_cores();
    CHECK(f >= -1 && f < 1 << 20, "free cores %d", f);
}

/* Every strategy gives bit for bit the same result on 1 and 2 threads (the
 * partition changes, the order of each output's sum does not). */
static void thread_invariance(void)
{
    size_t shape[3] = {37, 301, 0}, k[2] = {9, 7};
    size_t n = shape[0] * shape[1];
    float *x = malloc(n * sizeof *x), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
    double w[63];
    h_fill(w, 63);
    convolve_layout L;
    convolve_layout_init(&L, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    for (int s = 0; s < NSTRAT; s++) {
        if (!strcmp(k_strategies[s], "separable"))
            continue;
        convolve_options o;
        convolve_options_init(&o);
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = k_strategies[s];
        o.mode = CONVOLVE_MODE_MIRROR;
        o.threads = 1;
        CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, a, f, &o));
        o.threads = 2;
        CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, b, f, &o));
        CHECK(memcmp(a, b, n * sizeof *a) == 0, "%s: 1 and 2 threads differ", k_strategies[s]);
    }
    convolve_filter_free(f);
    free(x), free(a), free(b);
}

/* A NaN in the input makes NaN exactly the outputs whose window holds it,
 * also where `fast` would use the FFT for a finite input (it must not). */
static void nan_input(void)
{
    size_t shape[2] = {150, 260}, k[2] = {31, 31}, n = 150 * 260;
    float *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got);
    double *ref = malloc(n * sizeof *ref), *w = malloc(961 * sizeof *w);
    h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
    h_fill(w, 961);
    x[70 * 260 + 100] = NAN;
    convolve_layout L, Ld;
    convolve_layout_init(&L, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_layout_init(&Ld, CONVOLVE_FLOAT64, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &L, x, &Ld, ref, f, &o));
    o.strategy = "fast";
    CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, got, f, &o));
    size_t nan_ref = 0, wrong = 0;
    for (size_t i = 0; i < n; i++) {
        nan_ref += isnan(ref[i]) != 0;
        if ((isnan(ref[i]) != 0) != (isnan(got[i]) != 0) ||
            (!isnan(ref[i]) && fabs(got[i] - ref[i]) > 1e-3))
            wrong++;
    }
    CHECK(nan_ref == 961 && wrong == 0, "NaN input: %zu reference NaNs, %zu outputs differ",
          nan_ref, wrong);
    convolve_filter_free(f);
    free(x), free(got), free(ref), free(w);
}

/* Counts the NaN, infinite and finite values of n doubles. */
static void count_values(const double *v, size_t n, size_t counts[3])
{
    counts[0] = counts[1] = counts[2] = 0;
    for (size_t i = 0; i < n; i++)
        counts[isnan(v[i]) ? 0 : isinf(v[i]) ? 1 : 2]++;
}

/* Weights near the largest double: the FFT's transforms overflow (every
 * output NaN). The fft strategy refuses them, saying why and what to use;
 * `fast` (auto) computes what direct does (inf where the sums overflow,
 * finite values elsewhere), also where it would take the FFT for ordinary
 * weights (31 x 31). float32 inputs are refused far sooner (float
 * transforms); ordinary weights keep the FFT. */
static void huge_weights(void)
{
    static const size_t ks[2] = {9, 31};
    for (int v = 0; v < 2; v++) {
        size_t shape[2] = {150, 260}, k[2] = {ks[v], ks[v]}, n = 150 * 260, kc = k[0] * k[1];
        double *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
        double *got = malloc(n * sizeof *got), *w = malloc(kc * sizeof *w);
        h_fill(x, n);
        for (size_t i = 0; i < kc; i++)
            w[i] = h_uniform(-1.0, 1.0) * (v ? 1e307 : 1e308);
        convolve_layout L;
        convolve_layout_init(&L, CONVOLVE_FLOAT64, 2, shape, 1);
        convolve_filter *f;
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
        convolve_options o;
        convolve_options_init(&o);
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = "fft";
        convolve_plan *p = NULL;
        CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o), CONVOLVE_ERROR_UNSUPPORTED);
        CHECK(strstr(convolve_last_error(ctx), "overflow") &&
                  strstr(convolve_last_error(ctx), "'direct'"),
              "%zu x %zu weights of 1e%d: the message says why and what to use: %s", k[0], k[1],
              v ? 307 : 308, convolve_last_error(ctx));
        if (p) { /* the old behaviour: how the FFT's output looks */
            size_t c[3];
            CHECK_OK(ctx, convolve_execute(p, x, got));
            count_values(got, n, c);
            printf("fft with %zu x %zu weights of 1e%d: %zu NaN, %zu inf, %zu finite\n", k[0], k[1],
                   v ? 307 : 308, c[0], c[1], c[2]);
            convolve_plan_free(p);
        }
        o.strategy = "direct";
        CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, want, f, &o));
        o.strategy = NULL;
        CHECK_OK(ctx, convolve_run(ctx, &L, x, &L, got, f, &o));
        size_t cw[3], cg[3];
        count_values(want, n, cw);
        count_values(got, n, cg);
        CHECK(cw[0] == 0 && cw[2] > 0 && memcmp(got, want, n * sizeof *got) == 0,
              "%zu x %zu weights of 1e%d: auto (%zu NaN, %zu inf, %zu finite) differs from "
              "direct (%zu NaN, %zu inf, %zu finite)",
              k[0], k[1], v ? 307 : 308, cg[0], cg[1], cg[2], cw[0], cw[1], cw[2]);
        /* float32: float transforms; ordinary weights: the FFT serves */
        convolve_layout L32;
        convolve_layout_init(&L32, CONVOLVE_FLOAT32, 2, shape, 1);
        convolve_filter_free(f);
        for (size_t i = 0; i < kc; i++)
            w[i] *= 1e-278;
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
        o.strategy = "fft";
        CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L32, &L32, f, &o),
                     CONVOLVE_ERROR_UNSUPPORTED);
        CHECK_OK(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o));
        convolve_plan_free(p);
        convolve_filter_free(f);
        for (size_t i = 0; i < kc; i++)
            w[i] *= 1e-29;
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
        CHECK_OK(ctx, convolve_plan_create(ctx, &p, &L32, &L32, f, &o));
        convolve_plan_free(p);
        convolve_filter_free(f);
        free(x), free(want), free(got), free(w);
    }
}

/* The strategy `auto` takes on the CPU is `fast`; named strategies refuse
 * what they cannot serve. */
static void choices(void)
{
    size_t n[2] = {8, 9}, k[2] = {3, 3};
    double w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10};
    convolve_layout L;
    convolve_layout_init(&L, CONVOLVE_FLOAT32, 2, n, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    convolve_plan *p = NULL;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o));
    CHECK(p && strcmp(convolve_plan_strategy(p), "fast") == 0, "auto on the CPU is %s",
          p ? convolve_plan_strategy(p) : "none");
    convolve_plan_free(p);
    o.strategy = "separable";
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o), CONVOLVE_ERROR_UNSUPPORTED);
    convolve_filter_free(f);
    int found = 0;
    for (size_t i = 0; i < convolve_strategy_count(); i++) {
        convolve_strategy_info info;
        CHECK_OK(ctx, convolve_strategy_get(i, &info));
        for (int s = 0; s < NSTRAT; s++)
            if (info.backend == CONVOLVE_BACKEND_CPU && !strcmp(info.name, k_strategies[s]))
                found++;
    }
    CHECK(found == NSTRAT, "%d of the %d fast strategies are registered", found, NSTRAT);
}

int main(int argc, char **argv)
{
    h_seed("test_cpu_fast");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    const char *only = argc > 1 ? argv[1] : NULL;
    int rounds = argc > 2 ? atoi(argv[2]) : 150;
    choices();
    threads_for_load();
    thread_invariance();
    integer_edges();
    exact_rows();
    nan_input();
    huge_weights();
    /* every instruction set this CPU has, the portable C path first */
    for (int isa = 0; isa <= 2; isa++) {
        cvcpu_fast_limit_isa(isa);
        printf("instruction set cap %d\n", isa);
        random_rounds(rounds, 0, only);
        random_rounds(rounds / 10, 1, only);
    }
    cvcpu_fast_limit_isa(-1);
    corners(only);
    larger(only);
    convolve_context_free(ctx);
    return h_finish("test_cpu_fast");
}

/*
 * test_semantics.c - the semantics of the CPU reference through the public
 * API: hand-checked cases for every mode (scipy's examples among them),
 * integer rounding and saturation, and properties over dims 1-3, odd and even
 * sizes, origins, modes, correlate and convolve: identity, shift by a one-hot
 * filter, linearity, separable = outer product, convolve(x, w) =
 * correlate(x, flipped w), strided views = contiguous copies.
 */
#include "harness.h"

static convolve_context *ctx;

/* Runs a float64 problem with dense weights on the CPU reference. */
static convolve_status run_f64(int ndim, const size_t *shape, const double *x, const size_t *kshape,
                               const double *w, const convolve_options *opt_in, double *out)
{
    convolve_layout L;
    convolve_filter *f = NULL;
    convolve_status st = convolve_layout_init(&L, CONVOLVE_FLOAT64, ndim, shape, 1);
    if (st != CONVOLVE_OK)
        return st;
    if ((st = convolve_filter_create(ctx, &f, ndim, kshape, w)) != CONVOLVE_OK)
        return st;
    convolve_options opt = *opt_in;
    opt.backend = CONVOLVE_BACKEND_CPU;
    opt.strategy = "reference";
    st = convolve_run(ctx, &L, x, &L, out, f, &opt);
    convolve_filter_free(f);
    return st;
}

static void expect_1d(const char *what, const double *x, size_t n, const double *w, size_t L,
                      convolve_operation op, convolve_mode mode, double cval, ptrdiff_t origin,
                      const double *want)
{
    convolve_options o;
    convolve_options_init(&o);
    o.operation = op;
    o.mode = mode;
    o.cval = cval;
    o.origin[0] = origin;
    double out[64];
    CHECK_OK(ctx, run_f64(1, &n, x, &L, w, &o, out));
    for (size_t i = 0; i < n; i++)
        CHECK(out[i] == want[i], "%s: out[%zu] = %g, want %g", what, i, out[i], want[i]);
}

static void hand_checked(void)
{
    const double x8[8] = {2, 8, 0, 4, 1, 9, 9, 0}, w2[2] = {1, 3};
    /* ANCHORS.md section 4 (scipy's own results) */
    expect_1d("correlate1d even", x8, 8, w2, 2, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_REFLECT, 0, 0,
              (const double[]){8, 26, 8, 12, 7, 28, 36, 9});
    expect_1d("convolve1d even", x8, 8, w2, 2, CONVOLVE_OP_CONVOLVE, CONVOLVE_MODE_REFLECT, 0, 0,
              (const double[]){14, 24, 4, 13, 12, 36, 27, 0});
    const double ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, x12[2] = {1, 2};
    expect_1d("long filter reflect", x12, 2, ones9, 9, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_REFLECT,
              0, 0, (const double[]){13, 14});
    const double ar5[5] = {0, 1, 2, 3, 4}, x5[1] = {5};
    expect_1d("long filter mirror n=1", x5, 1, ar5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_MIRROR,
              0, 0, (const double[]){50});

    /* Digit-coded weights make each output spell the samples it read:
     * w = 1,10,100,1000,10000 at offsets -2..2, x = 1 2 3 4. */
    const double x4[4] = {1, 2, 3, 4}, w5[5] = {1, 10, 100, 1000, 10000};
    expect_1d("reflect r2", x4, 4, w5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_REFLECT, 0, 0,
              (const double[]){32112, 43211, 44321, 34432});
    expect_1d("nearest r2", x4, 4, w5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_NEAREST, 0, 0,
              (const double[]){32111, 43211, 44321, 44432});
    expect_1d("mirror r2", x4, 4, w5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_MIRROR, 0, 0,
              (const double[]){32123, 43212, 34321, 23432});
    expect_1d("wrap r2", x4, 4, w5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_WRAP, 0, 0,
              (const double[]){32143, 43214, 14321, 21432});
    expect_1d("constant r2", x4, 4, w5, 5, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_CONSTANT, 9, 0,
              (const double[]){32199, 43219, 94321, 99432});
    /* origin: +1 reads one sample further left (scipy's sign) */
    const double w3[3] = {1, 10, 100};
    expect_1d("origin +1", x4, 4, w3, 3, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_CONSTANT, 0, 1,
              (const double[]){100, 210, 321, 432});
    expect_1d("origin -1", x4, 4, w3, 3, CONVOLVE_OP_CORRELATE, CONVOLVE_MODE_CONSTANT, 0, -1,
              (const double[]){321, 432, 43, 4});
    /* convolution reverses the weights */
    expect_1d("convolve digits", x4, 4, w3, 3, CONVOLVE_OP_CONVOLVE, CONVOLVE_MODE_CONSTANT, 0, 0,
              (const double[]){12, 123, 234, 340});

    /* 2-D corner, 3x3 box of ones over [[1,2],[3,4]] */
    size_t s2[2] = {2, 2}, k33[2] = {3, 3};
    const double x22[4] = {1, 2, 3, 4};
    double ones33[9], out[4];
    for (int i = 0; i < 9; i++)
        ones33[i] = 1;
    convolve_options o;
    convolve_options_init(&o);
    o.mode = CONVOLVE_MODE_CONSTANT;
    o.cval = 1;
    CHECK_OK(ctx, run_f64(2, s2, x22, k33, ones33, &o, out));
    CHECK(out[0] == 15 && out[3] == 15, "2-D constant corner: %g %g", out[0], out[3]);
    o.mode = CONVOLVE_MODE_REFLECT;
    CHECK_OK(ctx, run_f64(2, s2, x22, k33, ones33, &o, out));
    /* rows {0,0,1} x cols {0,0,1}: (1+1+2)+(1+1+2)+(3+3+4) */
    CHECK(out[0] == 18, "2-D reflect corner: %g", out[0]);
}

static void integer_rounding(void)
{
    /* correlate, even size: out[i] = .5 x[i-1] + .5 x[i]; ties go to even */
    const uint8_t x[4] = {3, 2, 5, 6};
    uint8_t out[4];
    size_t n = 4, L = 2;
    const double w[2] = {0.5, 0.5};
    convolve_layout lay;
    convolve_filter *f;
    convolve_layout_init(&lay, CONVOLVE_UINT8, 1, &n, 1);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &L, w));
    convolve_options o;
    convolve_options_init(&o);
    o.operation = CONVOLVE_OP_CORRELATE;
    o.backend = CONVOLVE_BACKEND_CPU;
    CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, out, f, &o));
    /* 3 (3+3)/2, 2.5 -> 2, 3.5 -> 4, 5.5 -> 6 */
    CHECK(out[0] == 3 && out[1] == 2 && out[2] == 4 && out[3] == 6, "ties: %d %d %d %d", out[0],
          out[1], out[2], out[3]);
    convolve_filter_free(f);

    /* saturation: x * 300 and x * -1 */
    size_t one = 1;
    const double big = 300, neg = -1;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &one, &big));
    CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, out, f, &o));
    CHECK(out[0] == 255 && out[1] == 255, "saturate high: %d %d", out[0], out[1]);
    convolve_filter_free(f);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &one, &neg));
    CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, out, f, &o));
    CHECK(out[0] == 0 && out[3] == 0, "saturate low: %d %d", out[0], out[3]);

    /* uint16 in, float32 out, and float64 in, uint16 out */
    uint16_t x16[4] = {65535, 1, 2, 3};
    float of[4];
    convolve_layout l16, lf;
    convolve_layout_init(&l16, CONVOLVE_UINT16, 1, &n, 1);
    convolve_layout_init(&lf, CONVOLVE_FLOAT32, 1, &n, 1);
    CHECK_OK(ctx, convolve_run(ctx, &l16, x16, &lf, of, f, &o));
    CHECK(of[0] == -65535.0f && of[1] == -1.0f, "u16 -> f32: %g %g", of[0], of[1]);
    convolve_filter_free(f);
    const double xd[4] = {70000.0, -3.0, 2.5, 1e300};
    uint16_t o16[4];
    convolve_layout ld;
    convolve_layout_init(&ld, CONVOLVE_FLOAT64, 1, &n, 1);
    const double unit = 1.0;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &one, &unit));
    CHECK_OK(ctx, convolve_run(ctx, &ld, xd, &l16, o16, f, &o));
    CHECK(o16[0] == 65535 && o16[1] == 0 && o16[2] == 2 && o16[3] == 65535,
          "f64 -> u16: %d %d %d %d", o16[0], o16[1], o16[2], o16[3]);
    convolve_filter_free(f);
}

/* Dense weights in quarters that happen to be rank one are run by the
 * separable paths; their factors must stay exact (one line as given, the
 * others divided by the pivot only where that is exact), so integer data
 * sums exactly and ties still go to even, as through the dense paths. Found
 * by CI: [[0.75, 0.5, 0], [0, 0, 0]] became 0.75 * [1, 0.666..., 0] and
 * 15318.5 rounded to 15319. */
static void exact_rank_one_factors(void)
{
    static const double w2[3][6] = {
        {0.75, 0.5, 0, 0, 0, 0},        /* the row through the pivot is exact */
        {0.75, 0, 0, 0.25, 0, 0},       /* the column is */
        {0.5, -0.25, 1, 0.5, -0.25, 1}, /* both divide exactly */
    };
    /* [1, 0.5] (x) [1, 0.25] (x) [0.75, 0.5]: only the x line is the carrier */
    static const double w3[8] = {0.75, 0.5, 0.1875, 0.125, 0.375, 0.25, 0.09375, 0.0625};
    const char *strategies[] = {"direct", "separable", "image", "fast"};
    size_t shape[3] = {7, 19, 23}, n = 7 * 19 * 23;
    uint16_t *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref),
             *out = malloc(n * sizeof *out);
    if (!x || !ref || !out) {
        CHECK(0, "out of memory");
        free(x), free(ref), free(out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = (uint16_t)h_randint(0, 65535);
    for (int c = 0; c < 4; c++) {
        int ndim = c < 3 ? 2 : 3;
        size_t k2[2] = {2, 3}, k3[3] = {2, 2, 2};
        convolve_filter *f;
        CHECK_OK(ctx,
                 convolve_filter_create(ctx, &f, ndim, ndim == 2 ? k2 : k3, c < 3 ? w2[c] : w3));
        CHECK(convolve_filter_is_separable(f), "case %d is rank one", c);
        convolve_layout lay;
        convolve_layout_init(&lay, CONVOLVE_UINT16, ndim, ndim == 2 ? shape + 1 : shape, 1);
        convolve_options o;
        convolve_options_init(&o);
        o.backend = CONVOLVE_BACKEND_CPU;
        o.mode = CONVOLVE_MODE_NEAREST;
        o.strategy = "reference";
        CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, ref, f, &o));
        for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
            if (ndim == 3 && strcmp(strategies[s], "image") == 0)
                continue;
            o.strategy = strategies[s];
            memset(out, 0xA5, n * sizeof *out);
            CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, out, f, &o));
            size_t bad = 0, count = ndim == 2 ? shape[1] * shape[2] : n;
            for (size_t i = 0; i < count; i++)
                bad += out[i] != ref[i];
            CHECK(bad == 0, "rank-one quarters case %d, %s: %zu of %zu outputs differ", c,
                  strategies[s], bad, count);
        }
        convolve_filter_free(f);
    }
    free(x), free(ref), free(out);
}

/* A random problem: dims, shape (odd, even, 1), filter extents, origin. */
typedef struct {
    int ndim;
    size_t shape[3], kshape[3], n, kn;
    convolve_options opt;
} rand_case;

static rand_case random_case(void)
{
    rand_case c;
    memset(&c, 0, sizeof c);
    c.ndim = (int)h_randint(1, 3);
    convolve_options_init(&c.opt);
    c.opt.operation = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    c.opt.mode = (convolve_mode)h_randint(0, 4);
    c.opt.cval = h_uniform(-2, 2);
    c.n = c.kn = 1;
    for (int a = 0; a < c.ndim; a++) {
        long maxn = c.ndim == 1 ? 40 : c.ndim == 2 ? 13 : 7;
        c.shape[a] = (size_t)h_randint(1, maxn);
        c.kshape[a] = (size_t)h_randint(1, c.ndim == 3 ? 5 : 8); /* may exceed the input */
        long K = (long)c.kshape[a];
        c.opt.origin[a] = h_randint(-(K / 2), (K - 1) / 2);
        c.n *= c.shape[a];
        c.kn *= c.kshape[a];
    }
    return c;
}

static void properties(int rounds)
{
    for (int r = 0; r < rounds; r++) {
        rand_case c = random_case();
        double *x = malloc(c.n * sizeof *x), *y = malloc(c.n * sizeof *y);
        double *w = malloc(c.kn * sizeof *w), *wf = malloc(c.kn * sizeof *wf);
        double *o1 = malloc(c.n * sizeof *o1), *o2 = malloc(c.n * sizeof *o2);
        double *o3 = malloc(c.n * sizeof *o3), *xy = malloc(c.n * sizeof *xy);
        h_fill(x, c.n);
        h_fill(y, c.n);
        h_fill(w, c.kn);
        char tag[160];
        snprintf(tag, sizeof tag, "round %d: %dD n=%zux%zux%zu k=%zux%zux%zu %s %s", r, c.ndim,
                 c.shape[0], c.shape[1], c.shape[2], c.kshape[0], c.kshape[1], c.kshape[2],
                 convolve_mode_name(c.opt.mode),
                 c.opt.operation == CONVOLVE_OP_CORRELATE ? "correlate" : "convolve");

        /* identity: the one-hot at the origin cell returns the input */
        memset(wf, 0, c.kn * sizeof *wf);
        size_t idx = 0;
        for (int a = 0; a < c.ndim; a++) {
            ptrdiff_t K = (ptrdiff_t)c.kshape[a], o = c.opt.origin[a];
            /* the cell that reads offset 0: koff in correlation form, mirrored
             * back through the convolution's flip (origin -o - (K even)) */
            ptrdiff_t centre = c.opt.operation == CONVOLVE_OP_CORRELATE
                                   ? K / 2 + o
                                   : K - 1 - (K / 2 - o - (K % 2 == 0));
            idx = idx * (size_t)K + (size_t)centre;
        }
        wf[idx] = 1.0;
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, wf, &c.opt, o1));
        h_diff d = h_compare(CONVOLVE_FLOAT64, o1, CONVOLVE_FLOAT64, x, c.n, 0, 0);
        CHECK(d.bad == 0, "%s: identity differs at %zu", tag, d.first_bad);

        /* linearity: f(2x - 3y) = 2 f(x) - 3 f(y) (cval scales too) */
        convolve_options lin = c.opt;
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, w, &lin, o1));
        lin.cval = 0;
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, y, c.kshape, w, &lin, o2));
        for (size_t i = 0; i < c.n; i++)
            xy[i] = 2 * x[i] - 3 * y[i];
        lin.cval = 2 * c.opt.cval;
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, xy, c.kshape, w, &lin, o3));
        for (size_t i = 0; i < c.n; i++)
            o1[i] = 2 * o1[i] - 3 * o2[i];
        d = h_compare(CONVOLVE_FLOAT64, o3, CONVOLVE_FLOAT64, o1, c.n, 1e-12, 1e-12);
        CHECK(d.bad == 0, "%s: linearity, max err %g", tag, d.max_abs);

        /* convolve(x, w, o) == correlate(x, reversed w, -o - (K even)) */
        convolve_options cv = c.opt, co = c.opt;
        cv.operation = CONVOLVE_OP_CONVOLVE;
        co.operation = CONVOLVE_OP_CORRELATE;
        for (int a = 0; a < c.ndim; a++)
            co.origin[a] = -cv.origin[a] - (c.kshape[a] % 2 == 0);
        int ok_origin = 1;
        for (int a = 0; a < c.ndim; a++) {
            ptrdiff_t K = (ptrdiff_t)c.kshape[a];
            if (co.origin[a] < -(K / 2) || co.origin[a] > (K - 1) / 2)
                ok_origin = 0;
        }
        for (size_t i = 0; i < c.kn; i++)
            wf[i] = w[c.kn - 1 - i];
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, w, &cv, o1));
        if (ok_origin) {
            CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, wf, &co, o2));
            d = h_compare(CONVOLVE_FLOAT64, o2, CONVOLVE_FLOAT64, o1, c.n, 0, 0);
            CHECK(d.bad == 0, "%s: convolve != correlate(flipped)", tag);
        }

        /* separable == dense outer product */
        double *taps[3];
        for (int a = 0; a < c.ndim; a++) {
            taps[a] = malloc(c.kshape[a] * sizeof(double));
            h_fill(taps[a], c.kshape[a]);
        }
        convolve_filter *fs;
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &fs, c.ndim, c.kshape,
                                                       (const double *const *)taps));
        CHECK_OK(ctx, convolve_filter_weights(fs, wf, c.kn));
        convolve_layout lay;
        convolve_layout_init(&lay, CONVOLVE_FLOAT64, c.ndim, c.shape, 1);
        convolve_options so = c.opt;
        so.backend = CONVOLVE_BACKEND_CPU;
        CHECK_OK(ctx, convolve_run(ctx, &lay, x, &lay, o1, fs, &so));
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, wf, &c.opt, o2));
        d = h_compare(CONVOLVE_FLOAT64, o1, CONVOLVE_FLOAT64, o2, c.n, 1e-12, 1e-12);
        CHECK(d.bad == 0, "%s: separable != outer product, max err %g", tag, d.max_abs);
        convolve_filter_free(fs);
        for (int a = 0; a < c.ndim; a++)
            free(taps[a]);

        /* a strided view (every other element, rows padded, starting one
         * element in) gives what a contiguous copy gives */
        convolve_layout sl;
        convolve_layout_init(&sl, CONVOLVE_FLOAT64, c.ndim, c.shape, 1);
        size_t span = 1;
        for (int a = c.ndim - 1; a >= 0; a--) {
            sl.strides[a] = (ptrdiff_t)(span * 2 * sizeof(double));
            span = span * 2 * c.shape[a] + 3; /* 3 elements of padding per row */
        }
        double *big = malloc(span * 2 * sizeof(double) + 64);
        h_fill(big, span * 2 + 8);
        double *view = big + 1;
        for (size_t i = 0; i < c.n; i++) { /* scatter x into the view */
            size_t rem = i, off = 0;
            for (int a = c.ndim - 1; a >= 0; a--) {
                off += (rem % c.shape[a]) * (size_t)sl.strides[a] / sizeof(double);
                rem /= c.shape[a];
            }
            view[off] = x[i];
        }
        convolve_filter *fd;
        CHECK_OK(ctx, convolve_filter_create(ctx, &fd, c.ndim, c.kshape, w));
        CHECK_OK(ctx, convolve_run(ctx, &sl, view, &lay, o2, fd, &so));
        CHECK_OK(ctx, run_f64(c.ndim, c.shape, x, c.kshape, w, &c.opt, o1));
        d = h_compare(CONVOLVE_FLOAT64, o2, CONVOLVE_FLOAT64, o1, c.n, 0, 0);
        CHECK(d.bad == 0, "%s: strided input differs", tag);
        convolve_filter_free(fd);
        free(big);

        free(x), free(y), free(w), free(wf), free(o1), free(o2), free(o3), free(xy);
        if (h_failures > 20)
            break;
    }
}

/* Shift by a one-hot filter: out[i] = ext[i + k - koff], checked against a
 * direct reading of the mode's definition on a 1-D line. */
static double ext_value(const double *x, ptrdiff_t n, ptrdiff_t j, convolve_mode mode, double cval)
{
    /* walk outward by the textbook rules, one reflection at a time */
    while (j < 0 || j >= n) {
        switch (mode) {
        case CONVOLVE_MODE_CONSTANT: return cval;
        case CONVOLVE_MODE_NEAREST: j = j < 0 ? 0 : n - 1; break;
        case CONVOLVE_MODE_WRAP: j = j < 0 ? j + n : j - n; break;
        case CONVOLVE_MODE_REFLECT: j = j < 0 ? -1 - j : 2 * n - 1 - j; break;
        case CONVOLVE_MODE_MIRROR:
            if (n == 1)
                return x[0];
            j = j < 0 ? -j : 2 * n - 2 - j;
            break;
        }
    }
    return x[j];
}

static void shifts(int rounds)
{
    for (int r = 0; r < rounds; r++) {
        size_t n = (size_t)h_randint(1, 12), K = (size_t)h_randint(1, 30);
        double x[12], w[30] = {0}, out[12];
        h_fill(x, n);
        size_t k = (size_t)h_randint(0, (long)K - 1);
        w[k] = 1.0;
        convolve_options o;
        convolve_options_init(&o);
        o.operation = CONVOLVE_OP_CORRELATE;
        o.mode = (convolve_mode)h_randint(0, 4);
        o.cval = 7.25;
        o.origin[0] = h_randint(-(long)(K / 2), (long)(K - 1) / 2);
        CHECK_OK(ctx, run_f64(1, &n, x, &K, w, &o, out));
        ptrdiff_t koff = (ptrdiff_t)(K / 2) + o.origin[0];
        for (size_t i = 0; i < n; i++) {
            double want = ext_value(x, (ptrdiff_t)n, (ptrdiff_t)(i + k) - koff, o.mode, o.cval);
            CHECK(out[i] == want, "shift n=%zu K=%zu k=%zu origin=%td %s: out[%zu]=%g want %g", n,
                  K, k, o.origin[0], convolve_mode_name(o.mode), i, out[i], want);
        }
    }
}

static void errors(void)
{
    size_t n = 8, K = 3;
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], w[3] = {1, 2, 1};
    convolve_layout L;
    convolve_layout_init(&L, CONVOLVE_FLOAT64, 1, &n, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &K, w));
    convolve_options o;
    convolve_options_init(&o);
    convolve_plan *p;

    o.origin[0] = 2;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o), CONVOLVE_ERROR_BAD_ORIGIN);
    CHECK(p == NULL, "plan set on failure");
    o.origin[0] = 0;
    o.mode = (convolve_mode)9;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.mode = CONVOLVE_MODE_REFLECT;
    o.strategy = "no-such-strategy";
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.strategy = NULL;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, NULL, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);

    convolve_layout bad = L;
    bad.ndim = 4;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &bad, &L, f, &o), CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.shape[0] = 0;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &bad, &L, f, &o), CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.strides[0] = 3;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &bad, &L, f, &o), CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.strides[0] = 0; /* a broadcast input is fine, an output is not */
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &bad, f, &o), CONVOLVE_ERROR_BAD_LAYOUT);
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &bad, &L, f, &o));
    convolve_plan_free(p);
    bad = L;
    bad.shape[0] = (size_t)1 << 62;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &bad, &bad, f, &o),
                 CONVOLVE_ERROR_SIZE_OVERFLOW);
    size_t n2 = 9;
    convolve_layout L9;
    convolve_layout_init(&L9, CONVOLVE_FLOAT64, 1, &n2, 1);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L9, f, &o), CONVOLVE_ERROR_BAD_LAYOUT);
    size_t sh2[2] = {2, 4};
    convolve_layout L2;
    convolve_layout_init(&L2, CONVOLVE_FLOAT64, 2, sh2, 1);
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L2, &L2, f, &o), CONVOLVE_ERROR_BAD_FILTER);

    /* filters */
    convolve_filter *g;
    double nanw[3] = {1, NAN, 1};
    CHECK_STATUS(ctx, convolve_filter_create(ctx, &g, 1, &K, nanw), CONVOLVE_ERROR_BAD_FILTER);
    double infw[3] = {1, INFINITY, 1};
    CHECK_STATUS(ctx, convolve_filter_create(ctx, &g, 1, &K, infw), CONVOLVE_ERROR_BAD_FILTER);
    size_t zero = 0;
    CHECK_STATUS(ctx, convolve_filter_create(ctx, &g, 1, &zero, w), CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create(ctx, &g, 0, &K, w), CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "gaussian:-1", 2),
                 CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "box:1.5", 2),
                 CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "nope", 2), CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "sobel-x", 3),
                 CONVOLVE_ERROR_BAD_FILTER);

    /* execution: in place (the same array: exact; overlapping otherwise:
     * refused) and NULL pointers */
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o));
    double y[8];
    memcpy(y, x, sizeof y);
    CHECK_OK(ctx, convolve_execute(p, x, out));
    CHECK_OK(ctx, convolve_execute(p, y, y));
    CHECK(memcmp(y, out, sizeof y) == 0, "in place equals the run into another array");
    CHECK_STATUS(ctx, convolve_execute(p, x + 4, x), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_execute(p, y, y + 1), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_execute(p, NULL, out), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_execute((convolve_plan *)NULL, x, out),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_execute_device(p, x, out, NULL), CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_OK(ctx, convolve_execute(p, x, out));
    CHECK(strcmp(convolve_plan_strategy(p), "reference") == 0 ||
              convolve_plan_backend(p) == CONVOLVE_BACKEND_CPU,
          "small problem runs on the CPU");
    convolve_plan_free(p);
    convolve_plan_free(NULL);
    convolve_filter_free(NULL);
    convolve_filter_free(f);

    /* names are fixed */
    CHECK(strcmp(convolve_status_name(CONVOLVE_ERROR_BAD_ORIGIN), "CONVOLVE_ERROR_BAD_ORIGIN") == 0,
          "status name");
    CHECK(CONVOLVE_ERROR_INTERNAL == 13 && CONVOLVE_ERROR_CANCELLED == 14 &&
              CONVOLVE_ERROR_LIMIT == 15,
          "status numbers are fixed");
    CHECK(strcmp(convolve_status_name((convolve_status)99), "CONVOLVE_STATUS_UNKNOWN") == 0,
          "unknown status");
    CHECK(convolve_version_number() == CONVOLVE_VERSION_NUMBER, "runtime version");
}

static void named_filters(void)
{
    convolve_filter *g;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "gaussian:2", 2));
    CHECK(convolve_filter_extent(g, 0) == 17 && convolve_filter_extent(g, 1) == 17,
          "gaussian:2 radius int(4*2+0.5) = 8");
    double w[17 * 17], s = 0;
    CHECK_OK(ctx, convolve_filter_weights(g, w, 17 * 17));
    for (int i = 0; i < 17 * 17; i++)
        s += w[i];
    CHECK(fabs(s - 1) < 1e-12, "gaussian sums to 1: %.17g", s);
    CHECK(convolve_filter_is_separable(g), "gaussian is separable");
    convolve_filter_free(g);
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "box:1", 3));
    CHECK(convolve_filter_extent(g, 2) == 3 && convolve_filter_ndim(g) == 3, "box:1 in 3-D");
    convolve_filter_free(g);
    /* found by fuzzing: a short spec asked for petabytes of weights */
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "box:100000", 3),
                 CONVOLVE_ERROR_BAD_FILTER);
    CHECK(strstr(convolve_last_error(ctx), "limit") != NULL, "weight limit: %s",
          convolve_last_error(ctx));
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "gaussian:1125", 3),
                 CONVOLVE_ERROR_BAD_FILTER);
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, "box:128", 3),
                 CONVOLVE_ERROR_BAD_FILTER);
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "box:127", 3)); /* 255^3 <= 2^24 */
    convolve_filter_free(g);
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "box:100000", 1));
    convolve_filter_free(g);
    /* a sigma whose square underflows gave a NaN centre */
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "gaussian:1e-200", 2));
    double one = 0;
    CHECK(convolve_filter_extent(g, 0) == 1 && convolve_filter_weights(g, &one, 1) == CONVOLVE_OK &&
              one == 1.0,
          "gaussian:1e-200 is the identity");
    convolve_filter_free(g);
    /* a dense rank-one filter is found separable; a Laplacian is not */
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "sobel-x", 2));
    CHECK(convolve_filter_is_separable(g), "sobel-x is rank one");
    convolve_filter_free(g);
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "laplacian", 2));
    CHECK(!convolve_filter_is_separable(g), "laplacian is not rank one");
    convolve_filter_free(g);

    /* sobel-x convolved with a ramp along x gives +8 per unit slope */
    size_t sh[2] = {5, 6};
    double ramp[30], out[30];
    for (int i = 0; i < 30; i++)
        ramp[i] = i % 6;
    convolve_layout L;
    convolve_layout_init(&L, CONVOLVE_FLOAT64, 2, sh, 1);
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &g, "sobel-x", 2));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    CHECK_OK(ctx, convolve_run(ctx, &L, ramp, &L, out, g, &o));
    CHECK(out[2 * 6 + 2] == 8.0, "sobel-x on a ramp: %g", out[2 * 6 + 2]);
    convolve_filter_free(g);
}

/* The table of named filters (convolve_named_filter_get) says what
 * convolve_filter_create_named accepts: every listed name builds in exactly
 * the dimensions listed, takes an argument exactly when one is listed, and
 * the unknown-filter message lists every spec in the table's order. */
static void named_filter_table(void)
{
    size_t n = convolve_named_filter_count();
    CHECK(n >= 8, "%zu named filters", n);
    convolve_named_filter_info info, other;
    CHECK(convolve_named_filter_get(n, &info) == CONVOLVE_ERROR_INVALID_ARGUMENT, "past the end");
    CHECK(convolve_named_filter_get(0, NULL) == CONVOLVE_ERROR_INVALID_ARGUMENT, "NULL info");
    CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &(convolve_filter *){NULL}, "nope", 2),
                 CONVOLVE_ERROR_BAD_FILTER);
    char known[512];
    snprintf(known, sizeof known, "%s", convolve_last_error(ctx));
    const char *listed = strstr(known, "(known: ");
    CHECK(listed != NULL, "unknown filter message: %s", known);
    listed = listed ? listed + 8 : "";
    for (size_t i = 0; i < n; i++) {
        CHECK_OK(NULL, convolve_named_filter_get(i, &info));
        CHECK(info.name && *info.name && info.summary && *info.summary, "entry %zu", i);
        CHECK(info.dims != 0 && info.dims < 8, "%s: dims %#x", info.name, info.dims);
        for (size_t j = 0; j < i; j++)
            CHECK(convolve_named_filter_get(j, &other) == CONVOLVE_OK &&
                      strcmp(other.name, info.name) != 0,
                  "%s listed twice", info.name);
        char spec[64], bad[64];
        snprintf(spec, sizeof spec, "%s%s", info.name, info.argument ? ":1" : "");
        snprintf(bad, sizeof bad, "%s%s", info.name, info.argument ? "" : ":1");
        /* the message lists "name[:ARGUMENT]" in this order */
        char word[64];
        snprintf(word, sizeof word, "%s%s%s", info.name, info.argument ? ":" : "",
                 info.argument ? info.argument : "");
        CHECK(!strncmp(listed, word, strlen(word)), "message lists '%s' at '%s'", word, listed);
        listed += strlen(word);
        listed += *listed == ',' ? 2 : 0;
        for (int d = 1; d <= 3; d++) {
            convolve_filter *g = NULL;
            convolve_status st = convolve_filter_create_named(ctx, &g, spec, d);
            if (info.dims >> (d - 1) & 1) {
                CHECK(st == CONVOLVE_OK && convolve_filter_ndim(g) == d, "%s in %d-D: %s", spec, d,
                      convolve_last_error(ctx));
            } else {
                CHECK(st == CONVOLVE_ERROR_BAD_FILTER && g == NULL,
                      "%s in %d-D should be "
                      "refused",
                      spec, d);
                CHECK(strstr(convolve_last_error(ctx), "-D; the input has") != NULL, "%s",
                      convolve_last_error(ctx));
            }
            convolve_filter_free(g);
            CHECK_STATUS(ctx, convolve_filter_create_named(ctx, &g, bad, d),
                         CONVOLVE_ERROR_BAD_FILTER);
            CHECK(strstr(convolve_last_error(ctx),
                         info.argument ? "needs an argument" : "takes no argument") != NULL,
                  "%s: %s", bad, convolve_last_error(ctx));
        }
    }
    CHECK(!strcmp(listed, ")"), "the message lists more than the table: '%s'", listed);
}

int main(void)
{
    h_seed("test_semantics");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    hand_checked();
    integer_rounding();
    exact_rank_one_factors();
    shifts(400);
    properties(300);
    errors();
    named_filters();
    named_filter_table();
    convolve_context_free(ctx);
    return h_finish("test_semantics");
}

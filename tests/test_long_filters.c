/*
 * test_long_filters.c - separable filters longer than the array (their taps
 * folded onto it by the plan) and box filters (running sums, fast_box.c), on
 * the CPU, against this file's own double-precision loops over the taps as
 * given (never folded): every mode with a non-zero cval, origins at both
 * ends, correlate and convolve, 1-3 dimensions with odd and one-element
 * extents, channels 1 and 3, every element type in and out, 1 and 2
 * threads, the strategies fast, direct, separable, fft (where it serves)
 * and reference, outputs poisoned first.
 *
 * Also: a separable filter whose dense outer product could never be
 * allocated (3 x 10^5 taps a side: 2.2e16 bytes) is created, planned and run
 * on a small array; box sums of integer data are exact; an infinity or NaN
 * in a box's line spoils exactly the windows that read it.
 */
#include "harness.h"

static convolve_context *ctx;

static const char *k_strategies[] = {"fast", "direct", "separable", "fft", "reference"};
#define NSTRAT 5

static const convolve_dtype k_types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                          CONVOLVE_UINT16};

/* scipy.ndimage's extension of index j of an axis of n (-1: cval). */
static ptrdiff_t ext_index(ptrdiff_t j, ptrdiff_t n, convolve_mode mode)
{
    if (j >= 0 && j < n)
        return j;
    switch (mode) {
    case CONVOLVE_MODE_CONSTANT: return -1;
    case CONVOLVE_MODE_NEAREST: return j < 0 ? 0 : n - 1;
    case CONVOLVE_MODE_WRAP: return ((j % n) + n) % n;
    case CONVOLVE_MODE_MIRROR:
        if (n == 1)
            return 0;
        j = ((j % (2 * n - 2)) + (2 * n - 2)) % (2 * n - 2);
        return j < n ? j : 2 * n - 2 - j;
    default: /* reflect */ j = ((j % (2 * n)) + 2 * n) % (2 * n); return j < n ? j : 2 * n - 1 - j;
    }
}

typedef struct {
    int ndim;
    size_t shape[3], K[3], channels;
    convolve_mode mode;
    double cval;
    ptrdiff_t origin[3];
    int convolve;
    convolve_dtype tin, tout;
    int threads;
    int box; /* taps all equal (one value per axis) */
} lcase;

/* out[i][c] (doubles, C order, channels last) for taps t[a] (K[a] each):
 * scipy's correlate, or convolve (taps reversed, origin -o - (K even)). */
static void oracle(const lcase *c, double *const *t, const double *x, double *out)
{
    size_t sh[3] = {1, 1, 1}, K[3] = {1, 1, 1};
    ptrdiff_t koff[3] = {0, 0, 0};
    const double *tp[3];
    static const double one = 1.0;
    int pad = 3 - c->ndim;
    for (int a = 0; a < 3; a++)
        tp[a] = &one;
    for (int a = 0; a < c->ndim; a++) {
        sh[a + pad] = c->shape[a];
        K[a + pad] = c->K[a];
        ptrdiff_t o = c->origin[a];
        if (c->convolve)
            o = -o - (c->K[a] % 2 == 0);
        koff[a + pad] = (ptrdiff_t)(c->K[a] / 2) + o;
        tp[a + pad] = t[a];
    }
    size_t C = c->channels;
    for (size_t i0 = 0; i0 < sh[0]; i0++)
        for (size_t i1 = 0; i1 < sh[1]; i1++)
            for (size_t i2 = 0; i2 < sh[2]; i2++)
                for (size_t ch = 0; ch < C; ch++) {
                    double s = 0;
                    for (size_t k0 = 0; k0 < K[0]; k0++) {
                        ptrdiff_t j0 = ext_index((ptrdiff_t)(i0 + k0) - koff[0], (ptrdiff_t)sh[0],
                                                 c->mode);
                        double w0 = tp[0][c->convolve && pad == 0 ? K[0] - 1 - k0 : k0];
                        for (size_t k1 = 0; k1 < K[1]; k1++) {
                            ptrdiff_t j1 = ext_index((ptrdiff_t)(i1 + k1) - koff[1],
                                                     (ptrdiff_t)sh[1], c->mode);
                            double w1 = tp[1][c->convolve && pad <= 1 ? K[1] - 1 - k1 : k1];
                            for (size_t k2 = 0; k2 < K[2]; k2++) {
                                ptrdiff_t j2 = ext_index((ptrdiff_t)(i2 + k2) - koff[2],
                                                         (ptrdiff_t)sh[2], c->mode);
                                double w2 = tp[2][c->convolve ? K[2] - 1 - k2 : k2];
                                double v = j0 < 0 || j1 < 0 || j2 < 0
                                               ? c->cval
                                               : x[((size_t)j0 * sh[1] * sh[2] +
                                                    (size_t)j1 * sh[2] + (size_t)j2) *
                                                       C +
                                                   ch];
                                s += w0 * w1 * w2 * v;
                            }
                        }
                    }
                    out[((i0 * sh[1] + i1) * sh[2] + i2) * C + ch] = s;
                }
}

static void describe(const lcase *c, char *s, size_t n)
{
    snprintf(s, n,
             "%dD %zux%zux%zu c%zu K=%zux%zux%zu%s %s->%s %s %s cval=%g origin=%td,%td,%td "
             "threads=%d",
             c->ndim, c->shape[0], c->shape[1], c->shape[2], c->channels, c->K[0], c->K[1], c->K[2],
             c->box ? " box" : "", convolve_dtype_name(c->tin), convolve_dtype_name(c->tout),
             convolve_mode_name(c->mode), c->convolve ? "convolve" : "correlate", c->cval,
             c->origin[0], c->origin[1], c->origin[2], c->threads);
}

static void run_case(const lcase *c)
{
    char tag[320];
    describe(c, tag, sizeof tag);
    double *t[3] = {NULL, NULL, NULL}, wabs = 1.0;
    for (int a = 0; a < c->ndim; a++) {
        t[a] = malloc(c->K[a] * sizeof(double));
        double v = h_uniform(0.2, 1.0), sum = 0.0;
        if (c->box && c->tin != CONVOLVE_FLOAT64 && h_randint(0, 1))
            v = 1.0; /* a sum of ones, as uniform filters on integers */
        for (size_t k = 0; k < c->K[a]; k++) {
            t[a][k] = c->box ? v : h_uniform(-1.0, 1.0);
            sum += fabs(t[a][k]);
        }
        wabs *= sum;
    }
    convolve_filter *f = NULL;
    CHECK_OK(ctx,
             convolve_filter_create_separable(ctx, &f, c->ndim, c->K, (const double *const *)t));
    size_t count = c->channels;
    for (int a = 0; a < c->ndim; a++)
        count *= c->shape[a];
    size_t ies = convolve_dtype_size(c->tin), oes = convolve_dtype_size(c->tout);
    void *in = malloc(count * ies);
    double *x = malloc(count * sizeof *x), *ref = malloc(count * sizeof *ref);
    double *got = malloc(count * sizeof *got);
    double xmax = c->tin == CONVOLVE_UINT8 ? 255 : c->tin == CONVOLVE_UINT16 ? 65535 : 1;
    h_fill_typed(c->tin, in, count, 1.0);
    for (size_t i = 0; i < count; i++)
        x[i] = h_get(c->tin, in, i);
    oracle(c, t, x, ref);
    if (fabs(c->cval) > xmax)
        xmax = fabs(c->cval);
    convolve_layout li, lo;
    convolve_layout_init(&li, c->tin, c->ndim, c->shape, c->channels);
    convolve_layout_init(&lo, c->tout, c->ndim, c->shape, c->channels);
    unsigned char *out = malloc(count * oes + 64), *clean = malloc(count * oes + 64);
    h_poison(c->tout, clean, (count * oes + 64) / oes);
    /* double sums, or float ones of the short taps of a float problem */
    int dbl = c->tin == CONVOLVE_FLOAT64 || c->tout == CONVOLVE_FLOAT64;
    double prec = c->tout == CONVOLVE_FLOAT64 ? 1e-12 : dbl ? 1e-7 : 1e-5;
    double tol = prec * wabs * xmax;
    for (int s = 0; s < NSTRAT; s++) {
        convolve_options o;
        convolve_options_init(&o);
        o.operation = c->convolve ? CONVOLVE_OP_CONVOLVE : CONVOLVE_OP_CORRELATE;
        o.mode = c->mode;
        o.cval = c->cval;
        o.threads = c->threads;
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = k_strategies[s];
        for (int a = 0; a < c->ndim; a++)
            o.origin[a] = c->origin[a];
        convolve_plan *plan = NULL;
        convolve_status st = convolve_plan_create(ctx, &plan, &li, &lo, f, &o);
        if (st == CONVOLVE_ERROR_UNSUPPORTED && !strcmp(k_strategies[s], "fft"))
            continue;
        CHECK(st == CONVOLVE_OK, "%s: plan %s: %s", tag, k_strategies[s], convolve_last_error(ctx));
        if (st != CONVOLVE_OK)
            continue;
        memcpy(out, clean, count * oes + 64);
        CHECK_OK(ctx, convolve_execute(plan, in, out));
        convolve_plan_free(plan);
        CHECK(memcmp(out + count * oes, clean + count * oes, 64) == 0,
              "%s: %s wrote past the output", tag, k_strategies[s]);
        for (size_t i = 0; i < count; i++)
            got[i] = h_get(c->tout, out, i);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < count; i++) {
            double want = ref[i], err;
            if (c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16) {
                double top = c->tout == CONVOLVE_UINT8 ? 255.0 : 65535.0;
                double r = want < 0 ? 0 : want > top ? top : want;
                /* rounded to nearest: within 1, and the nearest away from ties */
                err = fabs(got[i] - r);
                if (err > 1.0 || (err > 0.5 && fabs(r - floor(r) - 0.5) > tol + 1e-9))
                    err = INFINITY;
                else
                    err = 0.0;
            } else {
                err = fabs(got[i] - want) - (tol + fabs(want) * prec);
            }
            if (!(err <= 0.0)) {
                if (!bad)
                    first = i;
                bad++;
            }
        }
        CHECK(bad == 0, "%s: %s: %zu of %zu off (first %zu: %.17g vs %.17g, tol %g)", tag,
              k_strategies[s], bad, count, first, got[first], ref[first], tol);
        if (h_failures > 20)
            break;
    }
    convolve_filter_free(f);
    for (int a = 0; a < 3; a++)
        free(t[a]);
    free(in), free(x), free(ref), free(got), free(out), free(clean);
}

static lcase random_case(int box)
{
    lcase c;
    memset(&c, 0, sizeof c);
    c.ndim = box ? (int)h_randint(1, 3) : (int)h_randint(1, 3);
    c.channels = h_randint(0, 2) ? 1 : 3;
    c.mode = (convolve_mode)h_randint(0, 4);
    c.cval = h_uniform(-3, 3);
    c.convolve = (int)h_randint(0, 1);
    c.tin = k_types[h_randint(0, 3)];
    c.tout = k_types[h_randint(0, 3)];
    c.threads = (int)h_randint(1, 2);
    c.box = box;
    int along = (int)h_randint(0, c.ndim - 1);
    for (int a = 0; a < c.ndim; a++) {
        size_t maxn = c.ndim == 1 ? 60 : c.ndim == 2 ? 17 : 6;
        c.shape[a] = h_randint(0, 5) ? (size_t)h_randint(1, (long)maxn) : 1;
        if (box) /* one axis: long or short, past the line's end or not */
            c.K[a] = a != along        ? 1
                     : h_randint(0, 1) ? (size_t)h_randint(2, 300)
                                       : (size_t)h_randint(46, 4 * c.shape[a] + 60);
        else if (a == along || (c.ndim == 2 && h_randint(0, 1))) /* folded: >= 128 taps */
            c.K[a] = (size_t)h_randint(128, (long)(8 * c.shape[a] + 160));
        else /* longer than the array, but short enough to stay unfolded */
            c.K[a] = (size_t)h_randint(1, c.ndim == 3 || h_randint(0, 1) ? 2 * (long)c.shape[a] + 1
                                                                         : 40);
        ptrdiff_t lo = -(ptrdiff_t)(c.K[a] / 2), hi = (ptrdiff_t)((c.K[a] - 1) / 2);
        long pick = h_randint(0, 2);
        c.origin[a] = pick == 0 ? lo : pick == 1 ? hi : (ptrdiff_t)h_randint(lo, hi);
    }
    return c;
}

/* A separable filter whose outer product no machine holds: made, planned
 * and run (its taps folded onto a 5 x 6 x 7 array) by the fast and the
 * reference strategies. */
static void no_dense_product(void)
{
    const size_t K[3] = {300001, 300001, 300001}, shape[3] = {5, 6, 7};
    double *t[3];
    for (int a = 0; a < 3; a++) {
        t[a] = malloc(K[a] * sizeof(double));
        for (size_t k = 0; k < K[a]; k++)
            t[a][k] = 1.0 / (double)K[a] * (1.0 + 1e-3 * (double)(k % 7));
    }
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, 3, K, (const double *const *)t));
    size_t count = shape[0] * shape[1] * shape[2];
    double *x = malloc(count * sizeof *x), *a = malloc(count * sizeof *a),
           *b = malloc(count * sizeof *b);
    h_fill(x, count);
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT64, 3, shape, 1);
    for (int m = 0; m < 5 && f; m++) {
        convolve_options o;
        convolve_options_init(&o);
        o.operation = CONVOLVE_OP_CORRELATE;
        o.mode = (convolve_mode)m;
        o.cval = 0.25;
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = "fast";
        h_poison(CONVOLVE_FLOAT64, a, count);
        h_poison(CONVOLVE_FLOAT64, b, count);
        CHECK_OK(ctx, convolve_run(ctx, &l, x, &l, a, f, &o));
        o.strategy = "reference";
        CHECK_OK(ctx, convolve_run(ctx, &l, x, &l, b, f, &o));
        /* positive weights: each output over the weights' sum lies within
         * the data's range (cval included), and the two strategies agree */
        double lo = 0.25, hi = 0.25, W = 1.0;
        for (size_t i = 0; i < count; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        for (int ax = 0; ax < 3; ax++) {
            double sum = 0.0;
            for (size_t k = 0; k < K[ax]; k++)
                sum += t[ax][k];
            W *= sum;
        }
        size_t bad = 0;
        for (size_t i = 0; i < count; i++)
            bad += !(fabs(a[i] - b[i]) <= 1e-12) || !(a[i] / W >= lo - 1e-9) ||
                   !(a[i] / W <= hi + 1e-9);
        CHECK(bad == 0, "3 x 300001 taps, mode %s: %zu outputs off", convolve_mode_name(o.mode),
              bad);
    }
    convolve_filter_free(f);
    for (int i = 0; i < 3; i++)
        free(t[i]);
    free(x), free(a), free(b);
}

/* Box sums of uint16 data into float64 are exact, through every mode and
 * lengths far past the line. */
static void exact_box(void)
{
    const size_t n = 37;
    unsigned short in[37];
    double x[37], ref[37], out[37];
    for (size_t i = 0; i < n; i++) {
        in[i] = (unsigned short)h_randint(0, 65535);
        x[i] = in[i];
    }
    static const size_t Ks[] = {2, 5, 46, 75, 76, 1001, 123457};
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
        size_t K = Ks[ki];
        double *t = malloc(K * sizeof *t);
        for (size_t k = 0; k < K; k++)
            t[k] = 1.0;
        convolve_filter *f = NULL;
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, 1, &K, (const double *const *)&t));
        for (int m = 0; m < 5 && f; m++) {
            lcase c;
            memset(&c, 0, sizeof c);
            c.ndim = 1, c.shape[0] = n, c.K[0] = K, c.channels = 1, c.mode = (convolve_mode)m;
            c.cval = 7.0, c.origin[0] = -(ptrdiff_t)(K / 2);
            oracle(&c, &t, x, ref);
            convolve_layout li, lo;
            convolve_layout_init(&li, CONVOLVE_UINT16, 1, &n, 1);
            convolve_layout_init(&lo, CONVOLVE_FLOAT64, 1, &n, 1);
            convolve_options o;
            convolve_options_init(&o);
            o.operation = CONVOLVE_OP_CORRELATE;
            o.mode = c.mode;
            o.cval = c.cval;
            o.origin[0] = c.origin[0];
            o.backend = CONVOLVE_BACKEND_CPU;
            o.strategy = "fast";
            h_poison(CONVOLVE_FLOAT64, out, n);
            CHECK_OK(ctx, convolve_run(ctx, &li, in, &lo, out, f, &o));
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += out[i] != ref[i];
            CHECK(bad == 0, "uint16 box K=%zu %s: %zu sums not exact", K,
                  convolve_mode_name(o.mode), bad);
        }
        convolve_filter_free(f);
        free(t);
    }
}

/* An infinity and a NaN in a line of a long box: the outputs whose windows
 * read them are not finite, all others are the oracle's. */
static void box_non_finite(void)
{
    const size_t n = 200, K = 151;
    double x[200], ref[200], out[200], xr[200];
    double *t = malloc(K * sizeof *t);
    for (size_t k = 0; k < K; k++)
        t[k] = 1.0 / 151.0;
    h_fill(x, n);
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, 1, &K, (const double *const *)&t));
    for (int m = 0; m < 5 && f; m++) {
        lcase c;
        memset(&c, 0, sizeof c);
        c.ndim = 1, c.shape[0] = n, c.K[0] = K, c.channels = 1, c.mode = (convolve_mode)m;
        memcpy(xr, x, sizeof x);
        xr[20] = INFINITY;
        xr[120] = NAN;
        oracle(&c, &t, xr, ref);
        convolve_layout l;
        convolve_layout_init(&l, CONVOLVE_FLOAT64, 1, &n, 1);
        convolve_options o;
        convolve_options_init(&o);
        o.operation = CONVOLVE_OP_CORRELATE;
        o.mode = c.mode;
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = "fast";
        h_poison(CONVOLVE_FLOAT64, out, n);
        CHECK_OK(ctx, convolve_run(ctx, &l, xr, &l, out, f, &o));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += isfinite(ref[i]) ? !(fabs(out[i] - ref[i]) <= 1e-12 * (1 + fabs(ref[i])))
                                    : isfinite(out[i]);
        CHECK(bad == 0, "box with inf and NaN, %s: %zu outputs off", convolve_mode_name(o.mode),
              bad);
    }
    convolve_filter_free(f);
    free(t);
}

int main(int argc, char **argv)
{
    h_seed("test_long_filters");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    int rounds = argc > 1 ? atoi(argv[1]) : 150;
    no_dense_product();
    exact_box();
    box_non_finite();
    for (int r = 0; r < rounds && h_failures <= 20; r++) {
        lcase c = random_case(r % 2);
        run_case(&c);
    }
    convolve_context_free(ctx);
    return h_finish("test_long_filters");
}

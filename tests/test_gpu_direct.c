/*
 * test_gpu_direct.c - the GPU's direct and separable strategies on every
 * kind of case users run, against the CPU reference: every pair of element
 * types, channel counts 1 to 16 (interleaved, planar, pitched, reversed and
 * stepped layouts, input and output laid out differently), filters odd,
 * even, non-square and per axis different (dense up to 64 taps an axis,
 * 257 along x only; separable up to 257), every mode with a non-zero cval,
 * origins, convolve and correlate, 1-D, 2-D and 3-D, tiny arrays and
 * filters longer than the array, on host memory and on device memory.
 * Cases are drawn at random (the seed is printed; CONVOLVE_TEST_SEED
 * replays), plus fixed ones that reach each kernel path (tile edges, rolling and re-staged 3-D, the strip's
 * ring wrapping, weights too many for the parameter bank). Outputs are
 * poisoned first.
 *
 *   test_gpu_direct            the full set
 *   test_gpu_direct --small    fewer, smaller cases (compute-sanitizer, CPU emulation)
 *   test_gpu_direct --cases N  N random cases
 *
 * Criteria: float results within 2e-5 of the output scale (sum |w| times the
 * largest input) per element and relative L2 <= 1e-5; float64 in and out
 * within 1e-10 of it; integers within one level of the rounded reference.
 * Without a usable GPU it prints why and exits 77 (skipped).
 */
#include "harness.h"

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static convolve_context *ctx;
static int g_small = 0, g_cases = 0;

typedef struct {
    const char *strategy; /* "direct", "separable", or NULL for auto */
    int ndim;
    size_t shape[3], C;
    size_t K[3];
    int separable;
    convolve_dtype tin, tout;
    convolve_mode mode;
    double cval;
    int correlate;
    ptrdiff_t origin[3];
    int lin, lout; /* layout kinds (harness.h) */
    int device;    /* also run convolve_execute_device */
} dcase;

static const convolve_dtype k_types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                          CONVOLVE_UINT16};

/* The filter of case c; *wsum receives the sum of |weights|. */
static convolve_filter *make_filter(const dcase *c, size_t kn, double *wsum)
{
    convolve_filter *f = NULL;
    double *w = malloc(kn * sizeof *w);
    if (c->separable) {
        double *taps[3];
        for (int a = 0; a < c->ndim; a++) {
            taps[a] = malloc(c->K[a] * sizeof(double));
            for (size_t i = 0; i < c->K[a]; i++)
                taps[a][i] = h_uniform(-0.2, 1.0) / (double)c->K[a];
        }
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, c->ndim, c->K,
                                                       (const double *const *)taps));
        for (int a = 0; a < c->ndim; a++)
            free(taps[a]);
        if (f)
            convolve_filter_weights(f, w, kn);
    } else {
        for (size_t i = 0; i < kn; i++)
            w[i] = h_uniform(-0.3, 1.0) / (double)kn;
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->K, w));
    }
    *wsum = 0;
    for (size_t i = 0; f && i < kn; i++)
        *wsum += fabs(w[i]);
    free(w);
    return f;
}

/* Compares got (packed, type tout) with the double reference. */
static void compare(const dcase *c, const char *tag, int pass, const void *got, const double *ref,
                    size_t n, double scale)
{
    if (c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16) {
        double *want = malloc(n * sizeof *want), top = c->tout == CONVOLVE_UINT8 ? 255 : 65535;
        for (size_t i = 0; i < n; i++) {
            double v = rint(ref[i]);
            want[i] = v < 0 ? 0 : v > top ? top : v;
        }
        h_diff d = h_compare(c->tout, got, CONVOLVE_FLOAT64, want, n, 1.0, 0.0);
        CHECK(d.bad == 0, "%s pass %d: %zu of %zu off by more than 1 (first %zu: got %g want %g)",
              tag, pass, d.bad, n, d.first_bad, h_get(c->tout, got, d.first_bad),
              want[d.first_bad]);
        free(want);
        return;
    }
    const int exact = c->tin == CONVOLVE_FLOAT64 && c->tout == CONVOLVE_FLOAT64;
    const double tol = (exact ? 1e-10 : 2e-5) * scale, eps = exact ? 1e-10 : 1e-5;
    h_diff d = h_compare(c->tout, got, CONVOLVE_FLOAT64, ref, n, tol, eps);
    CHECK(d.bad == 0,
          "%s pass %d: %zu of %zu differ (first %zu: got %.9g want %.9g, max err %g, "
          "tol %g)",
          tag, pass, d.bad, n, d.first_bad, h_get(c->tout, got, d.first_bad), ref[d.first_bad],
          d.max_abs, tol);
    if (c->tout == CONVOLVE_FLOAT32 && n > 16)
        CHECK(d.rel_l2 <= 1e-5 || scale * 1e-6 > d.max_abs, "%s: relative L2 %g", tag, d.rel_l2);
}

/* Runs the plan on device memory: copies the laid-out buffers over and back. */
static void run_device(convolve_plan *plan, const char *tag, const char *hin, size_t ib, size_t io,
                       char *hout, size_t ob, size_t oo)
{
#ifdef CONVOLVE_WITH_CUDA
    void *din = NULL, *dout = NULL;
    CHECK(cudaMalloc(&din, ib) == cudaSuccess && cudaMalloc(&dout, ob) == cudaSuccess,
          "%s: cudaMalloc", tag);
    if (din && dout) {
        cudaMemcpy(din, hin, ib, cudaMemcpyHostToDevice);
        cudaMemcpy(dout, hout, ob, cudaMemcpyHostToDevice);
        CHECK_OK(ctx, convolve_execute_device(plan, (char *)din + io, (char *)dout + oo, NULL));
        CHECK(cudaDeviceSynchronize() == cudaSuccess, "%s: device run", tag);
        cudaMemcpy(hout, dout, ob, cudaMemcpyDeviceToHost);
    }
    cudaFree(din);
    cudaFree(dout);
#else
    (void)plan, (void)tag, (void)hin, (void)ib, (void)io, (void)hout, (void)ob, (void)oo;
#endif
}

static void run_case(const dcase *c)
{
    char tag[320];
    snprintf(tag, sizeof tag,
             "%s %dD %zux%zux%zu C=%zu K=%zux%zux%zu%s %s->%s %s cval=%g "
             "origin=%td,%td,%td %s layouts=%d,%d",
             c->strategy ? c->strategy : "auto", c->ndim, c->shape[0], c->shape[1], c->shape[2],
             c->C, c->K[0], c->K[1], c->K[2], c->separable ? " sep" : "",
             convolve_dtype_name(c->tin), convolve_dtype_name(c->tout), convolve_mode_name(c->mode),
             c->cval, c->origin[0], c->origin[1], c->origin[2],
             c->correlate ? "correlate" : "convolve", c->lin, c->lout);
    g_cases++;
    size_t n = c->C, kn = 1;
    for (int a = 0; a < c->ndim; a++) {
        n *= c->shape[a];
        kn *= c->K[a];
    }
    double wsum;
    convolve_filter *f = make_filter(c, kn, &wsum);
    if (!f)
        return;
    convolve_options o;
    convolve_options_init(&o);
    o.operation = c->correlate ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    o.mode = c->mode;
    o.cval = c->cval;
    for (int a = 0; a < 3; a++)
        o.origin[a] = c->origin[a];

    const size_t ies = convolve_dtype_size(c->tin), oes = convolve_dtype_size(c->tout);
    char *xin = malloc(n * ies);
    double *ref = malloc(n * sizeof *ref);
    h_fill_typed(c->tin, xin, n, 1.0);
    convolve_layout lin_p, lref;
    convolve_layout_init(&lin_p, c->tin, c->ndim, c->shape, c->C);
    convolve_layout_init(&lref, CONVOLVE_FLOAT64, c->ndim, c->shape, c->C);
    convolve_options ro = o;
    ro.backend = CONVOLVE_BACKEND_CPU;
    ro.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &lin_p, xin, &lref, ref, f, &ro));
    const double xmax = c->tin == CONVOLVE_UINT8 ? 255 : c->tin == CONVOLVE_UINT16 ? 65535 : 1.0;
    const double scale = (xmax + fabs(c->cval)) * wsum;

    convolve_layout lin, lout;
    size_t ib, io, ob, oo;
    h_make_layout(&lin, c->tin, c->ndim, c->shape, c->C, c->lin, &ib, &io);
    h_make_layout(&lout, c->tout, c->ndim, c->shape, c->C, c->lout, &ob, &oo);
    char *hin = malloc(ib), *hout = malloc(ob), *got = malloc(n * oes);
    memset(hin, 0x7F, ib); /* bytes between elements: never read */
    h_scatter(&lin, hin + io, xin, n);

    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = c->strategy;
    convolve_plan *plan = NULL;
    convolve_status st = convolve_plan_create(ctx, &plan, &lin, &lout, f, &o);
    CHECK(st == CONVOLVE_OK, "%s: plan: %s: %s", tag, convolve_status_name(st),
          convolve_last_error(ctx));
    for (int pass = 0; plan && pass < 1 + c->device; pass++) {
        h_poison(c->tout, hout, ob / oes);
        if (pass == 0)
            CHECK_OK(ctx, convolve_execute(plan, hin + io, hout + oo));
        else
            run_device(plan, tag, hin, ib, io, hout, ob, oo);
        h_gather(&lout, hout + oo, got, n);
        compare(c, tag, pass, got, ref, n, scale);
    }
    if (plan && c->strategy == NULL)
        CHECK(strcmp(convolve_plan_strategy(plan), "direct") == 0 ||
                  strcmp(convolve_plan_strategy(plan), "separable") == 0 ||
                  strcmp(convolve_plan_strategy(plan), "fft") == 0,
              "%s: auto chose the chapter's '%s'", tag, convolve_plan_strategy(plan));
    convolve_plan_free(plan);
    convolve_filter_free(f);
    free(xin), free(ref), free(hin), free(hout), free(got);
}

static ptrdiff_t any_origin(size_t K)
{
    return h_randint(-(long)(K / 2), (long)((K - 1) / 2));
}

/* A random case: sizes small enough for the CPU reference, shapes that
 * reach tile edges on both sides. */
static void random_case(dcase *c)
{
    memset(c, 0, sizeof *c);
    c->ndim = (int)h_randint(1, 3);
    c->separable = c->ndim > 1 && h_randint(0, 2) == 0;
    c->strategy = h_randint(0, 5) == 0 ? NULL : c->separable ? "separable" : "direct";
    static const size_t chans[] = {1, 1, 1, 2, 3, 3, 4, 4, 5, 16};
    c->C = chans[h_randint(0, 9)];
    c->tin = k_types[h_randint(0, 3)];
    c->tout = h_randint(0, 2) ? c->tin : k_types[h_randint(0, 3)];
    c->mode = (convolve_mode)h_randint(0, 4);
    c->cval = h_randint(0, 1) ? 0.375 : 41.0;
    c->correlate = (int)h_randint(0, 1);
    c->lin = (int)h_randint(0, H_LAYOUT_KINDS - 1);
    c->lout = h_randint(0, 1) ? c->lin == H_REVERSED ? H_PITCHED : c->lin
                              : (int)h_randint(0, H_LAYOUT_KINDS - 1);
    if (c->lout == H_REVERSED)
        c->lout = H_PACKED; /* outputs must not overlap; reversed rows would be fine too */
    c->device = (int)h_randint(0, 1);
    /* extents from short lists, so that cases share their compiled kernels */
    static const size_t dense1[] = {1, 2, 3, 4, 5, 7, 9, 12, 17, 31, 64, 100, 257};
    static const size_t dense2[] = {1, 2, 3, 4, 5, 7, 9, 17, 31};
    static const size_t dense3[] = {1, 2, 3, 5};
    static const size_t sep[] = {1, 3, 5, 8, 13, 21, 33, 65, 129};
    const int big = !g_small && h_randint(0, 3) == 0;
    for (int a = 0; a < c->ndim; a++) {
        if (c->separable)
            c->K[a] = sep[h_randint(0, c->ndim == 3 ? 4 : big ? 8 : 6)];
        else if (c->ndim == 1)
            c->K[a] = dense1[h_randint(0, 12)];
        else if (c->ndim == 2)
            c->K[a] = dense2[h_randint(0, big ? 8 : 6)];
        else
            c->K[a] = dense3[h_randint(0, 3)];
        c->origin[a] = h_randint(0, 1) ? 0 : any_origin(c->K[a]);
    }
    if (c->separable && c->ndim == 2 && h_randint(0, 1)) {
        c->K[1] = c->K[0]; /* square too: its origin drawn for the new extent */
        c->origin[1] = h_randint(0, 1) ? 0 : any_origin(c->K[1]);
    }
    size_t lim[3];
    if (c->ndim == 1) {
        lim[0] = lim[1] = 1, lim[2] = g_small ? 3000 : 70000;
    } else if (c->ndim == 2) {
        lim[0] = 1, lim[1] = g_small ? 40 : 200, lim[2] = g_small ? 300 : 700;
    } else {
        lim[0] = g_small ? 6 : 24, lim[1] = g_small ? 9 : 30, lim[2] = g_small ? 70 : 150;
    }
    for (int a = 0; a < c->ndim; a++) {
        size_t hi = lim[3 - c->ndim + a] / (c->C > 4 ? 4 : 1);
        c->shape[a] = h_randint(0, 7) == 0 ? (size_t)h_randint(1, 4)
                                           : (size_t)h_randint(1, (long)hi);
    }
}

static void base(dcase *c, const char *s, int ndim, size_t d0, size_t d1, size_t d2, size_t C,
                 size_t K, convolve_dtype t)
{
    memset(c, 0, sizeof *c);
    c->strategy = s;
    c->ndim = ndim;
    const size_t sh[3] = {d0, d1, d2};
    for (int a = 0; a < ndim; a++) {
        c->shape[a] = sh[3 - ndim + a];
        c->K[a] = K;
    }
    c->C = C;
    c->tin = c->tout = t;
    c->mode = CONVOLVE_MODE_REFLECT;
    c->cval = 0.375;
    c->separable = s && strcmp(s, "separable") == 0;
}

int main(int argc, char **argv)
{
    int ncases = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            g_small = 1;
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            ncases = atoi(argv[++i]);
    }
    if (ncases < 0)
        ncases = g_small ? 30 : 100;
    h_seed("test_gpu_direct");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA) || !dev.available) {
        printf("test_gpu_direct: SKIPPED: no usable CUDA device (%s)\n", dev.reason);
        convolve_context_free(ctx);
        return 77;
    }
    dcase c;
    /* every mode on every type, 2-D, a tile and a half wide with both edges */
    for (int t = 0; t < 4; t++)
        for (int m = 0; m < 5; m++) {
            base(&c, "direct", 2, 1, g_small ? 19 : 45, g_small ? 200 : 333, t == 2 ? 3 : 1, 3,
                 k_types[t]);
            c.mode = (convolve_mode)m;
            c.origin[1] = m % 2 ? 1 : -1;
            c.correlate = m % 2;
            run_case(&c);
        }
    /* the precompiled specialised shapes (gen_precompiled.cu): gray 3x3, RGB
     * 3x3, a 5-tap separable strip, 3x3x3, 1-D 31 taps */
    base(&c, "direct", 2, 1, 40, 300, 1, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 2, 1, 40, 200, 3, 3, CONVOLVE_UINT8);
    c.tout = CONVOLVE_FLOAT32;
    run_case(&c);
    base(&c, "separable", 2, 1, 50, 200, 1, 5, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 3, 7, 18, 150, 1, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 1, 1, 1, 2500, 1, 31, CONVOLVE_FLOAT32);
    c.mode = CONVOLVE_MODE_MIRROR;
    run_case(&c);
    /* even, non-square, per-axis different; a filter longer than the array */
    base(&c, "direct", 2, 1, 37, 260, 1, 4, CONVOLVE_FLOAT32);
    c.K[0] = 3, c.K[1] = 9, c.origin[0] = -1, c.origin[1] = 4;
    run_case(&c);
    base(&c, "direct", 2, 1, 5, 7, 4, 12, CONVOLVE_UINT8);
    c.K[0] = 2;
    c.mode = CONVOLVE_MODE_MIRROR;
    run_case(&c);
    base(&c, "direct", 1, 1, 1, 5, 1, 31, CONVOLVE_FLOAT64);
    c.mode = CONVOLVE_MODE_WRAP;
    run_case(&c);
    /* widths around the tile (128 elements) and 1-D rows (1024) */
    for (size_t w = 127; w <= 129; w++) {
        base(&c, "direct", 2, 1, 33, w, 1, 5, CONVOLVE_FLOAT32);
        run_case(&c);
    }
    base(&c, "direct", 1, 1, 1, 1024 * 3 + 1, 1, 65 - 1, CONVOLVE_FLOAT32);
    c.K[0] = 63;
    run_case(&c);
    /* filters along x only take the separable limit (257 taps): 1-D signals
     * of every type, a 2-D row filter, longer than the signal too */
    base(&c, "direct", 1, 1, 1, 5000, 1, 257, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 1, 1, 1, 700, 2, 129, CONVOLVE_UINT16);
    c.mode = CONVOLVE_MODE_NEAREST;
    c.origin[0] = 40;
    run_case(&c);
    base(&c, "direct", 1, 1, 1, 90, 1, 200, CONVOLVE_FLOAT64);
    c.mode = CONVOLVE_MODE_WRAP;
    run_case(&c);
    base(&c, "direct", 2, 1, 30, 400, 3, 129, CONVOLVE_UINT8);
    c.K[0] = 1;
    c.mode = CONVOLVE_MODE_CONSTANT;
    run_case(&c);
    /* 3-D: rolling accumulators (3x3x3), re-staged planes (17 x 3 x 3), separable */
    base(&c, "direct", 3, 9, 11, 140, 1, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 3, 20, 6, 40, 2, 3, CONVOLVE_UINT16);
    c.K[0] = 17;
    c.mode = CONVOLVE_MODE_CONSTANT;
    run_case(&c);
    base(&c, "separable", 3, 12, 13, 70, 1, 5, CONVOLVE_FLOAT32);
    c.K[0] = 7, c.K[2] = 9;
    run_case(&c);
    base(&c, "separable", 3, 6, 7, 30, 3, 19, CONVOLVE_UINT8); /* taps past the rolling limit */
    c.mode = CONVOLVE_MODE_NEAREST;
    run_case(&c);
    /* the strip: long filters, a ring that wraps many times, u8 RGB Gaussian-like */
    base(&c, "separable", 2, 1, g_small ? 150 : 700, g_small ? 140 : 300, 1, 65, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "separable", 2, 1, g_small ? 60 : 400, g_small ? 90 : 600, 3, 21, CONVOLVE_UINT8);
    c.mode = CONVOLVE_MODE_CONSTANT;
    c.cval = 200.5;
    run_case(&c);
    if (!g_small) {
        base(&c, "separable", 2, 1, 600, 500, 1, 257, CONVOLVE_FLOAT32);
        run_case(&c);
    }
    /* weights past the parameter bank (in shared memory instead) */
    base(&c, "direct", 2, 1, 70, 90, 1, 64, CONVOLVE_FLOAT64);
    c.K[0] = 63;
    run_case(&c);
    /* many interleaved channels, planar in and interleaved out */
    base(&c, "direct", 2, 1, 20, 50, 16, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    base(&c, "direct", 2, 1, 30, 70, 3, 5, CONVOLVE_FLOAT32);
    c.lin = H_PLANAR, c.lout = H_PACKED;
    c.tout = CONVOLVE_UINT8;
    run_case(&c);
    /* shapes whose lookup keys met the instances' of fast_direct_u8.cu,
     * fast_direct_u16.cu (channels x 8 + K: RGB 11x11 ran RGBA 3x3's
     * kernel), fast_direct_f32.cu (KY x 32 + KX: 1 x 69 ran 3 x 5's) and
     * fast_sep_int.cu (K x 4 + C): each must run a kernel of its own */
    /* (--small: one of each kind) */
    for (int t = 2; t < 4; t++) {
        static const size_t ck[][2] = {{3, 11}, {2, 13}, {1, 19}, {3, 13}, {2, 11}, {1, 21}};
        for (size_t i = t - 2; i < sizeof ck / sizeof ck[0]; i += g_small ? 6 : 1) {
            base(&c, "direct", 2, 1, 13, 29, ck[i][0], ck[i][1], k_types[t]);
            c.mode = (convolve_mode)(i % 5);
            c.cval = 7.0; /* a value of the type's: CONSTANT stays on these kernels */
            run_case(&c);
        }
        if (!g_small || t == 2) {
            base(&c, "separable", 2, 1, 11, 30, 9, 3, k_types[t]);
            run_case(&c);
        }
    }
    {
        static const size_t kyx[][2] = {{1, 69}, {2, 37}, {4, 35}, {1, 71}, {2, 41}, {8, 35}};
        for (size_t i = 0; i < (g_small ? 1 : sizeof kyx / sizeof kyx[0]); i++) {
            base(&c, "direct", 2, 1, 11, 75, 1, 3, CONVOLVE_FLOAT32);
            c.K[0] = kyx[i][0], c.K[1] = kyx[i][1];
            c.mode = (convolve_mode)(i % 5);
            run_case(&c);
        }
    }
    for (int i = 0; i < ncases; i++) {
        random_case(&c);
        run_case(&c);
    }
    printf("test_gpu_direct: %d cases\n", g_cases);
    convolve_context_free(ctx);
    return h_finish("test_gpu_direct");
}

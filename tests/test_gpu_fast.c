/*
 * test_gpu_fast.c - the fast GPU strategies (direct, separable, fft) against
 * the CPU reference, with cases built to reach every fast kernel: rows wide
 * enough for interior warps and edges on both sides, every mode with a
 * non-zero cval, origins (including ones that shift stores off vector
 * alignment), convolve and correlate, every filter size compiled, uint8 and
 * uint16 gray and RGB, 1-D signals, 3-D volumes (uint8 and uint16 dense,
 * float64 separable), FFTs of every dimensionality and type (float64 in
 * double precision), tiny arrays, pitched and reversed layouts, planar
 * channels and stacks of planes (batched 2-D launches, or the generated
 * kernels), even dense sizes, on host memory and on device memory. Outputs
 * are poisoned first; fresh random data each run (seeded).
 *
 *   test_gpu_fast           the full set (a few seconds on an H100)
 *   test_gpu_fast --small   fewer, smaller cases (compute-sanitizer, CPU emulation)
 *
 * Criteria: float32 results within 2e-5 of the output scale per element
 * (sum |w| * max |x|) and relative L2 <= 1e-5; FFTs of float data within
 * 2e-5 of the scale; float64 within 1e-10; integers within 1.
 * Without a usable GPU it prints why and exits 77 (skipped).
 */
#include "harness.h"

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static convolve_context *ctx;
static int g_small = 0;
static int g_cases = 0;

typedef struct {
    const char *strategy;
    int ndim;
    size_t shape[3], C;
    size_t K[3];
    int separable;
    convolve_dtype tin, tout;
    convolve_mode mode;
    int correlate;
    ptrdiff_t origin[3];
    int layout;     /* H_PACKED, H_PITCHED, H_REVERSED or H_PLANAR (harness.h) */
    int device;     /* run convolve_execute_device too */
    double xscale;  /* float inputs drawn from [-xscale, xscale] (0: 1) */
    int whole_cval; /* uint16: cval 1234 (the integer kernels serve it), not 0.375 */
    int frac_cval;  /* uint8: cval 37.5 (the generated kernels take it), not 37 */
} fcase;

static const char *dt(convolve_dtype t)
{
    return convolve_dtype_name(t);
}

static void run_case(const fcase *c)
{
    char tag[256];
    snprintf(tag, sizeof tag,
             "%s %dD %zux%zux%zu C=%zu K=%zux%zux%zu%s %s->%s %s cval origin=%td,%td,%td "
             "%s layout=%d",
             c->strategy, c->ndim, c->shape[0], c->shape[1], c->shape[2], c->C, c->K[0], c->K[1],
             c->K[2], c->separable ? " sep" : "", dt(c->tin), dt(c->tout),
             convolve_mode_name(c->mode), c->origin[0], c->origin[1], c->origin[2],
             c->correlate ? "correlate" : "convolve", c->layout);
    g_cases++;
    size_t n = c->C, kn = 1;
    for (int a = 0; a < c->ndim; a++) {
        n *= c->shape[a];
        kn *= c->K[a];
    }
    /* filter */
    convolve_filter *f = NULL;
    double *w = malloc(kn * sizeof *w), wsum = 0;
    if (c->separable) {
        double *taps[3];
        for (int a = 0; a < c->ndim; a++) {
            taps[a] = malloc(c->K[a] * sizeof(double));
            for (size_t i = 0; i < c->K[a]; i++) /* an axis of extent 1: the tap 1 */
                taps[a][i] = c->K[a] == 1 ? 1.0 : h_uniform(0.05, 1.0) / (double)c->K[a];
        }
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, c->ndim, c->K,
                                                       (const double *const *)taps));
        for (int a = 0; a < c->ndim; a++)
            free(taps[a]);
        convolve_filter_weights(f, w, kn);
    } else {
        for (size_t i = 0; i < kn; i++)
            w[i] = c->tin == CONVOLVE_UINT8 ? h_uniform(0.0, 2.0) / (double)kn
                                            : h_uniform(-1.0, 1.0);
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->K, w));
    }
    for (size_t i = 0; i < kn; i++)
        wsum += fabs(w[i]);
    free(w);
    if (!f)
        return;

    convolve_options o;
    convolve_options_init(&o);
    o.operation = c->correlate ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    o.mode = c->mode;
    o.cval = c->tin == CONVOLVE_UINT8                     ? (c->frac_cval ? 37.5 : 37.0)
             : c->tin == CONVOLVE_UINT16 && c->whole_cval ? 1234.0
                                                          : 0.375;
    for (int a = 0; a < 3; a++)
        o.origin[a] = c->origin[a];

    /* input, packed, and its reference result (double) */
    size_t ies = convolve_dtype_size(c->tin), oes = convolve_dtype_size(c->tout);
    char *xin = malloc(n * ies);
    const double xs = c->xscale > 0 ? c->xscale : 1.0;
    h_fill_typed(c->tin, xin, n, xs);
    double *ref = malloc(n * sizeof *ref);
    convolve_layout lin_p, lref;
    convolve_layout_init(&lin_p, c->tin, c->ndim, c->shape, c->C);
    convolve_layout_init(&lref, CONVOLVE_FLOAT64, c->ndim, c->shape, c->C);
    convolve_options ro = o;
    ro.backend = CONVOLVE_BACKEND_CPU;
    ro.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &lin_p, xin, &lref, ref, f, &ro));
    double xmax = c->tin == CONVOLVE_UINT8 ? 255 : c->tin == CONVOLVE_UINT16 ? 65535 : xs;
    double scale = (xmax + fabs(o.cval)) * wsum;

    /* the layouts under test */
    convolve_layout lin, lout;
    size_t ib, io, ob, oo;
    h_make_layout(&lin, c->tin, c->ndim, c->shape, c->C, c->layout, &ib, &io);
    h_make_layout(&lout, c->tout, c->ndim, c->shape, c->C, c->layout == 2 ? 1 : c->layout, &ob,
                  &oo);
    char *hin = malloc(ib), *hout = malloc(ob), *got = malloc(n * oes);
    h_scatter(&lin, hin + io, xin, n);

    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = c->strategy;
    convolve_plan *plan = NULL;
    convolve_status st = convolve_plan_create(ctx, &plan, &lin, &lout, f, &o);
    CHECK(st == CONVOLVE_OK, "%s: plan: %s: %s", tag, convolve_status_name(st),
          convolve_last_error(ctx));
    for (int pass = 0; plan && pass < 1 + c->device; pass++) {
        h_poison(c->tout, hout, ob / oes);
        if (pass == 0) {
            CHECK_OK(ctx, convolve_execute(plan, hin + io, hout + oo));
        } else {
#ifdef CONVOLVE_WITH_CUDA
            void *din = NULL, *dout = NULL;
            CHECK(cudaMalloc(&din, ib) == cudaSuccess && cudaMalloc(&dout, ob) == cudaSuccess,
                  "%s: cudaMalloc", tag);
            cudaMemcpy(din, hin, ib, cudaMemcpyHostToDevice);
            cudaMemcpy(dout, hout, ob, cudaMemcpyHostToDevice);
            CHECK_OK(ctx, convolve_execute_device(plan, (char *)din + io, (char *)dout + oo, NULL));
            CHECK(cudaDeviceSynchronize() == cudaSuccess, "%s: device run", tag);
            cudaMemcpy(hout, dout, ob, cudaMemcpyDeviceToHost);
            cudaFree(din);
            cudaFree(dout);
#endif
        }
        h_gather(&lout, hout + oo, got, n);
        int fft = strcmp(c->strategy, "fft") == 0;
        double tol, eps;
        if (c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16) {
            /* the reference rounds in double; allow one step for float sums */
            double *want = malloc(n * sizeof *want);
            for (size_t i = 0; i < n; i++) {
                double v = rint(ref[i]), top = c->tout == CONVOLVE_UINT8 ? 255 : 65535;
                want[i] = v < 0 ? 0 : v > top ? top : v;
            }
            h_diff d = h_compare(c->tout, got, CONVOLVE_FLOAT64, want, n, 1.0, 0.0);
            CHECK(d.bad == 0,
                  "%s pass %d: %zu of %zu off by more than 1 (first %zu: got %g want %g)", tag,
                  pass, d.bad, n, d.first_bad, h_get(c->tout, got, d.first_bad), want[d.first_bad]);
            free(want);
        } else {
            if (c->tin == CONVOLVE_FLOAT64 && c->tout == CONVOLVE_FLOAT64) {
                tol = 1e-10 * scale;
                eps = 1e-10;
            } else {
                tol = (fft ? 2e-5 : 2e-5) * scale;
                eps = 1e-5;
            }
            h_diff d = h_compare(c->tout, got, CONVOLVE_FLOAT64, ref, n, tol, eps);
            CHECK(d.bad == 0,
                  "%s pass %d: %zu of %zu differ (first %zu: got %.9g want %.9g, max "
                  "err %g, tol %g)",
                  tag, pass, d.bad, n, d.first_bad, h_get(c->tout, got, d.first_bad),
                  ref[d.first_bad], d.max_abs, tol);
            if (c->tout == CONVOLVE_FLOAT32 && n > 16)
                CHECK(d.rel_l2 <= 1e-5 || scale * 1e-6 > d.max_abs, "%s: relative L2 %g", tag,
                      d.rel_l2);
        }
    }
    convolve_plan_free(plan);
    convolve_filter_free(f);
    free(xin), free(ref), free(hin), free(hout), free(got);
}

static convolve_mode any_mode(void)
{
    return (convolve_mode)h_randint(0, 4);
}

static ptrdiff_t any_origin(size_t K)
{
    return h_randint(-(long)(K / 2), (long)((K - 1) / 2));
}

static void base_case(fcase *c, const char *s, int ndim, size_t d0, size_t d1, size_t d2, size_t C,
                      size_t K, convolve_dtype tin)
{
    memset(c, 0, sizeof *c);
    c->strategy = s;
    c->ndim = ndim;
    size_t sh[3] = {d0, d1, d2};
    for (int a = 0; a < ndim; a++) {
        c->shape[a] = sh[3 - ndim + a];
        c->K[a] = K;
        c->origin[a] = h_randint(0, 2) ? 0 : any_origin(K);
    }
    c->C = C;
    c->tin = c->tout = tin;
    c->mode = any_mode();
    c->correlate = (int)h_randint(0, 1);
    c->layout = (int)h_randint(0, 2);
    c->device = (int)h_randint(0, 1);
}

static void out_type_variant(fcase *c)
{
    static const convolve_dtype outs[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                           CONVOLVE_UINT16};
    if (h_randint(0, 3) == 0)
        c->tout = outs[h_randint(0, 3)];
}

/* Weights near the largest double: cuFFT's transforms would overflow
 * (every output NaN). The fft strategy refuses them, saying why, and auto,
 * which takes the FFT for dense filters of more than 400 taps, takes
 * another strategy: no NaN (inf where the sums overflow). */
static void huge_weights(void)
{
    size_t shape[2] = {20, 30}, k[2] = {21, 21}, n = 20 * 30, kc = 21 * 21;
    double *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got), *w = malloc(kc * sizeof *w);
    h_fill(x, n);
    for (size_t i = 0; i < kc; i++)
        w[i] = h_uniform(-1.0, 1.0) * 1e307;
    convolve_layout L;
    convolve_layout_init(&L, CONVOLVE_FLOAT64, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = "fft";
    convolve_plan *p = NULL;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o), CONVOLVE_ERROR_UNSUPPORTED);
    CHECK(strstr(convolve_last_error(ctx), "overflow") != NULL, "the message says why: %s",
          convolve_last_error(ctx));
    convolve_plan_free(p);
    o.strategy = NULL;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &L, &L, f, &o));
    if (p) {
        CHECK(strcmp(convolve_plan_strategy(p), "fft") != 0, "auto took %s",
              convolve_plan_strategy(p));
        h_poison(CONVOLVE_FLOAT64, got, n);
        CHECK_OK(ctx, convolve_execute(p, x, got));
        size_t nans = 0;
        for (size_t i = 0; i < n; i++)
            nans += isnan(got[i]) != 0;
        CHECK(nans == 0, "auto (%s) with weights of 1e307: %zu of %zu outputs NaN",
              convolve_plan_strategy(p), nans, n);
        convolve_plan_free(p);
    }
    g_cases++;
    convolve_filter_free(f);
    free(x), free(got), free(w);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--small"))
            g_small = 1;
    h_seed("test_gpu_fast");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA) || !dev.available) {
        printf("test_gpu_fast: SKIPPED: no usable CUDA device (%s)\n", dev.reason);
        convolve_context_free(ctx);
        return 77;
    }
    fcase c;
    const size_t wide = g_small ? 300 : 1100, rows = g_small ? 9 : 37;

    /* 2-D direct, float32 gray: every compiled K (--small too: each K is an
     * instance with its own register bound); wide rows give interior warps */
    for (size_t K = 3; K <= 17; K += 2) {
        base_case(&c, "direct", 2, 1, rows + K % 5, wide + K, 1, K, CONVOLVE_FLOAT32);
        out_type_variant(&c);
        run_case(&c);
    }
    /* the even dense float32 sizes (2, 4, 6): every mode, origins at both
     * ends of their range, rows wide enough for interior warps */
    for (int m = 0; m < 5; m++) {
        const size_t K = 2 + 2 * (size_t)(m % 3);
        base_case(&c, "direct", 2, 1, rows + (size_t)m, wide + (size_t)m, 1, K, CONVOLVE_FLOAT32);
        c.mode = (convolve_mode)m;
        c.origin[0] = m % 2 ? -(ptrdiff_t)(K / 2) : (ptrdiff_t)((K - 1) / 2);
        c.origin[1] = m % 2 ? (ptrdiff_t)((K - 1) / 2) : m == 4 ? 0 : -(ptrdiff_t)(K / 2);
        out_type_variant(&c);
        run_case(&c);
    }
    /* non-square dense float32 (ky rows of kx weights): the compiled sizes
     * 3x5, 5x3, 3x7, 7x3, 3x9, 9x3 and one the generated tile serves (5x7),
     * every mode in turn, origins anywhere in their ranges, rows 16-byte
     * aligned or not */
    for (int m = 0; m < 7; m++) {
        static const size_t ky[7] = {3, 5, 3, 7, 3, 9, 5}, kx[7] = {5, 3, 7, 3, 9, 3, 7};
        base_case(&c, "direct", 2, 1, rows + (size_t)m, wide + (size_t)(m % 2), 1, 3,
                  CONVOLVE_FLOAT32);
        c.K[0] = ky[m];
        c.K[1] = kx[m];
        c.mode = (convolve_mode)(m % 5);
        c.origin[0] = any_origin(ky[m]);
        c.origin[1] = any_origin(kx[m]);
        out_type_variant(&c);
        run_case(&c);
    }
    /* origin that shifts stores by one element, and every mode on one size */
    for (int m = 0; m < 5; m++) {
        base_case(&c, "direct", 2, 1, rows, wide, 1, 5, CONVOLVE_FLOAT32);
        c.mode = (convolve_mode)m;
        c.origin[1] = m % 2 ? 1 : -2;
        c.origin[0] = m % 3 - 1;
        run_case(&c);
    }
    /* the planar layout of one channel, tiny arrays */
    base_case(&c, "direct", 2, 1, 7, 300, 1, 3, CONVOLVE_FLOAT32);
    c.layout = 3;
    run_case(&c);
    base_case(&c, "direct", 2, 1, 1, 1, 1, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    base_case(&c, "direct", 2, 1, 2, 5, 1, 7, CONVOLVE_FLOAT32);
    run_case(&c);

    /* batches of 2-D images on the 2-D kernels: planar channels (on device
     * memory: the host path packs them interleaved) and stacks of planes
     * under a filter of extent 1 along z, dense and separable, every mode,
     * planes 16-byte aligned or not; a stack stepped along x (not a batch:
     * the generated kernels) */
    for (int m = 0; m < 5; m++) {
        const size_t K = 3 + 2 * (size_t)(m % 3);
        base_case(&c, m % 2 ? "separable" : "direct", 2, 1, rows + (size_t)m, wide + 3 * (size_t)m,
                  2 + (size_t)(m % 3), K, CONVOLVE_FLOAT32);
        c.separable = m % 2;
        c.mode = (convolve_mode)m;
        c.layout = H_PLANAR;
        c.device = 1;
        out_type_variant(&c);
        run_case(&c);
        base_case(&c, m % 2 ? "separable" : "direct", 3, 3 + (size_t)m, rows + (size_t)m,
                  wide + (size_t)m, 1, K, CONVOLVE_FLOAT32);
        c.K[0] = 1;
        c.origin[0] = 0;
        c.separable = m % 2;
        c.mode = (convolve_mode)m;
        c.layout = m == 4 ? H_STEPPED : m % 3;
        run_case(&c);
    }
    for (size_t K = 9; K <= 13; K += 4) { /* the largest batched separable instances */
        base_case(&c, "separable", 3, 3, rows + K, wide + K, 1, K, CONVOLVE_FLOAT32);
        c.K[0] = 1;
        c.origin[0] = 0;
        c.separable = 1;
        run_case(&c);
        base_case(&c, "separable", 2, 1, rows + K, wide + K, 3, K - 2, CONVOLVE_FLOAT32);
        c.separable = 1;
        c.layout = H_PLANAR;
        c.device = 1;
        run_case(&c);
    }

    /* 2-D uint8 gray, RGB and RGBA; uint16 dense (its separable filters
     * below), and either into another type now and then */
    for (size_t C = 1; C <= 4; C += C == 1 ? 2 : 1)
        for (size_t K = 3; K <= 5; K += 2) {
            base_case(&c, "direct", 2, 1, rows, wide + 3, C, K, CONVOLVE_UINT8);
            run_case(&c);
            base_case(&c, "separable", 2, 1, rows, wide + 1, C, K + 4, CONVOLVE_UINT8);
            c.separable = 1;
            run_case(&c);
            base_case(&c, "direct", 2, 1, rows + 1, wide + 5, C, K, CONVOLVE_UINT16);
            c.whole_cval = 1;
            c.mode = h_randint(0, 1) ? CONVOLVE_MODE_CONSTANT : c.mode;
            run_case(&c);
            base_case(&c, "direct", 2, 1, rows, wide + 4, C, K,
                      h_randint(0, 1) ? CONVOLVE_UINT16 : CONVOLVE_UINT8);
            c.whole_cval = (int)h_randint(0, 1);
            out_type_variant(&c);
            run_case(&c);
        }

    /* 2-D separable uint8 and uint16 (1, 3, 4 channels),
     * K = 3..11 (fast_sep_int.cu): several strips across and down, rows
     * 16-byte aligned (widths 528) and not even 4-byte aligned (odd widths),
     * any mode and origin, every output type; then every mode with origins
     * on RGB, and tiny images */
    for (int u16 = 0; u16 <= 1; u16++)
        for (size_t C = 1; C <= 4; C++) {
            if (C == 2)
                continue;
            for (size_t K = 3; K <= 11; K += 2) {
                if (g_small && K != 3 && K != 7 && K != 11)
                    continue;
                const size_t w = K == 3 || K == 9 || K == 11 ? 528 : 301 + K;
                base_case(&c, "separable", 2, 1, (g_small ? 40 : 150) + K, w, C, K,
                          u16 ? CONVOLVE_UINT16 : CONVOLVE_UINT8);
                c.separable = 1;
                out_type_variant(&c);
                run_case(&c);
            }
        }
    for (int m = 0; m < 5; m++) {
        base_case(&c, "separable", 2, 1, 61, 530 + m, 3, 5, CONVOLVE_UINT8);
        c.separable = 1;
        c.mode = (convolve_mode)m;
        c.origin[0] = m % 2 ? 2 : -1;
        c.origin[1] = m % 3 - 1;
        run_case(&c);
    }
    base_case(&c, "separable", 2, 1, 1, 1, 4, 3, CONVOLVE_UINT8);
    c.separable = 1;
    run_case(&c);
    base_case(&c, "separable", 2, 1, 2, 5, 3, 11, CONVOLVE_UINT16);
    c.separable = 1;
    run_case(&c);

    /* separable float32 */
    for (size_t K = 3; K <= 33; K += g_small ? 10 : 2) {
        base_case(&c, "separable", 2, 1, rows + K, wide, 1, K, CONVOLVE_FLOAT32);
        c.separable = 1;
        out_type_variant(&c);
        run_case(&c);
    }
    base_case(&c, "separable", 2, 1, 3, 2, 1, 9, CONVOLVE_FLOAT32);
    c.separable = 1;
    c.mode = CONVOLVE_MODE_CONSTANT; /* rows outside carry cval * sum(wx) */
    run_case(&c);

    /* 1-D direct */
    for (size_t K = 3; K <= 33; K += g_small ? 10 : 2) {
        base_case(&c, "direct", 1, 1, 1, (g_small ? 2000 : 20011) + K, 1, K, CONVOLVE_FLOAT32);
        out_type_variant(&c);
        run_case(&c);
    }
    base_case(&c, "direct", 1, 1, 1, 1, 1, 31, CONVOLVE_FLOAT32);
    run_case(&c);
    base_case(&c, "direct", 1, 1, 1, 300, 1, 31, CONVOLVE_FLOAT32);
    c.origin[0] = 15;
    run_case(&c);

    /* 3-D direct */
    for (size_t K = 3; K <= 9; K += 2) {
        if (g_small && K == 9)
            continue;
        base_case(&c, "direct", 3, 5 + K, 11, g_small ? 140 : 300, 1, K, CONVOLVE_FLOAT32);
        out_type_variant(&c);
        run_case(&c);
    }
    base_case(&c, "direct", 3, 2, 3, 4, 1, 3, CONVOLVE_FLOAT32);
    run_case(&c);
    /* 3-D direct, uint8 and uint16 (tiles widened to float): every compiled
     * K, rows 16-byte aligned (widths of 16k) and not, CONSTANT with a whole
     * cval or (uint16, now and then) a fraction, which the generated kernels
     * take; a volume deeper than a block's run of planes and taller than a
     * block's rows; a tiny one */
    for (size_t K = 3; K <= 9; K += 2)
        for (int u16 = 0; u16 <= 1; u16++) {
            if (g_small && K > 5)
                continue;
            base_case(&c, "direct", 3, 4 + K, 9, (g_small ? 144 : 288) + (K == 5 ? 3 : 0), 1, K,
                      u16 ? CONVOLVE_UINT16 : CONVOLVE_UINT8);
            c.whole_cval = h_randint(0, 3) != 0;
            out_type_variant(&c);
            run_case(&c);
        }
    for (int forced = 0; forced <= 1; forced++) { /* runs of 8 planes: 8, 8, 5 */
        if (forced)
            setenv("CONVOLVE_3D_ZRUN", "8", 1);
        base_case(&c, "direct", 3, 21, 37, 144, 1, 3, CONVOLVE_UINT16);
        c.whole_cval = 1;
        c.mode = CONVOLVE_MODE_CONSTANT;
        run_case(&c);
        base_case(&c, "direct", 3, 21, 19, 133, 1, 5, CONVOLVE_FLOAT32);
        run_case(&c);
        unsetenv("CONVOLVE_3D_ZRUN");
    }
    base_case(&c, "direct", 3, 6, 37, 133, 1, 3, CONVOLVE_FLOAT32); /* 3 blocks of 16 rows */
    run_case(&c);
    base_case(&c, "direct", 3, 2, 3, 5, 1, 3, CONVOLVE_UINT8);
    run_case(&c);
    /* uint8 under CONSTANT with a cval that is not a uint8, into float32
     * (where half a step shows), 3-D and 2-D */
    for (int nd = 2; nd <= 3; nd++) {
        base_case(&c, "direct", nd, 5, 9, 144, 1, 3, CONVOLVE_UINT8);
        c.mode = CONVOLVE_MODE_CONSTANT;
        c.frac_cval = 1;
        c.tout = CONVOLVE_FLOAT32;
        run_case(&c);
    }

    /* 3-D separable, float32 (fast_direct3d.cu's one-pass walk): every
     * compiled K (the x halo of 4 and of 8 columns), every mode with
     * origins, rows that are not 16-byte aligned, tiny volumes */
    for (size_t K = 3; K <= 17; K += 2) {
        if (g_small && K != 3 && K != 9 && K != 17)
            continue;
        base_case(&c, "separable", 3, 4 + K, 13, (g_small ? 140 : 300) + 4, 1, K, CONVOLVE_FLOAT32);
        c.separable = 1;
        out_type_variant(&c);
        run_case(&c);
    }
    for (int m = 0; m < 5; m++) {
        /* three blocks of 128 columns: the middle one's tile rows wholly
         * inside the volume, the outer ones past the faces; rows 16-byte
         * aligned but for mirror */
        base_case(&c, "separable", 3, 9, 10, m == 3 ? 267 : 260 + 4 * m, 1, 7, CONVOLVE_FLOAT32);
        c.separable = 1;
        c.mode = (convolve_mode)m;
        c.origin[0] = m % 3 - 1;
        c.origin[1] = m % 2 ? 2 : -1;
        c.origin[2] = m % 2 ? -3 : 1;
        run_case(&c);
    }
    base_case(&c, "separable", 3, 2, 3, 5, 1, 13, CONVOLVE_FLOAT32);
    c.separable = 1;
    c.mode = CONVOLVE_MODE_CONSTANT;
    run_case(&c);
    base_case(&c, "separable", 3, 1, 1, 1, 1, 3, CONVOLVE_FLOAT32);
    c.separable = 1;
    run_case(&c);
    /* deeper than a block's run of planes: with the launcher's own runs
     * (on volumes this small, a few planes each or one), and with runs of
     * 4 (K - 1) planes (CONVOLVE_3D_ZRUN), the last one shorter than K - 1,
     * so that each walk has its first planes, its planes with every z tap
     * inside the run, and its last planes (the kernels that walk them in
     * separate loops) */
    for (size_t K = 3; K <= 17; K += g_small ? 14 : 2)
        for (int forced = 0; forced <= 1; forced++) {
            char run[32];
            snprintf(run, sizeof run, "%zu", 4 * (K - 1));
            if (forced)
                setenv("CONVOLVE_3D_ZRUN", run, 1);
            base_case(&c, "separable", 3, 4 * (K - 1) + 1 + K / 3, 6, 37, 1, K, CONVOLVE_FLOAT32);
            c.separable = 1;
            run_case(&c);
            base_case(&c, "separable", 3, 4 * (K - 1) + 1 + K / 3, 5, 35, 1, K, CONVOLVE_FLOAT64);
            c.separable = 1;
            run_case(&c);
            unsetenv("CONVOLVE_3D_ZRUN");
        }

    /* 3-D separable, float64 (the same walk summed in double: 2 columns a
     * lane, 64-column tiles, x halos of 2 to 8 columns): every compiled K,
     * every mode with origins (odd shifts store element by element), odd
     * widths (rows not 16-byte aligned), every output type (inputs up to 300,
     * so that integer outputs round and saturate), tiny volumes */
    for (size_t K = 3; K <= 17; K += 2) {
        if (g_small && K != 3 && K != 7 && K != 17)
            continue;
        base_case(&c, "separable", 3, 4 + K, 11, (g_small ? 140 : 300) + 2, 1, K, CONVOLVE_FLOAT64);
        c.separable = 1;
        out_type_variant(&c);
        run_case(&c);
    }
    for (int m = 0; m < 5; m++) {
        base_case(&c, "separable", 3, 9, 10, 195 + m, 1, 7, CONVOLVE_FLOAT64);
        c.separable = 1;
        c.mode = (convolve_mode)m;
        c.origin[0] = m % 3 - 1;
        c.origin[1] = m % 2 ? 2 : -1;
        c.origin[2] = m == 4 ? 2 : m % 2 ? -3 : 1;
        run_case(&c);
    }
    for (int t = 0; t < 4; t++) {
        static const convolve_dtype outs[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                               CONVOLVE_UINT16};
        base_case(&c, "separable", 3, 7, 9, 140 + t, 1, 5, CONVOLVE_FLOAT64);
        c.separable = 1;
        c.tout = outs[t];
        c.xscale = 300.0; /* integer outputs spread over hundreds of steps */
        run_case(&c);
    }
    base_case(&c, "separable", 3, 2, 3, 5, 1, 13, CONVOLVE_FLOAT64);
    c.separable = 1;
    c.mode = CONVOLVE_MODE_CONSTANT;
    run_case(&c);
    base_case(&c, "separable", 3, 1, 1, 1, 1, 3, CONVOLVE_FLOAT64);
    c.separable = 1;
    run_case(&c);

    /* FFT: every dimensionality and type, channels, even and long filters */
    static const convolve_dtype types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                            CONVOLVE_UINT16};
    for (int t = 0; t < 4; t++) {
        base_case(&c, "fft", 2, 1, 13, 17, t == 2 ? 3 : 1, 5, types[t]);
        c.K[0] = 4; /* even, non-square */
        c.origin[0] = any_origin(4);
        run_case(&c);
        base_case(&c, "fft", 1, 1, 1, 40, 1, 9, types[t]);
        run_case(&c);
        base_case(&c, "fft", 3, 4, 5, 6, 1, 3, types[t]);
        run_case(&c);
    }
    base_case(&c, "fft", 1, 1, 1, 5, 1, 13, CONVOLVE_FLOAT32); /* filter past the input */
    run_case(&c);
    if (!g_small) {
        base_case(&c, "fft", 2, 1, 200, 300, 1, 31, CONVOLVE_FLOAT32);
        run_case(&c);
    }
    /* FFT in tiles (overlap-save): arrays large enough that the plan cuts
     * them; every mode, an origin, uneven last tiles, channels, 1-D too */
    for (int m = 0; m < 5; m++) {
        if (g_small && m > 1)
            break;
        base_case(&c, "fft", 2, 1, g_small ? 1100 : 1500, g_small ? 1030 : 1301, 1, 9,
                  CONVOLVE_FLOAT32);
        c.mode = (convolve_mode)m;
        c.K[0] = 7; /* non-square: its origin drawn for the new extent */
        c.origin[0] = any_origin(7);
        c.origin[1] = m % 2 ? 4 : -3;
        run_case(&c);
    }
    base_case(&c, "fft", 2, 1, 1100, 1000, 3, 9, CONVOLVE_UINT8);
    run_case(&c);
    base_case(&c, "fft", 1, 1, 1, g_small ? 300001 : 1000003, 1, 33, CONVOLVE_FLOAT32);
    run_case(&c);
    base_case(&c, "fft", 2, 1, 1100, 1000, 1, 11, CONVOLVE_FLOAT64);
    run_case(&c);
    huge_weights();

    printf("test_gpu_fast: %d cases\n", g_cases);
    convolve_context_free(ctx);
    return h_finish("test_gpu_fast");
}

/*
 * test_mpi_exact.c - under mpirun with any number of ranks: the distributed
 * plan's output equals the single-process result bit for bit.
 *
 * Every rank draws the same random cases (the seed comes from rank 0): 1-D
 * to 3-D arrays, every boundary mode, cval (zero and not), origins at both
 * ends, convolve and correlate, all 16 dtype pairs, 1 to 3 channels, dense
 * and separable filters, filters longer than the whole array, uneven boxes,
 * boxes thinner than the halo, slabs and 2-D/3-D process grids, contiguous
 * and pitched boxes, small arrays and larger ones (long interiors, the
 * strategies' tiles and bands, the 4-row direct kernel). Each rank computes the whole array in one process
 * (convolve_run with the strategy the distributed plan runs, and with "auto"
 * where `fast` cannot pick the FFT) and compares its box byte for byte; the
 * bytes around a pitched output box must stay poisoned. The `fft` strategy,
 * whose tiles start where each local array starts, is compared with a
 * tolerance instead. Then the error paths: ranks that disagree, boxes that
 * do not form a grid, a bad origin, a NULL pointer on one rank at execution.
 *
 * Usage: mpirun -n N test_mpi_exact [CASES]; CONVOLVE_TEST_SEED replays;
 * CONVOLVE_TEST_BACKEND=cuda runs the random cases on the ranks' GPUs
 * (strategies chosen by the GPU, compared with one process on the GPU with
 * the strategy the distributed plan reports for its box).
 * CONVOLVE_TEST_DEVICE=1 (builds with CUDA or its emulation) runs them on
 * the GPUs with the boxes in device memory as well (convolve_mpi_execute_device,
 * on the default stream and on a stream of the test's, its output poisoned),
 * the boundary mode cycling through all five, and checks the device path's
 * errors; it exits 77 (skipped) where no device is found. It counts the
 * device-resident calls whose halos went GPU to GPU (CUDA IPC) and, with
 * CONVOLVE_TEST_DEVICE_EXCHANGE=gpu (or =host), fails when on 2 or more
 * ranks none did (or any did).
 */
#include "convolve_mpi.h"
#include "harness.h"

#include <stdint.h>

#ifdef CONVOLVE_TEST_MPI_DEVICE
#include <cuda_runtime_api.h>
#endif

static int g_rank, g_size;
static convolve_backend g_backend = CONVOLVE_BACKEND_CPU; /* CONVOLVE_TEST_BACKEND=cuda: GPUs */
static int g_device;                        /* CONVOLVE_TEST_DEVICE=1: boxes in device memory too */
static int g_gpu_exchanges, g_device_calls; /* device-resident calls: halos GPU to GPU, all */

typedef struct {
    int ndim;
    size_t n[3];
    size_t channels;
    convolve_dtype tin, tout;
    size_t k[3];
    int separable;
    convolve_options opt;
    int grid[3];
    size_t cuts[3][65]; /* grid[a] + 1 boundaries (up to 64 ranks) */
    int pitched;
    const char *strategy; /* NULL: auto */
} tcase;

static void describe(const tcase *c, char *s, size_t cap)
{
    snprintf(s, cap,
             "%dD n=%zux%zux%zu ch=%zu %s->%s k=%zux%zux%zu%s %s %s cval=%g origin=%td,%td,%td "
             "grid=%dx%dx%d%s strategy=%s threads=%d",
             c->ndim, c->n[0], c->ndim > 1 ? c->n[1] : 1, c->ndim > 2 ? c->n[2] : 1, c->channels,
             convolve_dtype_name(c->tin), convolve_dtype_name(c->tout), c->k[0],
             c->ndim > 1 ? c->k[1] : 1, c->ndim > 2 ? c->k[2] : 1, c->separable ? " sep" : "",
             convolve_mode_name(c->opt.mode),
             c->opt.operation == CONVOLVE_OP_CONVOLVE ? "convolve" : "correlate", c->opt.cval,
             c->opt.origin[0], c->opt.origin[1], c->opt.origin[2], c->grid[0], c->grid[1],
             c->grid[2], c->pitched ? " pitched" : "", c->strategy ? c->strategy : "auto",
             c->opt.threads);
}

/* Random distinct cuts: parts pieces of [0, n), each at least 1 long. */
static void random_cuts(size_t n, int parts, size_t *cuts)
{
    cuts[0] = 0;
    cuts[parts] = n;
    for (;;) {
        for (int i = 1; i < parts; i++)
            cuts[i] = (size_t)h_randint(1, (long)n - 1);
        /* sort and require strictly increasing */
        for (int i = 1; i < parts; i++)
            for (int j = i + 1; j < parts; j++)
                if (cuts[j] < cuts[i]) {
                    size_t t = cuts[i];
                    cuts[i] = cuts[j];
                    cuts[j] = t;
                }
        int ok = 1;
        for (int i = 0; i < parts; i++)
            ok &= cuts[i + 1] > cuts[i];
        if (ok)
            return;
    }
}

/* A grid of g_size ranks over the case's axes (each axis at least as long as
 * its part count): slabs along axis 0, or a random factorisation. */
static void random_grid(tcase *c)
{
    for (int a = 0; a < 3; a++)
        c->grid[a] = 1;
    int rest = g_size;
    if (c->ndim == 1 || h_randint(0, 1)) {
        c->grid[0] = rest;
    } else {
        for (int a = 0; a < c->ndim - 1 && rest > 1; a++) {
            int f = 1;
            for (int d = rest; d >= 1; d--)
                if (rest % d == 0 && h_randint(0, 2) == 0) {
                    f = d;
                    break;
                }
            c->grid[a] = f;
            rest /= f;
        }
        c->grid[c->ndim - 1] *= rest;
    }
    for (int a = 0; a < c->ndim; a++) {
        if (c->n[a] < (size_t)c->grid[a])
            c->n[a] = (size_t)c->grid[a] + (size_t)h_randint(0, 3);
        random_cuts(c->n[a], c->grid[a], c->cuts[a]);
    }
}

static const char *k_mode_names[] = {"reflect", "constant", "nearest", "mirror", "wrap"};

static void random_case(tcase *c, int kind)
{
    memset(c, 0, sizeof *c);
    c->ndim = (int)h_randint(1, 3);
    for (int a = 0; a < 3; a++) {
        c->n[a] = 1;
        c->k[a] = 1;
    }
    const int large = kind == 3; /* interiors of many rows, tiles and bands; 4-row kernels */
    for (int a = 0; a < c->ndim; a++) {
        long top = c->ndim == 1   ? (large ? 5000 : 40)
                   : c->ndim == 2 ? (large ? 160 : 14)
                                  : (large ? 40 : 8);
        c->n[a] = (size_t)h_randint(large ? top / 4 : 1, top);
        c->k[a] = (size_t)h_randint(1, c->ndim == 3 ? (large ? 5 : 4) : large ? 11 : 6);
    }
    c->channels = (size_t)(h_randint(0, 3) == 0 ? h_randint(2, 3) : 1);
    c->tin = (convolve_dtype)h_randint(0, 3);
    c->tout = h_randint(0, 1) ? c->tin : (convolve_dtype)h_randint(0, 3);
    c->separable = c->ndim > 1 && h_randint(0, 2) == 0;
    convolve_options_init(&c->opt);
    c->opt.backend = g_backend;
    c->opt.threads = h_randint(0, 4) == 0 ? 2 : 1;
    convolve_mode_parse(k_mode_names[h_randint(0, 4)], &c->opt.mode);
    c->opt.cval = h_randint(0, 2) == 0 ? 0.0 : h_uniform(-3, 3);
    c->opt.operation = h_randint(0, 1) ? CONVOLVE_OP_CONVOLVE : CONVOLVE_OP_CORRELATE;
    random_grid(c);
    switch (kind) {
    case 1: /* a filter longer than the whole array along axis 0 */
        c->k[0] = 2 * c->n[0] + (size_t)h_randint(1, 6);
        break;
    case 2: /* boxes of one element along axis 0, thinner than the halo */
        for (int a = 0; a < 3; a++)
            c->grid[a] = 1;
        c->grid[0] = g_size;
        c->n[0] = (size_t)g_size;
        for (int i = 0; i <= g_size; i++)
            c->cuts[0][i] = (size_t)i;
        for (int a = 1; a < c->ndim; a++) {
            c->cuts[a][0] = 0;
            c->cuts[a][1] = c->n[a];
        }
        c->k[0] = (size_t)h_randint(3, 9);
        break;
    default: break;
    }
    for (int a = 0; a < c->ndim; a++) {
        long K = (long)c->k[a];
        c->opt.origin[a] = (ptrdiff_t)(h_randint(0, 2) == 0
                                           ? (h_randint(0, 1) ? -(K / 2) : (K - 1) / 2)
                                           : h_randint(-(K / 2), (K - 1) / 2));
    }
    c->pitched = h_randint(0, 4) == 0;
    long s = h_randint(0, 9);
    c->strategy = s == 0                   ? "direct"
                  : s == 1                 ? "reference"
                  : s == 2 && c->separable ? "separable"
                                           : NULL;
    if (g_backend != CONVOLVE_BACKEND_CPU)
        c->strategy = NULL; /* the GPU's own choice */
}

/* The box of rank r: its starts and extents. */
static void box_of(const tcase *c, int r, size_t *start, size_t *shape)
{
    int coord[3], rest = r;
    for (int a = 2; a >= 0; a--) {
        coord[a] = rest % c->grid[a];
        rest /= c->grid[a];
    }
    for (int a = 0; a < c->ndim; a++) {
        start[a] = c->cuts[a][coord[a]];
        shape[a] = c->cuts[a][coord[a] + 1] - start[a];
    }
}

static convolve_filter *make_filter(convolve_context *ctx, const tcase *c)
{
    convolve_filter *f = NULL;
    if (c->separable) {
        double *taps[3];
        for (int a = 0; a < c->ndim; a++) {
            taps[a] = malloc(c->k[a] * sizeof(double));
            h_fill(taps[a], c->k[a]);
        }
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, c->ndim, c->k,
                                                       (const double *const *)taps));
        for (int a = 0; a < c->ndim; a++)
            free(taps[a]);
    } else {
        size_t count = c->k[0] * c->k[1] * c->k[2];
        double *w = malloc(count * sizeof *w);
        h_fill(w, count);
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->k, w));
        free(w);
    }
    return f;
}

/* A layout for a box: contiguous, or pitched (padding after each row, and
 * after each plane). */
static void box_layout(convolve_layout *l, convolve_dtype t, int ndim, const size_t *shape,
                       size_t channels, int pitched)
{
    convolve_layout_init(l, t, ndim, shape, channels);
    if (!pitched)
        return;
    size_t es = convolve_dtype_size(t);
    ptrdiff_t s = (ptrdiff_t)(channels * es);
    for (int a = ndim - 1; a >= 0; a--) {
        l->strides[a] = s;
        s = s * (ptrdiff_t)shape[a] + (ptrdiff_t)(3 * es);
    }
}

/* Copies the box at start (shape) from the contiguous global array into a
 * buffer laid out as l. */
static void extract(const unsigned char *global, const size_t *n, const size_t *start,
                    const convolve_layout *l, unsigned char *dst)
{
    int nd = l->ndim;
    size_t es = convolve_dtype_size(l->dtype), ch = l->channels;
    size_t sh[3] = {1, 1, 1}, st[3] = {0, 0, 0}, gn[3] = {1, 1, 1};
    ptrdiff_t ls[3] = {0, 0, 0};
    for (int a = 0; a < nd; a++) {
        sh[3 - nd + a] = l->shape[a];
        st[3 - nd + a] = start[a];
        gn[3 - nd + a] = n[a];
        ls[3 - nd + a] = l->strides[a];
    }
    for (size_t i = 0; i < sh[0]; i++)
        for (size_t j = 0; j < sh[1]; j++)
            for (size_t k = 0; k < sh[2]; k++) {
                size_t g = (((st[0] + i) * gn[1] + st[1] + j) * gn[2] + st[2] + k) * ch;
                unsigned char *d = dst + (ptrdiff_t)i * ls[0] + (ptrdiff_t)j * ls[1] +
                                   (ptrdiff_t)k * ls[2];
                for (size_t c = 0; c < ch; c++)
                    memcpy(d + (ptrdiff_t)c * l->channel_stride, global + (g + c) * es, es);
            }
}

#ifdef CONVOLVE_TEST_MPI_DEVICE
#define CUDA_OK(call)                                                                      \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "rank %d: %s:%d: %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
                    cudaGetErrorString(e_));                                               \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                  \
        }                                                                                  \
    } while (0)

/* Runs the plan on copies of the boxes in device memory (the output poisoned
 * with 0xC3 as on the host), twice: on the default stream, then on a stream
 * of its own; copies the output box's bytes back to out. */
static void run_device(convolve_context *ctx, convolve_mpi_plan *plan, const char *what,
                       const unsigned char *in, size_t in_bytes, unsigned char *out,
                       size_t out_bytes)
{
    CUDA_OK(cudaSetDevice(convolve_mpi_plan_device(plan)));
    void *din, *dout;
    cudaStream_t stream;
    CUDA_OK(cudaMalloc(&din, in_bytes));
    CUDA_OK(cudaMalloc(&dout, out_bytes));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMemcpy(din, in, in_bytes, cudaMemcpyHostToDevice));
    unsigned char *first = malloc(out_bytes);
    for (int rep = 0; rep < 2; rep++) {
        CUDA_OK(cudaMemset(dout, 0xC3, out_bytes));
        CUDA_OK(cudaDeviceSynchronize());
        convolve_status st = convolve_mpi_execute_device(plan, din, dout, rep ? stream : NULL);
        CHECK(st == CONVOLVE_OK, "%s: execute on the device: %s: %s", what,
              convolve_status_name(st), convolve_mpi_last_error(ctx));
        convolve_mpi_stats stats;
        if (st == CONVOLVE_OK && convolve_mpi_plan_stats(plan, &stats) == CONVOLVE_OK) {
            g_device_calls++;
            g_gpu_exchanges += stats.device_exchange;
        }
        CUDA_OK(cudaStreamSynchronize(rep ? stream : NULL));
        CUDA_OK(cudaMemcpy(rep ? out : first, dout, out_bytes, cudaMemcpyDeviceToHost));
    }
    CHECK(memcmp(first, out, out_bytes) == 0,
          "%s: the default stream's run differs from the "
          "stream's",
          what);
    free(first);
    CUDA_OK(cudaStreamDestroy(stream));
    CUDA_OK(cudaFree(din));
    CUDA_OK(cudaFree(dout));
}
#endif

/* Runs one case; returns 1 if this rank's box matched. */
static int run_case(convolve_context *ctx, const tcase *c)
{
    char what[512];
    describe(c, what, sizeof what);
    convolve_filter *f = make_filter(ctx, c);
    convolve_layout gin, gout;
    convolve_layout_init(&gin, c->tin, c->ndim, c->n, c->channels);
    convolve_layout_init(&gout, c->tout, c->ndim, c->n, c->channels);
    size_t count = convolve_layout_count(&gin);
    size_t esi = convolve_dtype_size(c->tin), eso = convolve_dtype_size(c->tout);
    unsigned char *gi = malloc(count * esi), *go = malloc(count * eso), *ga = malloc(count * eso);
    h_fill_typed(c->tin, gi, count, 10.0); /* same draws on every rank */

    size_t start[3], shape[3];
    box_of(c, g_rank, start, shape);
    convolve_layout lin, lout;
    box_layout(&lin, c->tin, c->ndim, shape, c->channels, c->pitched);
    box_layout(&lout, c->tout, c->ndim, shape, c->channels, c->pitched);
    size_t bin, bout, oin, oout;
    h_layout_extent(&lin, &bin, &oin);
    h_layout_extent(&lout, &bout, &oout);
    unsigned char *bi = malloc(bin), *bo = malloc(bout), *want = malloc(bout);
    memset(bi, 0x5A, bin);
    extract(gi, c->n, start, &lin, bi);

    convolve_options opt = c->opt;
    opt.strategy = c->strategy;
    convolve_mpi_plan *plan = NULL;
    convolve_status st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, c->n, start, &lin,
                                                  &lout, f, &opt);
    int ok = 1;
    CHECK(st == CONVOLVE_OK, "%s: plan: %s: %s", what, convolve_status_name(st),
          convolve_mpi_last_error(ctx));
    if (st == CONVOLVE_OK) {
        for (int rep = 0; rep < 2; rep++) { /* a plan runs again alike */
            memset(bo, 0xC3, bout);
            st = convolve_mpi_execute(plan, bi, bo);
            CHECK(st == CONVOLVE_OK, "%s: execute: %s: %s", what, convolve_status_name(st),
                  convolve_mpi_last_error(ctx));
        }
#ifdef CONVOLVE_TEST_MPI_DEVICE
        unsigned char *dev_out = g_device ? malloc(bout) : NULL;
        if (g_device)
            run_device(ctx, plan, what, bi, bin, dev_out, bout);
#endif
        /* one process, the strategy the distributed plan ran */
        convolve_options one = c->opt;
        one.strategy = convolve_mpi_plan_strategy(plan);
        CHECK_OK(ctx, convolve_run(ctx, &gin, gi, &gout, go, f, &one));
        memset(want, 0xC3, bout);
        extract(go, c->n, start, &lout, want);
        size_t diff = 0;
        for (size_t i = 0; i < bout; i++)
            diff += bo[i] != want[i];
        if (diff) {
            ok = 0;
            CHECK(0, "rank %d: %s: %zu of %zu bytes differ from one process's (%s)", g_rank, what,
                  diff, bout, one.strategy);
        }
#ifdef CONVOLVE_TEST_MPI_DEVICE
        if (dev_out) {
            diff = 0;
            for (size_t i = 0; i < bout; i++)
                diff += dev_out[i] != want[i];
            if (diff) {
                ok = 0;
                CHECK(0,
                      "rank %d: %s: boxes on the device: %zu of %zu bytes differ from one "
                      "process's (%s)",
                      g_rank, what, diff, bout, one.strategy);
            }
            free(dev_out);
        }
#endif
        /* "auto" in one process is `fast`, which picks the FFT only from 64 taps */
        if (!c->strategy && c->k[0] * c->k[1] * c->k[2] < 64 && g_backend == CONVOLVE_BACKEND_CPU) {
            one.strategy = NULL;
            CHECK_OK(ctx, convolve_run(ctx, &gin, gi, &gout, ga, f, &one));
            CHECK(memcmp(ga, go, count * eso) == 0, "%s: auto differs from %s in one process", what,
                  convolve_mpi_plan_strategy(plan));
        }
    }
    convolve_mpi_plan_free(plan);
    convolve_filter_free(f);
    free(gi);
    free(go);
    free(ga);
    free(bi);
    free(bo);
    free(want);
    return ok;
}

/* The FFT, named: its tiles start with each local array, so only close. */
static void fft_case(convolve_context *ctx, int ndim)
{
    size_t n[3] = {(size_t)(8 * g_size + 5), 37, 9}, k[3] = {9, 9, 5};
    convolve_filter *f;
    size_t count = 1, kc = 1;
    for (int a = 0; a < ndim; a++) {
        count *= n[a];
        kc *= k[a];
    }
    double *w = malloc(kc * sizeof *w);
    h_fill(w, kc);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, ndim, k, w));
    convolve_layout g;
    convolve_layout_init(&g, CONVOLVE_FLOAT32, ndim, n, 1);
    float *gi = malloc(count * sizeof *gi), *go = malloc(count * sizeof *go);
    h_fill_typed(CONVOLVE_FLOAT32, gi, count, 1.0);
    size_t start[3], shape[3];
    CHECK_OK(ctx, convolve_mpi_decompose(ctx, MPI_COMM_WORLD, ndim, n, NULL, start, shape));
    convolve_layout b;
    convolve_layout_init(&b, CONVOLVE_FLOAT32, ndim, shape, 1);
    size_t plane = count / n[0];
    float *bo = malloc(shape[0] * plane * sizeof *bo);
    convolve_options opt;
    convolve_options_init(&opt);
    opt.backend = CONVOLVE_BACKEND_CPU;
    opt.strategy = "fft";
    opt.mode = CONVOLVE_MODE_WRAP;
    opt.threads = 1;
    convolve_mpi_plan *plan = NULL;
    CHECK_OK(ctx, convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &b, &b, f, &opt));
    if (plan) {
        CHECK_OK(ctx, convolve_mpi_execute(plan, gi + start[0] * plane, bo));
        CHECK_OK(ctx, convolve_run(ctx, &g, gi, &g, go, f, &opt));
        h_diff d = h_compare(CONVOLVE_FLOAT32, bo, CONVOLVE_FLOAT32, go + start[0] * plane,
                             shape[0] * plane, 1e-5, 1e-5);
        CHECK(d.bad == 0, "fft %dD: %zu elements off, relative L2 %.3g", ndim, d.bad, d.rel_l2);
    }
    convolve_mpi_plan_free(plan);
    convolve_filter_free(f);
    free(w);
    free(gi);
    free(go);
    free(bo);
}

/* convolve_mpi_decompose's balanced grid (all axes free, or slabs of wide
 * planes whose halos and edges are copied by 2 threads) on a 3-D volume,
 * mirror mode, a dense 5x3x4 filter: the boxes it gives serve a plan whose
 * result is one process's. */
static void decompose_case(convolve_context *ctx, int wide)
{
    size_t n[3] = {21, 18, 16}, k[3] = {5, 3, 4}, start[3], shape[3];
    int grid[3] = {0, 0, 0}, slabs[3] = {g_size, 1, 1};
    if (wide) {
        n[0] = (size_t)(2 * g_size + 3);
        n[1] = 440;
        n[2] = 430;
    }
    CHECK_OK(ctx,
             convolve_mpi_decompose(ctx, MPI_COMM_WORLD, 3, n, wide ? slabs : grid, start, shape));
    double w[60];
    h_fill(w, 60);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 3, k, w));
    convolve_layout g, b;
    convolve_layout_init(&g, CONVOLVE_FLOAT32, 3, n, 1);
    convolve_layout_init(&b, CONVOLVE_FLOAT32, 3, shape, 1);
    size_t count = n[0] * n[1] * n[2], bc = shape[0] * shape[1] * shape[2];
    float *gi = malloc(count * 4), *go = malloc(count * 4), *bi = malloc(bc * 4),
          *bo = malloc(bc * 4), *want = malloc(bc * 4);
    h_fill_typed(CONVOLVE_FLOAT32, gi, count, 5.0);
    extract((unsigned char *)gi, n, start, &b, (unsigned char *)bi);
    convolve_options opt;
    convolve_options_init(&opt);
    opt.backend = CONVOLVE_BACKEND_CPU;
    opt.mode = CONVOLVE_MODE_MIRROR;
    opt.threads = wide ? 2 : 1;
    convolve_mpi_plan *plan = NULL;
    CHECK_OK(ctx, convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &b, &b, f, &opt));
    if (plan) {
        CHECK_OK(ctx, convolve_mpi_execute(plan, bi, bo));
        CHECK_OK(ctx, convolve_run(ctx, &g, gi, &g, go, f, &opt));
        extract((unsigned char *)go, n, start, &b, (unsigned char *)want);
        CHECK(memcmp(bo, want, bc * 4) == 0, "%s: box at %zu,%zu,%zu differs",
              wide ? "wide slabs" : "balanced grid", start[0], start[1], start[2]);
    }
    convolve_mpi_plan_free(plan);
    convolve_filter_free(f);
    free(gi);
    free(go);
    free(bi);
    free(bo);
    free(want);
}

/* Every rank must fail alike, with a message. */
static void check_all_fail(convolve_context *ctx, convolve_status st, convolve_status want,
                           const char *what)
{
    CHECK(st == want, "%s: got %s, want %s (%s)", what, convolve_status_name(st),
          convolve_status_name(want), convolve_mpi_last_error(ctx));
    CHECK(st == CONVOLVE_OK || convolve_mpi_last_error(ctx)[0], "%s: no message", what);
}

static void error_paths(convolve_context *ctx)
{
    size_t n[2] = {(size_t)(4 * g_size), 6}, start[2], shape[2];
    double w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    size_t k[2] = {3, 3};
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    CHECK_OK(ctx, convolve_mpi_decompose(ctx, MPI_COMM_WORLD, 2, n, NULL, start, shape));
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_options opt;
    convolve_options_init(&opt);
    opt.backend = CONVOLVE_BACKEND_CPU;
    convolve_mpi_plan *plan = (convolve_mpi_plan *)&plan; /* must be reset to NULL */

    /* a rank whose global shape differs */
    size_t other[2] = {n[0], n[1] + (g_rank == g_size - 1 && g_size > 1)};
    convolve_status st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, other, start, &l, &l,
                                                  f, &opt);
    check_all_fail(ctx, st, g_size > 1 ? CONVOLVE_ERROR_INVALID_ARGUMENT : CONVOLVE_OK,
                   "differing global shape");
    CHECK((st == CONVOLVE_OK) == (plan != NULL), "plan not NULL after a failure");
    convolve_mpi_plan_free(plan);

    /* boxes that overlap (the last rank's box starts one row early) */
    size_t early[2] = {start[0] - (g_rank == g_size - 1 && g_size > 1), start[1]};
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, early, &l, &l, f, &opt);
    check_all_fail(ctx, st, g_size > 1 ? CONVOLVE_ERROR_BAD_LAYOUT : CONVOLVE_OK,
                   "overlapping boxes");
    convolve_mpi_plan_free(plan);

    /* a box outside the array */
    size_t outside[2] = {start[0] + n[0], start[1]};
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, outside, &l, &l, f, &opt);
    check_all_fail(ctx, st, CONVOLVE_ERROR_BAD_LAYOUT, "box outside");
    convolve_mpi_plan_free(plan);

    /* a bad origin: the core's BAD_ORIGIN on every rank */
    convolve_options bad = opt;
    bad.origin[0] = 2;
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &l, &l, f, &bad);
    check_all_fail(ctx, st, CONVOLVE_ERROR_BAD_ORIGIN, "bad origin");
    convolve_mpi_plan_free(plan);

    /* NULL arguments on one rank */
    st = convolve_mpi_plan_create(ctx, g_rank == 0 ? NULL : &plan, MPI_COMM_WORLD, n, start, &l, &l,
                                  f, &opt);
    check_all_fail(ctx, st, CONVOLVE_ERROR_INVALID_ARGUMENT, "NULL plan on rank 0");
    if (g_rank != 0)
        CHECK(plan == NULL, "plan made although rank 0 failed");
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_NULL, n, start, &l, &l, f, &opt);
    CHECK(st == CONVOLVE_ERROR_INVALID_ARGUMENT, "MPI_COMM_NULL: %s", convolve_status_name(st));

    /* a NULL pointer on the last rank at execution: every rank fails, none hangs */
    CHECK_OK(ctx, convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &l, &l, f, &opt));
    size_t cnt = shape[0] * shape[1];
    float *in = malloc(cnt * sizeof *in), *out = malloc(cnt * sizeof *out);
    h_fill_typed(CONVOLVE_FLOAT32, in, cnt, 1.0);
    st = convolve_mpi_execute(plan, in, g_rank == g_size - 1 ? NULL : out);
    check_all_fail(ctx, st, CONVOLVE_ERROR_INVALID_ARGUMENT, "NULL output on the last rank");
    st = convolve_mpi_execute(plan, in, in);
    check_all_fail(ctx, st, CONVOLVE_ERROR_INVALID_ARGUMENT, "output overlapping the input");
    CHECK_OK(ctx, convolve_mpi_execute(plan, in, out)); /* the plan still works */
    convolve_mpi_stats s;
    CHECK_OK(ctx, convolve_mpi_plan_stats(plan, &s));
    CHECK(g_size == 1 || s.bytes_received > 0, "no halo received on %d ranks", g_size);
    CHECK(convolve_mpi_plan_backend(plan) == CONVOLVE_BACKEND_CPU, "backend");
    CHECK(convolve_mpi_plan_device(plan) == -1, "device on the CPU");
    CHECK(strcmp(convolve_mpi_plan_strategy(plan), "direct") == 0, "dense 3x3: %s",
          convolve_mpi_plan_strategy(plan));
    convolve_mpi_plan_free(plan);
    convolve_mpi_plan_free(NULL);
    CHECK(convolve_mpi_plan_strategy(NULL) == NULL, "strategy of NULL");
    CHECK(convolve_mpi_plan_stats(NULL, &s) == CONVOLVE_ERROR_INVALID_ARGUMENT, "stats of NULL");

    /* decompose's own errors */
    int grid[2] = {g_size + 1, 1};
    CHECK(convolve_mpi_decompose(ctx, MPI_COMM_WORLD, 2, n, grid, start, shape) ==
              CONVOLVE_ERROR_INVALID_ARGUMENT,
          "a grid of size+1 ranks");
    size_t tiny[2] = {(size_t)g_size - 1, 5};
    if (g_size > 1)
        CHECK(convolve_mpi_decompose(ctx, MPI_COMM_WORLD, 2, tiny, NULL, start, shape) ==
                  CONVOLVE_ERROR_BAD_LAYOUT,
              "more ranks than rows");
    free(in);
    free(out);
    convolve_filter_free(f);
}

#ifdef CONVOLVE_TEST_MPI_DEVICE
/* The device path's errors, alike on every rank, and a plan that still works. */
static void device_errors(convolve_context *ctx)
{
    size_t n[2] = {(size_t)(4 * g_size + 1), 7}, start[2], shape[2], k[2] = {3, 3};
    double w[9];
    h_fill(w, 9);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k, w));
    CHECK_OK(ctx, convolve_mpi_decompose(ctx, MPI_COMM_WORLD, 2, n, NULL, start, shape));
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    const size_t cnt = shape[0] * shape[1], bytes = cnt * sizeof(float);
    float *hin = malloc(bytes), *hout = malloc(bytes), *want = malloc(bytes);
    h_fill_typed(CONVOLVE_FLOAT32, hin, cnt, 1.0);
    convolve_options opt;
    convolve_options_init(&opt);
    opt.mode = CONVOLVE_MODE_WRAP;

    /* a plan on the CPU */
    opt.backend = CONVOLVE_BACKEND_CPU;
    convolve_mpi_plan *plan = NULL;
    CHECK_OK(ctx, convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &l, &l, f, &opt));
    check_all_fail(ctx, convolve_mpi_execute_device(plan, hin, hout, NULL),
                   CONVOLVE_ERROR_UNSUPPORTED, "a CPU plan on the device path");
    CHECK_OK(ctx, convolve_mpi_execute(plan, hin, want));
    convolve_mpi_plan_free(plan);

    opt.backend = CONVOLVE_BACKEND_CUDA;
    CHECK_OK(ctx, convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, n, start, &l, &l, f, &opt));
    if (!plan)
        return;
    CUDA_OK(cudaSetDevice(convolve_mpi_plan_device(plan)));
    void *din, *dout, *pinned;
    CUDA_OK(cudaMalloc(&din, bytes));
    CUDA_OK(cudaMalloc(&dout, bytes));
    CUDA_OK(cudaMallocHost(&pinned, bytes));
    CUDA_OK(cudaMemcpy(din, hin, bytes, cudaMemcpyHostToDevice));
    const int last = g_rank == g_size - 1;
    check_all_fail(ctx, convolve_mpi_execute_device(plan, last ? pinned : din, dout, NULL),
                   CONVOLVE_ERROR_INVALID_ARGUMENT, "pinned host memory on the last rank");
    check_all_fail(ctx, convolve_mpi_execute_device(plan, din, last ? NULL : dout, NULL),
                   CONVOLVE_ERROR_INVALID_ARGUMENT, "NULL output on the last rank");
    check_all_fail(ctx, convolve_mpi_execute_device(plan, din, din, NULL),
                   CONVOLVE_ERROR_INVALID_ARGUMENT, "output overlapping the input");
#ifndef CONVOLVE_TEST_MPI_EMULATED /* the emulation's device memory is host memory */
    check_all_fail(ctx, convolve_mpi_execute_device(plan, last ? (void *)hin : din, dout, NULL),
                   CONVOLVE_ERROR_INVALID_ARGUMENT, "host memory on the device path");
    check_all_fail(ctx, convolve_mpi_execute(plan, last ? din : (void *)hin, hout),
                   CONVOLVE_ERROR_INVALID_ARGUMENT, "device memory on the host path");
#endif
    /* the plan still works, and matches the CPU's (a 3x3 float32 direct sum
     * in the same order on both backends is not promised: close) */
    CUDA_OK(cudaMemset(dout, 0xC3, bytes));
    CHECK_OK(ctx, convolve_mpi_execute_device(plan, din, dout, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(hout, dout, bytes, cudaMemcpyDeviceToHost));
    h_diff d = h_compare(CONVOLVE_FLOAT32, hout, CONVOLVE_FLOAT32, want, cnt, 1e-5, 1e-5);
    CHECK(d.bad == 0, "device path after errors: %zu elements off", d.bad);
    convolve_mpi_stats s;
    CHECK_OK(ctx, convolve_mpi_plan_stats(plan, &s));
    CHECK(g_size == 1 || (s.bytes_received > 0 && s.pieces > 0), "no halo on %d ranks", g_size);
    convolve_mpi_plan_free(plan);
    CUDA_OK(cudaFree(din));
    CUDA_OK(cudaFree(dout));
    CUDA_OK(cudaFreeHost(pinned));
    free(hin);
    free(hout);
    free(want);
    convolve_filter_free(f);
}
#endif

/* 1 if `have` holds on every rank. */
static int on_every_rank(int have)
{
    int all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Ends the test as skipped (77), rank 0 saying why. */
static int skipped(convolve_context *ctx, const char *why)
{
    if (g_rank == 0)
        printf("test_mpi_exact: %s: skipped\n", why);
    convolve_context_free(ctx);
    MPI_Finalize();
    return 77;
}

int main(int argc, char **argv)
{
    int level; /* SERIALIZED: the plans' progress thread runs (CONVOLVE_MPI_PROGRESS=0: not) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    const char *backend = getenv("CONVOLVE_TEST_BACKEND");
    if (backend && convolve_backend_parse(backend, &g_backend) != CONVOLVE_OK)
        g_backend = CONVOLVE_BACKEND_CPU;
    unsigned long long seed = 0;
    if (g_rank == 0) {
        const char *env = getenv("CONVOLVE_TEST_SEED");
        seed = env ? strtoull(env, NULL, 0) : (unsigned long long)time(NULL) ^ (uint64_t)clock();
        if (!seed)
            seed = 1;
        printf("test_mpi_exact: %d ranks, seed %llu (replay with CONVOLVE_TEST_SEED=%llu)\n",
               g_size, seed, seed);
        fflush(stdout);
    }
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    h_rng_state = seed * 0x9E3779B97F4A7C15ull | 1;

    convolve_context *ctx;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        MPI_Abort(MPI_COMM_WORLD, 2);
    const char *device = getenv("CONVOLVE_TEST_DEVICE");
    if (device && *device == '1') {
        int count = 0;
#ifdef CONVOLVE_TEST_MPI_DEVICE
        convolve_device_count(ctx, &count);
#endif
        if (!on_every_rank(count > 0))
            return skipped(ctx, "no CUDA device (or no CUDA)");
        g_device = 1;
        g_backend = CONVOLVE_BACKEND_CUDA;
    }
    if (g_backend == CONVOLVE_BACKEND_CUDA && !g_device) { /* host boxes on the GPUs */
        convolve_device_info info;
        if (!on_every_rank(convolve_device_query(ctx, &info) == CONVOLVE_OK && info.available))
            return skipped(ctx, "CONVOLVE_TEST_BACKEND=cuda and no usable GPU");
    }
    int matched = 0;
    for (int i = 0; i < cases; i++) {
        tcase c;
        random_case(&c, i % 8 < 4 ? i % 8 : 0);
        if (g_device) /* every mode in turn */
            convolve_mode_parse(k_mode_names[i % 5], &c.opt.mode);
        matched += run_case(ctx, &c);
    }
    fft_case(ctx, 1);
    fft_case(ctx, 2);
    fft_case(ctx, 3);
    decompose_case(ctx, 0);
    decompose_case(ctx, 1);
    error_paths(ctx);
#ifdef CONVOLVE_TEST_MPI_DEVICE
    if (g_device)
        device_errors(ctx); /* last: its draws differ by rank */
#endif
    convolve_context_free(ctx);

    if (g_device) { /* which way the halos went */
        int calls = 0, gpu = 0;
        MPI_Allreduce(&g_device_calls, &calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&g_gpu_exchanges, &gpu, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (g_rank == 0)
            printf("test_mpi_exact: %d of %d device-resident calls (all ranks) had their halos "
                   "GPU to GPU\n",
                   gpu, calls);
        const char *want = getenv("CONVOLVE_TEST_DEVICE_EXCHANGE");
        if (want && g_size > 1 && g_rank == 0) {
            CHECK(strcmp(want, "gpu") != 0 || gpu > 0, "no call had its halos GPU to GPU");
            CHECK(strcmp(want, "host") != 0 || gpu == 0, "%d calls had their halos GPU to GPU",
                  gpu);
        }
    }
    int fails = h_failures, all = 0, all_matched = 0;
    MPI_Reduce(&fails, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&matched, &all_matched, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("test_mpi_exact: %d ranks: %d cases x %d ranks, %d boxes identical bit for bit; "
               "%d failures\n",
               g_size, cases, g_size, all_matched, all);
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}

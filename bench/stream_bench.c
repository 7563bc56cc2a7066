/*
 * stream_bench.c - host-memory CUDA plans beyond one shot (issue 12), in one
 * run: pinned host<->device bandwidth (copy in alone, copy out alone, both at
 * once; with several devices, what the host moves with all of them copying
 * both ways at once), then for a memory-bound case (2-D float32 N x N, 3x3) and a
 * compute-heavy one (3-D float32 M^3, 7x7x7) the end-to-end time of
 * convolve_execute on pageable host arrays: one shot, streamed on one
 * device (a budget that forces slabs), the same with the arrays pinned
 * (convolve_host_register), and streamed over 1..all devices;
 * each with GB/s (input plus output bytes per second) and the ratio of its
 * time to the time the same bytes take at the measured pinned bandwidth
 * with both directions at once (per device). The streamed outputs are
 * compared with the one-shot output (memcmp). With --timeline FILE, one
 * more run of each streamed configuration, after the timed ones, appends
 * its per-slab timeline to FILE (CONVOLVE_STREAM_TIMELINE; docs/scale.md),
 * after a "# case, configuration" line.
 *
 *   stream_bench [--size N] [--size3 M] [--budget BYTES] [--runs R]
 *                [--timeline FILE] [--bw-bytes BYTES] [--skip-3d] [--skip-2d]
 *                [--k3 K]
 *   stream_bench --huge BYTES|auto [--in-place]   only an array larger
 *                than the device: uint8, BYTES in and BYTES out (auto: 1.5x
 *                the device's memory; the host needs room for both, or, in
 *                place, for one), streamed with the automatic budget,
 *                sampled rows checked against the CPU
 *   Defaults: N 32768 (8 GiB in and out), M 640, budget 4G, runs 3
 *   (the median is reported), bw-bytes 1G, K 7 (the 3-D case's box
 *   filter is K x K x K, K odd). STREAM_BENCH_SIZE and
 *   STREAM_BENCH_SIZE3 in the environment set N and M too.
 * Exit 77 without a usable GPU.
 */
#include "bench_util.h"
#include "convolve.h"

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K': v *= 1024.0; break;
    case 'm':
    case 'M': v *= 1048576.0; break;
    case 'g':
    case 'G': v *= 1073741824.0; break;
    default: break;
    }
    return (size_t)v;
}

/* Pinned bandwidth of device dev, GB/s: h2d alone, d2h alone, and each
 * while the other runs (both at once). 0s when CUDA is not linked. */
typedef struct {
    double h2d, d2h, both_h2d, both_d2h;
} bandwidth;

#ifdef CONVOLVE_WITH_CUDA
#define CK(x)                                                                      \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "stream_bench: %s: %s\n", #x, cudaGetErrorString(e_)); \
            exit(2);                                                               \
        }                                                                          \
    } while (0)

static bandwidth measure_bandwidth(int dev, size_t bytes, int runs)
{
    bandwidth bw = {0, 0, 0, 0};
    int prev;
    CK(cudaGetDevice(&prev));
    CK(cudaSetDevice(dev));
    void *h_a, *h_b, *d_a, *d_b;
    CK(cudaMallocHost(&h_a, bytes));
    CK(cudaMallocHost(&h_b, bytes));
    CK(cudaMalloc(&d_a, bytes));
    CK(cudaMalloc(&d_b, bytes));
    memset(h_a, 1, bytes);
    memset(h_b, 2, bytes);
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t e0, e1, f0, f1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&f0));
    CK(cudaEventCreate(&f1));
    double t[2][16];
    runs = runs > 16 ? 16 : runs;
    for (int r = 0; r < runs + 1; r++) {
        float ms;
        CK(cudaEventRecord(e0, s1));
        CK(cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, s1));
        CK(cudaEventRecord(e1, s1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r)
            t[0][r - 1] = ms;
        CK(cudaEventRecord(e0, s1));
        CK(cudaMemcpyAsync(h_b, d_b, bytes, cudaMemcpyDeviceToHost, s1));
        CK(cudaEventRecord(e1, s1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r)
            t[1][r - 1] = ms;
        /* both at once: each direction timed on its own stream */
        CK(cudaDeviceSynchronize());
        CK(cudaEventRecord(e0, s1));
        CK(cudaEventRecord(f0, s2));
        CK(cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, s1));
        CK(cudaMemcpyAsync(h_b, d_b, bytes, cudaMemcpyDeviceToHost, s2));
        CK(cudaEventRecord(e1, s1));
        CK(cudaEventRecord(f1, s2));
        CK(cudaDeviceSynchronize());
        float a, b;
        CK(cudaEventElapsedTime(&a, e0, e1));
        CK(cudaEventElapsedTime(&b, f0, f1));
        if (r) { /* the mean of the runs */
            bw.both_h2d += (double)bytes / (a * 1e6) / runs;
            bw.both_d2h += (double)bytes / (b * 1e6) / runs;
        }
    }
    bw.h2d = (double)bytes / (bench_median(t[0], runs) * 1e6);
    bw.d2h = (double)bytes / (bench_median(t[1], runs) * 1e6);
    CK(cudaFreeHost(h_a));
    CK(cudaFreeHost(h_b));
    CK(cudaFree(d_a));
    CK(cudaFree(d_b));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaEventDestroy(f0));
    CK(cudaEventDestroy(f1));
    CK(cudaSetDevice(prev));
    return bw;
}

/* What the host moves with devices 0..n-1 all copying at once, each in both
 * directions (bytes each way per device): in + out GB/s in all, the median
 * of runs by the wall clock. The ceiling of streaming over n devices. */
static double measure_aggregate(int n, size_t bytes, int runs)
{
    enum { MAXD = 16 };
    n = n > MAXD ? MAXD : n;
    int prev;
    CK(cudaGetDevice(&prev));
    void *h_a[MAXD], *h_b[MAXD], *d_a[MAXD], *d_b[MAXD];
    cudaStream_t s1[MAXD], s2[MAXD];
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaMallocHost(&h_a[d], bytes));
        CK(cudaMallocHost(&h_b[d], bytes));
        CK(cudaMalloc(&d_a[d], bytes));
        CK(cudaMalloc(&d_b[d], bytes));
        memset(h_a[d], 1, bytes);
        memset(h_b[d], 2, bytes);
        CK(cudaStreamCreateWithFlags(&s1[d], cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&s2[d], cudaStreamNonBlocking));
    }
    double t[16];
    runs = runs > 16 ? 16 : runs;
    for (int r = 0; r < runs + 1; r++) {
        double t0 = bench_now_s();
        for (int d = 0; d < n; d++) {
            CK(cudaSetDevice(d));
            CK(cudaMemcpyAsync(d_a[d], h_a[d], bytes, cudaMemcpyHostToDevice, s1[d]));
            CK(cudaMemcpyAsync(h_b[d], d_b[d], bytes, cudaMemcpyDeviceToHost, s2[d]));
        }
        for (int d = 0; d < n; d++) {
            CK(cudaSetDevice(d));
            CK(cudaDeviceSynchronize());
        }
        if (r)
            t[r - 1] = bench_now_s() - t0;
    }
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFreeHost(h_a[d]));
        CK(cudaFreeHost(h_b[d]));
        CK(cudaFree(d_a[d]));
        CK(cudaFree(d_b[d]));
        CK(cudaStreamDestroy(s1[d]));
        CK(cudaStreamDestroy(s2[d]));
    }
    CK(cudaSetDevice(prev));
    return 2.0 * (double)n * (double)bytes / (bench_median(t, runs) * 1e9);
}
#else
static bandwidth measure_bandwidth(int dev, size_t bytes, int runs)
{
    (void)dev, (void)bytes, (void)runs;
    bandwidth bw = {0, 0, 0, 0};
    return bw;
}

static double measure_aggregate(int n, size_t bytes, int runs)
{
    (void)n, (void)bytes, (void)runs;
    return 0;
}
#endif

typedef struct {
    const char *name;
    int ndim;
    size_t shape[3];
    size_t k;
} bench_case;

static convolve_context *ctx;

static void fail(const char *what, convolve_status st)
{
    fprintf(stderr, "stream_bench: %s: %s: %s\n", what, convolve_status_name(st),
            convolve_last_error(ctx));
    exit(2);
}

typedef struct {
    size_t slabs;
} slab_count;

static int count_slabs(void *user, const convolve_progress *p)
{
    ((slab_count *)user)->slabs = p->slabs_total;
    return 0;
}

/* Times convolve_execute (median of runs, after one warm-up run) of a plan
 * made with the given budget and devices; returns ms and the slab count.
 * With a timeline file, a run after the timed ones appends its slabs there
 * after a line "# <case>, <label>". */
static double time_plan(const bench_case *c, const convolve_layout *l, const float *in, float *out,
                        size_t budget, const int *devices, int device_count, int runs,
                        size_t *slabs, const char *timeline, const char *label)
{
    convolve_filter *f;
    char spec[32];
    snprintf(spec, sizeof spec, "box:%zu", c->k / 2);
    convolve_status st = convolve_filter_create_named(ctx, &f, spec, c->ndim);
    if (st != CONVOLVE_OK)
        fail("filter", st);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = "direct";
    o.mode = CONVOLVE_MODE_REFLECT;
    o.device_memory_budget = budget;
    o.devices = devices;
    o.device_count = device_count;
    slab_count sc = {1};
    o.progress = count_slabs;
    o.progress_user = &sc;
    convolve_plan *p;
    if ((st = convolve_plan_create(ctx, &p, l, l, f, &o)) != CONVOLVE_OK)
        fail("plan", st);
    double t[32];
    runs = runs > 32 ? 32 : runs;
    if ((st = convolve_execute(p, in, out)) != CONVOLVE_OK) /* warm-up: buffers, sub-plans */
        fail("execute", st);
    /* with a timeline, one more run after the timed ones records it (it
     * makes its workers anew: not a run to time) */
    for (int r = 0; r < runs + (timeline ? 1 : 0); r++) {
        if (timeline && r == runs) {
            FILE *tf = fopen(timeline, "a");
            if (tf) {
                fprintf(tf, "# %s, %s\n", c->name, label);
                fclose(tf);
            }
            setenv("CONVOLVE_STREAM_TIMELINE", timeline, 1);
        }
        double t0 = bench_now_s();
        if ((st = convolve_execute(p, in, out)) != CONVOLVE_OK)
            fail("execute", st);
        if (r < runs)
            t[r] = (bench_now_s() - t0) * 1e3;
        unsetenv("CONVOLVE_STREAM_TIMELINE");
    }
    *slabs = sc.slabs;
    convolve_plan_free(p);
    convolve_filter_free(f);
    return bench_median(t, runs);
}

static void fill(float *v, size_t n)
{
    uint32_t s = 0x9E3779B9u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        v[i] = (float)(s >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
}

static void run_case(const bench_case *c, size_t budget, int devices, const bandwidth *bw, int runs,
                     const char *timeline)
{
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, c->ndim, c->shape, 1);
    const size_t n = convolve_layout_count(&l), bytes = n * sizeof(float);
    float *in = malloc(bytes), *one = malloc(bytes), *two = malloc(bytes);
    if (!in || !one || !two) {
        fprintf(stderr, "stream_bench: out of host memory for %s (%zu MiB x 3)\n", c->name,
                bytes >> 20);
        free(in), free(one), free(two);
        return;
    }
    fill(in, n);
    memset(one, 0, bytes);
    memset(two, 0xFF, bytes);
    /* the ideal: input and output bytes at the pinned bandwidth, both
     * directions at once, on `d` devices */
    printf(
        "\n## %s: %.2f GiB in + %.2f GiB out, filter %zu^%d, float32, reflect, strategy direct\n",
        c->name, bytes / 1073741824.0, bytes / 1073741824.0, c->k, c->ndim);
    printf("| run | devices | slabs | ms | GB/s (in+out) | ideal ms | ratio | identical |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    size_t slabs;
    double ideal1 = 0;
    if (bw->both_h2d > 0) {
        double a = (double)bytes / (bw->both_h2d * 1e6), b = (double)bytes / (bw->both_d2h * 1e6);
        ideal1 = a > b ? a : b;
    }
    double ms = time_plan(c, &l, in, one, 0, NULL, 0, runs, &slabs, NULL, NULL);
    printf("| one shot (automatic budget) | 1 | %zu | %.1f | %.2f | %.1f | %.2f | - |\n", slabs, ms,
           2.0 * (double)bytes / (ms * 1e6), ideal1, ideal1 > 0 ? ms / ideal1 : 0);
    fflush(stdout);
    int dev0[1] = {0};
    ms = time_plan(c, &l, in, two, budget, dev0, 1, runs, &slabs, timeline, "streamed, 1 device");
    printf("| streamed (budget %zu MiB) | 1 | %zu | %.1f | %.2f | %.1f | %.2f | %s |\n",
           budget >> 20, slabs, ms, 2.0 * (double)bytes / (ms * 1e6), ideal1,
           ideal1 > 0 ? ms / ideal1 : 0, memcmp(one, two, bytes) == 0 ? "yes" : "NO");
    fflush(stdout);
    /* the caller's arrays pinned (convolve_host_register): copied straight */
    if (convolve_host_register(ctx, in, bytes) == CONVOLVE_OK) {
        if (convolve_host_register(ctx, two, bytes) == CONVOLVE_OK) {
            memset(two, 0xFF, bytes);
            ms = time_plan(c, &l, in, two, budget, dev0, 1, runs, &slabs, timeline,
                           "streamed, arrays pinned, 1 device");
            printf("| streamed, arrays pinned (budget %zu MiB) | 1 | %zu | %.1f | %.2f | %.1f | "
                   "%.2f | %s |\n",
                   budget >> 20, slabs, ms, 2.0 * (double)bytes / (ms * 1e6), ideal1,
                   ideal1 > 0 ? ms / ideal1 : 0, memcmp(one, two, bytes) == 0 ? "yes" : "NO");
            fflush(stdout);
            convolve_host_unregister(ctx, two);
        }
        convolve_host_unregister(ctx, in);
    } else
        printf("| streamed, arrays pinned | - | - | - | - | - | - | (%s) |\n",
               convolve_last_error(ctx));
    int *list = malloc((size_t)devices * sizeof *list);
    for (int d = 2; d <= devices; d++) {
        for (int i = 0; i < d; i++)
            list[i] = i;
        memset(two, 0xFF, bytes);
        char label[64];
        snprintf(label, sizeof label, "streamed, %d devices", d);
        ms = time_plan(c, &l, in, two, 0, list, d, runs, &slabs, timeline, label);
        printf("| streamed (automatic budget) | %d | %zu | %.1f | %.2f | %.1f | %.2f | %s |\n", d,
               slabs, ms, 2.0 * (double)bytes / (ms * 1e6), ideal1 / d,
               ideal1 > 0 ? ms / (ideal1 / d) : 0, memcmp(one, two, bytes) == 0 ? "yes" : "NO");
        fflush(stdout);
        /* the same with the caller's arrays pinned */
        if (convolve_host_register(ctx, in, bytes) == CONVOLVE_OK) {
            if (convolve_host_register(ctx, two, bytes) == CONVOLVE_OK) {
                memset(two, 0xFF, bytes);
                snprintf(label, sizeof label, "streamed, arrays pinned, %d devices", d);
                ms = time_plan(c, &l, in, two, 0, list, d, runs, &slabs, timeline, label);
                printf("| streamed, arrays pinned (automatic budget) | %d | %zu | %.1f | %.2f | "
                       "%.1f | %.2f | %s |\n",
                       d, slabs, ms, 2.0 * (double)bytes / (ms * 1e6), ideal1 / d,
                       ideal1 > 0 ? ms / (ideal1 / d) : 0,
                       memcmp(one, two, bytes) == 0 ? "yes" : "NO");
                fflush(stdout);
                convolve_host_unregister(ctx, two);
            }
            convolve_host_unregister(ctx, in);
        }
    }
    free(list);
    free(in), free(one), free(two);
}

/* One sampled output row, computed on the CPU backend from the 3 input
 * rows around it (exact for a 3x3 filter in reflect mode: the rows past the
 * edges reflect to the edge rows in the sub-array as in the whole). */
static void cpu_row(const unsigned char *in, size_t rows, size_t cols, size_t r,
                    const convolve_filter *f, unsigned char *row_out, unsigned char *scratch)
{
    size_t lo = r == 0 ? 0 : r - 1, hi = r + 2 > rows ? rows : r + 2;
    size_t sub_shape[2] = {hi - lo, cols};
    convolve_layout sl;
    convolve_layout_init(&sl, CONVOLVE_UINT8, 2, sub_shape, 1);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    convolve_status st = convolve_run(ctx, &sl, in + lo * cols, &sl, scratch, f, &o);
    if (st != CONVOLVE_OK)
        fail("CPU sample", st);
    memcpy(row_out, scratch + (r - lo) * cols, cols);
}

/* An array larger than the device: uint8 rows x cols of `bytes` bytes in and
 * out (2-D, 3x3 box, reflect), or in place (one array), streamed on device 0
 * with the automatic budget. Sampled rows are computed on the CPU before
 * the run: the first and the last, 62 random ones, and 32 random pairs on
 * either side of a multiple of 1024 rows (where slab edges fall when slabs
 * are a multiple of 1024 rows, as they are here: 2048); compared after. */
#define HUGE_SAMPLES 128
static int run_huge(size_t bytes, size_t device_memory, int in_place)
{
    size_t cols = 65536, rows = bytes / cols;
    if (rows < 2048) {
        fprintf(stderr, "stream_bench: --huge needs at least 128 MiB\n");
        return 1;
    }
    bytes = rows * cols;
    const int arrays = in_place ? 1 : 2;
    long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && (double)bytes * arrays > (double)pages * (double)psize) {
        fprintf(stderr,
                "stream_bench: %d x %.1f GiB do not fit the host's %.1f GiB of free "
                "memory\n",
                arrays, bytes / 1073741824.0, (double)pages * (double)psize / 1073741824.0);
        return 2;
    }
    unsigned char *in = malloc(bytes), *out = in_place ? in : malloc(bytes);
    unsigned char *want = malloc((size_t)HUGE_SAMPLES * cols), *scratch = malloc(3 * cols);
    size_t sample[HUGE_SAMPLES];
    if (!in || !out || !want || !scratch) {
        fprintf(stderr, "stream_bench: out of host memory for %d x %.1f GiB\n", arrays,
                bytes / 1073741824.0);
        free(in), free(in_place ? NULL : out), free(want), free(scratch);
        return 2;
    }
    printf("\n## larger than the device: uint8 %zux%zu (%.1f GiB in, %.1f GiB out%s; the "
           "device has %.1f GiB), 3x3 box, reflect\n",
           rows, cols, bytes / 1073741824.0, bytes / 1073741824.0,
           in_place ? ", in place: the same array" : "", device_memory / 1073741824.0);
    /* random bytes, 1 MiB chunks each from its own seed (the same whatever
     * the threads), written by all threads (it is hundreds of GiB) */
    const size_t chunk = (size_t)1 << 20, nchunks = (bytes + chunk - 1) / chunk;
    double tf = bench_now_s();
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < nchunks; c++) {
        uint32_t st32 = 12345u + (uint32_t)c * 2654435761u;
        st32 = st32 ? st32 : 1u;
        size_t lo = c * chunk, hi = lo + chunk < bytes ? lo + chunk : bytes;
        for (size_t i = lo; i < hi; i += 4) {
            st32 ^= st32 << 13, st32 ^= st32 >> 17, st32 ^= st32 << 5;
            memcpy(in + i, &st32, hi - i < 4 ? hi - i : 4);
        }
        if (!in_place)
            memset(out + lo, 0xAB, hi - lo);
    }
    printf("(filled in %.1f s)\n", bench_now_s() - tf);
    size_t shape[2] = {rows, cols};
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_UINT8, 2, shape, 1);
    convolve_filter *f;
    convolve_status st = convolve_filter_create_named(ctx, &f, "box:1", 2);
    if (st != CONVOLVE_OK)
        fail("filter", st);
    uint32_t r32 = 777u;
    for (int k = 0; k < HUGE_SAMPLES; k++) {
        r32 ^= r32 << 13, r32 ^= r32 >> 17, r32 ^= r32 << 5;
        if (k < 2)
            sample[k] = k == 0 ? 0 : rows - 1;
        else if (k < 64)
            sample[k] = r32 % rows;
        else if (k % 2 == 0) /* the row before a multiple of 1024, then that row */
            sample[k] = (1 + r32 % (rows / 1024 - (rows % 1024 == 0))) * 1024 - 1;
        else
            sample[k] = sample[k - 1] + 1;
        cpu_row(in, rows, cols, sample[k], f, want + (size_t)k * cols, scratch);
    }
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    slab_count sc = {1};
    o.progress = count_slabs;
    o.progress_user = &sc;
    convolve_plan *p;
    if ((st = convolve_plan_create(ctx, &p, &l, &l, f, &o)) != CONVOLVE_OK)
        fail("plan", st);
    double t0 = bench_now_s();
    if ((st = convolve_execute(p, in, out)) != CONVOLVE_OK)
        fail("execute", st);
    double ms = (bench_now_s() - t0) * 1e3;
    convolve_plan_free(p);
    int bad = 0;
    for (int k = 0; k < HUGE_SAMPLES; k++)
        bad += memcmp(want + (size_t)k * cols, out + sample[k] * cols, cols) != 0;
    printf("| run | slabs | ms | GB/s (in+out) | sampled rows equal to the CPU's |\n");
    printf("|---|---|---|---|---|\n");
    printf("| streamed, automatic budget%s | %zu | %.0f | %.2f | %d of %d |\n",
           in_place ? ", in place" : "", sc.slabs, ms, 2.0 * (double)bytes / (ms * 1e6),
           HUGE_SAMPLES - bad, HUGE_SAMPLES);
    convolve_filter_free(f);
    free(in), free(in_place ? NULL : out), free(want), free(scratch);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    size_t N = 32768, M = 640, budget = (size_t)4 << 30, bw_bytes = (size_t)1 << 30;
    int runs = 3, skip2 = 0, skip3 = 0, k3 = 7, in_place = 0;
    size_t huge = 0;
    const char *timeline = NULL;
    if (getenv("STREAM_BENCH_SIZE"))
        N = (size_t)atoll(getenv("STREAM_BENCH_SIZE"));
    if (getenv("STREAM_BENCH_SIZE3"))
        M = (size_t)atoll(getenv("STREAM_BENCH_SIZE3"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size") && v)
            N = (size_t)atoll(v), i++;
        else if (!strcmp(a, "--size3") && v)
            M = (size_t)atoll(v), i++;
        else if (!strcmp(a, "--budget") && v)
            budget = parse_bytes(v), i++;
        else if (!strcmp(a, "--bw-bytes") && v)
            bw_bytes = parse_bytes(v), i++;
        else if (!strcmp(a, "--runs") && v)
            runs = atoi(v), i++;
        else if (!strcmp(a, "--timeline") && v)
            timeline = v, i++;
        else if (!strcmp(a, "--huge") && v)
            huge = strcmp(v, "auto") == 0 ? (size_t)-1 : parse_bytes(v), i++;
        else if (!strcmp(a, "--in-place"))
            in_place = 1;
        else if (!strcmp(a, "--k3") && v)
            k3 = atoi(v), i++;
        else if (!strcmp(a, "--skip-2d"))
            skip2 = 1;
        else if (!strcmp(a, "--skip-3d"))
            skip3 = 1;
        else {
            fprintf(stderr, "usage: stream_bench [--size N] [--size3 M] [--budget BYTES] "
                            "[--runs R] [--timeline FILE] [--bw-bytes BYTES] [--skip-2d] "
                            "[--skip-3d] [--k3 K] [--huge BYTES|auto [--in-place]]\n");
            return 1;
        }
    }
    runs = runs < 1 ? 1 : runs;
    if (k3 < 1 || k3 > 31 || k3 % 2 == 0) {
        fprintf(stderr, "stream_bench: --k3 takes an odd size, 1 to 31\n");
        return 1;
    }
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return 2;
    convolve_device_info info;
    int devices = 0;
    convolve_device_query(ctx, &info);
    convolve_device_count(ctx, &devices);
    if (!info.available) {
        printf("stream_bench: skipped: %s\n", info.reason);
        return 77;
    }
    printf("# stream_bench: %s x%d, libconvolve %s, runs %d (median after a warm-up)\n", info.name,
           devices, convolve_version_string(), runs);
    if (huge) /* auto: 1.5 times the device's memory */
        return run_huge(huge == (size_t)-1 ? info.total_memory / 2 * 3 : huge, info.total_memory,
                        in_place);
    printf("\n## pinned host<->device bandwidth (%zu MiB copies), GB/s\n", bw_bytes >> 20);
    printf("| device | H2D alone | D2H alone | H2D, both at once | D2H, both at once |\n");
    printf("|---|---|---|---|---|\n");
    bandwidth bw0 = {0, 0, 0, 0};
    for (int d = 0; d < devices; d++) {
        bandwidth bw = measure_bandwidth(d, bw_bytes, 5);
        if (d == 0)
            bw0 = bw;
        printf("| %d | %.2f | %.2f | %.2f | %.2f |\n", d, bw.h2d, bw.d2h, bw.both_h2d, bw.both_d2h);
    }
    if (devices > 1) {
        /* what the host moves with several devices copying at once: the
         * ceiling of a streamed run over them */
        printf("\n## the host's aggregate: devices 0..n-1 each copying %zu MiB in and out at "
               "once, GB/s (in + out, all devices)\n",
               bw_bytes >> 20);
        printf("| devices | GB/s | x one device |\n|---|---|---|\n");
        double one = 0;
        for (int n = 1; n <= devices; n++) {
            double g = measure_aggregate(n, bw_bytes, 5);
            one = n == 1 ? g : one;
            printf("| %d | %.2f | %.2f |\n", n, g, one > 0 ? g / one : 0);
        }
    }
    printf("\nideal = max(input / H2D, output / D2H) at device 0's both-at-once bandwidth, "
           "divided by the device count; ratio = ms / ideal\n");
    fflush(stdout);
    if (!skip2) {
        bench_case c = {"2-D memory-bound", 2, {N, N, 0}, 3};
        run_case(&c, budget, devices, &bw0, runs, timeline);
    }
    if (!skip3) {
        bench_case c = {"3-D compute-heavy", 3, {M, M, M}, (size_t)k3};
        run_case(&c, budget, devices, &bw0, runs, timeline);
    }
    convolve_context_free(ctx);
    return 0;
}

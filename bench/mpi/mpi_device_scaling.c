/*
 * mpi_device_scaling.c - times distributed plans on boxes resident in the
 * ranks' GPU memory (convolve_mpi_execute_device), for docs/scale.md and
 * bench/mpi/gpu_device_scaling.py, against the targets of the device path:
 * a rank's time <= 1.3 x (its single-GPU kernel time + its halo exchange
 * time), weak-scaling efficiency, strong-scaling speed-up.
 *
 *   mpirun -n N mpi_device_scaling [options]   (one rank per GPU)
 *     --weak | --strong   each rank holds SIZE^DIMS (default) | the global
 *                         array is SIZE^DIMS, split over the ranks
 *     -d DIMS  -n SIZE  -f SPEC  --grid AxBxC  --mode M  --runs R
 *                         as bench/mpi/mpi_scaling.c (defaults 3, 512,
 *                         box:1, slabs, reflect, 20)
 *
 * Each timed run starts after a barrier and lasts until the slowest rank's
 * stream has finished the call (convolve_mpi_execute_device, then
 * cudaStreamSynchronize): rank_ms is the median over runs of that maximum.
 * exchange_ms is the median of the slowest rank's halo exchange within the
 * same runs (convolve_mpi_stats post_ms + wait_ms: faces to the host,
 * packing, MPI, while the interior runs; with the halos GPU to GPU,
 * exchange=gpu, only the host's part: queuing the copies and waiting for
 * the peers' messages, the copies themselves being inside rank_ms). kernel_ms is the slowest rank's
 * single-GPU time for the same box with a plain libconvolve plan of the
 * same strategy (convolve_plan_benchmark: device memory, CUDA events,
 * median). ratio = rank_ms / (kernel_ms + exchange_ms). halo_MB: the halo
 * bytes all ranks sent; rank_halo_MB: the most one rank received (what
 * bench/mpi/scale_model.py --exchange-ms takes with it). One line of
 * key=value pairs on rank 0, and which device each rank used.
 */
#include "convolve_mpi.h"

#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(int rank, const char *what, const char *why)
{
    fprintf(stderr, "mpi_device_scaling: rank %d: %s: %s\n", rank, what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CUDA_OK(call)                                 \
    do {                                              \
        cudaError_t e_ = (call);                      \
        if (e_ != cudaSuccess)                        \
            die(rank, #call, cudaGetErrorString(e_)); \
    } while (0)
#define CV_OK(call, what)                                                      \
    do {                                                                       \
        convolve_status s_ = (call);                                           \
        if (s_ != CONVOLVE_OK)                                                 \
            die(rank, what,                                                    \
                convolve_mpi_last_error(ctx)[0] ? convolve_mpi_last_error(ctx) \
                                                : convolve_last_error(ctx));   \
    } while (0)

int main(int argc, char **argv)
{
    int level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int weak = 1, dims = 3, runs = 20, have_grid = 0;
    size_t n = 512;
    const char *spec = "box:1", *mode = "reflect";
    int grid[3] = {size, 1, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--weak"))
            weak = 1;
        else if (!strcmp(a, "--strong"))
            weak = 0;
        else if (!strcmp(a, "-d") && v)
            dims = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && v)
            n = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "-f") && v)
            spec = argv[++i];
        else if (!strcmp(a, "--mode") && v)
            mode = argv[++i];
        else if (!strcmp(a, "--runs") && v)
            runs = atoi(argv[++i]);
        else if (!strcmp(a, "--grid") && v) {
            have_grid = sscanf(argv[++i], "%dx%dx%d", &grid[0], &grid[1], &grid[2]) == 3;
            if (!have_grid)
                die(rank, "--grid", "wants AxBxC");
        } else {
            die(rank, a, "unknown or incomplete option");
        }
    }
    if (dims < 1 || dims > 3 || runs < 1 || n < 1)
        die(rank, "options", "bad -d, -n or --runs");
    for (int a = dims; a < 3; a++)
        grid[a] = 1;
    if (!have_grid)
        grid[0] = size;

    convolve_context *ctx;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        die(rank, "context", "out of memory");
    convolve_options opt;
    convolve_options_init(&opt);
    opt.backend = CONVOLVE_BACKEND_CUDA;
    CV_OK(convolve_mode_parse(mode, &opt.mode), "--mode");

    convolve_filter *filter = NULL;
    int K = 0;
    if (sscanf(spec, "dense:%d", &K) == 1 && K > 0) {
        size_t k[3] = {(size_t)K, (size_t)K, (size_t)K}, count = 1;
        for (int a = 0; a < dims; a++)
            count *= (size_t)K;
        double *w = malloc(count * sizeof *w);
        unsigned x = 12345u; /* the same weights on every rank */
        for (size_t i = 0; i < count; i++) {
            x = x * 1103515245u + 12345u;
            w[i] = (double)(x >> 8) / 16777216.0 - 0.5;
        }
        CV_OK(convolve_filter_create(ctx, &filter, dims, k, w), "filter");
        free(w);
    } else {
        CV_OK(convolve_filter_create_named(ctx, &filter, spec, dims), "filter");
    }

    size_t global[3] = {1, 1, 1}, start[3] = {0, 0, 0}, shape[3] = {1, 1, 1};
    for (int a = 0; a < dims; a++)
        global[a] = weak ? n * (size_t)grid[a] : n;
    CV_OK(convolve_mpi_decompose(ctx, MPI_COMM_WORLD, dims, global, grid, start, shape),
          "decompose");
    convolve_layout layout;
    CV_OK(convolve_layout_init(&layout, CONVOLVE_FLOAT32, dims, shape, 1), "layout");
    const size_t count = convolve_layout_count(&layout), bytes = count * sizeof(float);

    convolve_mpi_plan *plan;
    CV_OK(convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, global, start, &layout, &layout,
                                   filter, &opt),
          "plan");
    CUDA_OK(cudaSetDevice(convolve_mpi_plan_device(plan)));
    void *din, *dout;
    cudaStream_t stream;
    CUDA_OK(cudaMalloc(&din, bytes));
    CUDA_OK(cudaMalloc(&dout, bytes));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
        float *h = malloc(bytes);
        if (!h)
            die(rank, "host buffer", "out of memory");
        unsigned x = 777u + (unsigned)rank;
        for (size_t i = 0; i < count; i++) {
            x = x * 1664525u + 1013904223u;
            h[i] = (float)(x >> 8) / 16777216.0f;
        }
        CUDA_OK(cudaMemcpy(din, h, bytes, cudaMemcpyHostToDevice));
        free(h);
    }

    enum { PHASES = 6 };
    double *t = malloc((size_t)runs * PHASES * sizeof *t);
    for (int r = -3; r < runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CV_OK(convolve_mpi_execute_device(plan, din, dout, stream), "execute");
        CUDA_OK(cudaStreamSynchronize(stream));
        double mine[PHASES], worst[PHASES];
        convolve_mpi_stats s;
        convolve_mpi_plan_stats(plan, &s);
        mine[0] = (MPI_Wtime() - t0) * 1e3;
        mine[1] = s.post_ms + s.wait_ms;
        mine[2] = s.edges_ms;
        mine[3] = s.post_ms, mine[4] = s.interior_ms, mine[5] = s.wait_ms;
        MPI_Allreduce(mine, worst, PHASES, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0)
            for (int p = 0; p < PHASES; p++)
                t[(size_t)p * (size_t)runs + (size_t)r] = worst[p];
    }
    double med[PHASES];
    for (int p = 0; p < PHASES; p++)
        med[p] = median(t + (size_t)p * (size_t)runs, runs);
    convolve_mpi_stats s;
    convolve_mpi_plan_stats(plan, &s);
    unsigned long long sent = s.bytes_sent, all_sent = 0, got = s.bytes_received, most = 0;
    MPI_Reduce(&sent, &all_sent, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&got, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);

    /* the same box through one plain plan on the rank's GPU, same strategy;
     * one rank after another so that they do not share the host's links */
    convolve_options po = opt;
    po.strategy = convolve_mpi_plan_strategy(plan);
    convolve_plan *pp;
    CV_OK(convolve_plan_create(ctx, &pp, &layout, &layout, filter, &po), "plain plan");
    double kernel = 0.0, worst_kernel = 0.0;
    for (int r = 0; r < size; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == rank) {
            convolve_timing tm;
            CV_OK(convolve_plan_benchmark(pp, 3, runs, &tm), "kernel benchmark");
            kernel = tm.median_ms;
        }
    }
    convolve_plan_free(pp);
    MPI_Reduce(&kernel, &worst_kernel, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    char where[300];
    convolve_device_info info;
    snprintf(where, sizeof where, "cuda:%d", convolve_mpi_plan_device(plan));
    if (convolve_device_query(ctx, &info) == CONVOLVE_OK)
        snprintf(where, sizeof where, "cuda:%d(%s)", convolve_mpi_plan_device(plan), info.name);
    for (char *c = where; *c; c++) /* one key=value word */
        *c = *c == ' ' ? '_' : *c;
    if (rank != 0)
        MPI_Send(where, (int)sizeof where, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks=%d scaling=%s dims=%d global=%zux%zux%zu box0=%zux%zux%zu grid=%dx%dx%d "
               "filter=%s strategy=%s mode=%s rank_ms=%.3f kernel_ms=%.3f exchange_ms=%.3f "
               "edges_ms=%.3f post_ms=%.3f interior_ms=%.3f wait_ms=%.3f ratio=%.3f halo_MB=%.3f "
               "rank_halo_MB=%.3f exchange=%s devices=%s",
               size, weak ? "weak" : "strong", dims, global[0], global[1], global[2], shape[0],
               shape[1], shape[2], grid[0], grid[1], grid[2], spec,
               convolve_mpi_plan_strategy(plan), mode, med[0], worst_kernel, med[1], med[2], med[3],
               med[4], med[5], med[0] / (worst_kernel + med[1]), (double)all_sent / 1e6,
               (double)most / 1e6, s.device_exchange ? "gpu" : "host", where);
        for (int r = 1; r < size; r++) {
            MPI_Recv(where, (int)sizeof where, MPI_CHAR, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf(",%s", where);
        }
        printf("\n");
    }
    free(t);
    CUDA_OK(cudaStreamDestroy(stream));
    CUDA_OK(cudaFree(din));
    CUDA_OK(cudaFree(dout));
    convolve_mpi_plan_free(plan);
    convolve_filter_free(filter);
    convolve_context_free(ctx);
    MPI_Finalize();
    return 0;
}

/*
 * mpi_scaling.c - times distributed plans (libconvolve_mpi) for strong and
 * weak scaling; docs/scale.md and bench/mpi/mpi_scaling.sh use it.
 *
 *   mpirun -n N mpi_scaling [options]
 *     --weak          each rank holds SIZE^DIMS elements (the global array
 *                     grows with the ranks, along axis 0 for slabs); default
 *     --strong        the global array is SIZE^DIMS, split over the ranks
 *     -d DIMS         1, 2 or 3 (default 3)
 *     -n SIZE         extent per axis (default 256)
 *     -f SPEC         filter: box:R, gaussian:S (separable) or dense:K (a KxKxK
 *                     random dense filter); default box:1 (3x3x3, separable)
 *     --grid AxBxC    process grid (default: slabs, N x 1 x 1)
 *     --mode M        boundary mode (default reflect)
 *     --backend B     cpu, cuda or auto (default cpu)
 *     --threads T     CPU threads per rank (default 1)
 *     --runs R        timed runs (default 10), after 2 warm-up runs
 *     --pinned        the boxes from convolve_host_alloc (pinned host memory,
 *                     copied straight to and from a GPU) instead of malloc
 *
 * Each timed run starts after a barrier and lasts until the slowest rank's
 * convolve_mpi_execute returns (the max over ranks); the median is printed,
 * with the medians (over runs, of the max over ranks) of the phases of
 * convolve_mpi_stats, and two references without the MPI layer: plain
 * libconvolve plans on every rank's box at once (together_ms, the max over
 * ranks: what the machine gives that many independent processes, the
 * ceiling of weak scaling), and on rank 0's box alone (plain_ms). One line,
 * key=value pairs. cpu_ms is the CPU time (all threads) of the busiest rank's
 * process during an execution: on a shared machine, where other jobs take
 * cores, its growth with the ranks is the work the decomposition adds,
 * whoever got the cores.
 */
#include "../bench_util.h"
#include "convolve_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time this process has used (all its threads), in ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void die(int rank, const char *what, convolve_status st, convolve_context *ctx)
{
    if (rank == 0 || st != CONVOLVE_OK)
        fprintf(stderr, "mpi_scaling: rank %d: %s: %s: %s\n", rank, what, convolve_status_name(st),
                ctx ? convolve_mpi_last_error(ctx) : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    int level; /* SERIALIZED lets the plan's progress thread drive the halos */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int weak = 1, dims = 3, runs = 10, threads = 1, have_grid = 0, pinned = 0;
    size_t n = 256;
    const char *spec = "box:1", *mode = "reflect", *backend = "cpu";
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
        else if (!strcmp(a, "--backend") && v)
            backend = argv[++i];
        else if (!strcmp(a, "--threads") && v)
            threads = atoi(argv[++i]);
        else if (!strcmp(a, "--runs") && v)
            runs = atoi(argv[++i]);
        else if (!strcmp(a, "--pinned"))
            pinned = 1;
        else if (!strcmp(a, "--grid") && v) {
            have_grid = sscanf(argv[++i], "%dx%dx%d", &grid[0], &grid[1], &grid[2]) == 3;
            if (!have_grid)
                die(rank, "--grid wants AxBxC", CONVOLVE_ERROR_INVALID_ARGUMENT, NULL);
        } else {
            if (rank == 0)
                fprintf(stderr, "mpi_scaling: unknown or incomplete option '%s'\n", a);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (dims < 1 || dims > 3 || runs < 1 || n < 1)
        die(rank, "bad -d, -n or --runs", CONVOLVE_ERROR_INVALID_ARGUMENT, NULL);
    for (int a = dims; a < 3; a++)
        grid[a] = 1;
    if (!have_grid)
        grid[0] = size;

    convolve_context *ctx;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        die(rank, "context", CONVOLVE_ERROR_OUT_OF_MEMORY, NULL);
    convolve_options opt;
    convolve_options_init(&opt);
    opt.threads = threads;
    convolve_status st;
    if ((st = convolve_mode_parse(mode, &opt.mode)) ||
        (st = convolve_backend_parse(backend, &opt.backend)))
        die(rank, "--mode or --backend", st, ctx);

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
        st = convolve_filter_create(ctx, &filter, dims, k, w);
        free(w);
    } else {
        st = convolve_filter_create_named(ctx, &filter, spec, dims);
    }
    if (st != CONVOLVE_OK)
        die(rank, "filter", st, ctx);

    size_t global[3] = {1, 1, 1}, start[3] = {0, 0, 0}, shape[3] = {1, 1, 1};
    for (int a = 0; a < dims; a++)
        global[a] = weak ? n * (size_t)grid[a] : n;
    if ((st = convolve_mpi_decompose(ctx, MPI_COMM_WORLD, dims, global, grid, start, shape)))
        die(rank, "decompose", st, ctx);
    convolve_layout layout;
    if ((st = convolve_layout_init(&layout, CONVOLVE_FLOAT32, dims, shape, 1)))
        die(rank, "layout", st, ctx);
    size_t count = convolve_layout_count(&layout);
    float *in = NULL, *out = NULL;
    if (pinned) {
        void *pi = NULL, *po = NULL;
        if ((st = convolve_host_alloc(ctx, count * sizeof *in, 0, &pi)) ||
            (st = convolve_host_alloc(ctx, count * sizeof *out, 0, &po)))
            die(rank, "--pinned: convolve_host_alloc", st, ctx);
        in = pi;
        out = po;
    } else if (!(in = malloc(count * sizeof *in)) || !(out = malloc(count * sizeof *out))) {
        die(rank, "allocating the boxes", CONVOLVE_ERROR_OUT_OF_MEMORY, ctx);
    }
    unsigned x = 777u + (unsigned)rank;
    for (size_t i = 0; i < count; i++) {
        x = x * 1664525u + 1013904223u;
        in[i] = (float)(x >> 8) / 16777216.0f;
    }
    memset(out, 0, count * sizeof *out);

    convolve_mpi_plan *plan;
    if ((st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, global, start, &layout, &layout,
                                       filter, &opt)))
        die(rank, "plan", st, ctx);

    enum { PHASES = 7 };
    double *t = malloc((size_t)runs * PHASES * sizeof *t);
    for (int r = -2; r < runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), c0 = cpu_ms();
        if ((st = convolve_mpi_execute(plan, in, out)))
            die(rank, "execute", st, ctx);
        double c1 = cpu_ms();
        double mine[PHASES], worst[PHASES];
        convolve_mpi_stats s;
        convolve_mpi_plan_stats(plan, &s);
        mine[0] = (MPI_Wtime() - t0) * 1e3;
        mine[1] = s.post_ms;
        mine[2] = s.interior_ms;
        mine[3] = s.wait_ms;
        mine[4] = s.edges_ms;
        mine[5] = s.total_ms - s.post_ms - s.interior_ms - s.wait_ms - s.edges_ms;
        mine[6] = c1 - c0;
        MPI_Allreduce(mine, worst, PHASES, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0)
            for (int p = 0; p < PHASES; p++)
                t[(size_t)p * (size_t)runs + (size_t)r] = worst[p];
    }
    double med[PHASES];
    for (int p = 0; p < PHASES; p++)
        med[p] = bench_median(t + (size_t)p * (size_t)runs, runs);
    convolve_mpi_stats s;
    convolve_mpi_plan_stats(plan, &s);
    unsigned long long bytes = s.bytes_sent, all_bytes = 0;
    MPI_Reduce(&bytes, &all_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    /* the same boxes through plain libconvolve plans, no MPI layer: every
     * rank at once (what the machine gives that many independent processes:
     * the ceiling for weak scaling), then rank 0 alone */
    convolve_options po = opt;
    po.strategy = convolve_mpi_plan_strategy(plan);
    po.backend = convolve_mpi_plan_backend(plan);
    convolve_plan *pp;
    if ((st = convolve_plan_create(ctx, &pp, &layout, &layout, filter, &po)))
        die(rank, "plain plan", st, ctx);
    double *pt = malloc((size_t)runs * sizeof *pt);
    for (int r = -2; r < runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((st = convolve_execute(pp, in, out)))
            die(rank, "plain execute", st, ctx);
        double mine = (MPI_Wtime() - t0) * 1e3, worst;
        MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0)
            pt[r] = worst;
    }
    double together = bench_median(pt, runs), plain = 0.0;
    if (rank == 0) {
        for (int r = -1; r < runs; r++) {
            double t0 = MPI_Wtime();
            if ((st = convolve_execute(pp, in, out)))
                die(rank, "plain execute", st, ctx);
            if (r >= 0)
                pt[r] = (MPI_Wtime() - t0) * 1e3;
        }
        plain = bench_median(pt, runs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(pt);
    convolve_plan_free(pp);

    char where[300];
    convolve_device_info info;
    snprintf(where, sizeof where, "cpu");
    if (convolve_mpi_plan_backend(plan) == CONVOLVE_BACKEND_CUDA &&
        convolve_device_query(ctx, &info) == CONVOLVE_OK)
        snprintf(where, sizeof where, "cuda:%d(%s)", convolve_mpi_plan_device(plan), info.name);
    if (rank != 0)
        MPI_Send(where, (int)sizeof where, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks=%d scaling=%s dims=%d global=%zux%zux%zu box0=%zux%zux%zu grid=%dx%dx%d "
               "filter=%s strategy=%s mode=%s threads=%d median_ms=%.3f post_ms=%.3f "
               "interior_ms=%.3f wait_ms=%.3f edges_ms=%.3f agree_ms=%.3f cpu_ms=%.3f "
               "halo_MB=%.3f together_ms=%.3f plain_ms=%.3f boxes=%s devices=%s",
               size, weak ? "weak" : "strong", dims, global[0], global[1], global[2], shape[0],
               shape[1], shape[2], grid[0], grid[1], grid[2], spec,
               convolve_mpi_plan_strategy(plan), mode, threads, med[0], med[1], med[2], med[3],
               med[4], med[5], med[6], (double)all_bytes / 1e6, together, plain,
               pinned ? "pinned" : "malloc", where);
        for (int r = 1; r < size; r++) {
            MPI_Recv(where, (int)sizeof where, MPI_CHAR, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf(",%s", where);
        }
        printf("\n");
    }
    free(t);
    if (pinned) {
        convolve_host_free(in);
        convolve_host_free(out);
    } else {
        free(in);
        free(out);
    }
    convolve_mpi_plan_free(plan);
    convolve_filter_free(filter);
    convolve_context_free(ctx);
    MPI_Finalize();
    return 0;
}

/*
 * cpu_bench.c - times CPU strategies through the public API on an image
 * (default 4096 x 4096 float32, reflect, correlate) for a list of radii,
 * next to a memory-copy baseline of the same array measured in the same run.
 *
 *   cpu_bench [-s STRATEGY] [-n SIZE] [-d 1|2|3] [-t THREADS] [-r RUNS]
 *             [-y float32|float64|uint8|uint16] [-c CHANNELS] [-g] [RADIUS...]
 *
 * -g uses a separable Gaussian (sigma = radius / 4) instead of dense random
 * weights. Prints one line per radius: median, min and max in ms, and the
 * ratio to the copy.
 */
#include "bench_util.h"
#include "convolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

/* Median time of copying `bytes` between two pre-faulted buffers. */
static double copy_ms(size_t bytes, int runs)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    double *t = malloc((size_t)runs * sizeof *t), med;
    if (!a || !b || !t) {
        free(a), free(b), free(t);
        return -1;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int i = 0; i < runs; i++) {
        double t0 = bench_now_ms();
        memcpy(b, a, bytes);
        t[i] = bench_now_ms() - t0;
    }
    med = bench_median(t, runs);
    free(a), free(b), free(t);
    return med;
}

int main(int argc, char **argv)
{
    const char *strategy = "fast";
    size_t n = 4096, channels = 1;
    int dims = 2, threads = 0, runs = 11, gauss = 0;
    convolve_dtype dtype = CONVOLVE_FLOAT32;
    int radii[32], nr = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            strategy = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            dims = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            channels = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "-y") && i + 1 < argc) {
            if (convolve_dtype_parse(argv[++i], &dtype) != CONVOLVE_OK) {
                fprintf(stderr, "unknown dtype %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "-g"))
            gauss = 1;
        else if (nr < 32)
            radii[nr++] = atoi(argv[i]);
    }
    if (!nr) {
        const int def[] = {1, 2, 3, 7, 15};
        for (nr = 0; nr < 5; nr++)
            radii[nr] = def[nr];
    }
    if (dims < 1 || dims > 3 || runs < 1 || n < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    convolve_context *ctx;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return 1;
    size_t shape[3] = {n, n, n};
    convolve_layout lay;
    if (convolve_layout_init(&lay, dtype, dims, shape, channels) != CONVOLVE_OK) {
        fprintf(stderr, "bad layout\n");
        return 1;
    }
    size_t bytes = convolve_layout_count(&lay) * convolve_dtype_size(dtype);
    double copy = copy_ms(bytes, runs);
    printf("%zu^%d x %zu %s, %s, threads %d: copy %.2f ms\n", n, dims, channels,
           convolve_dtype_name(dtype), strategy, threads, copy);
    for (int i = 0; i < nr; i++) {
        int r = radii[i];
        size_t K = (size_t)(2 * r + 1), ks[3] = {K, K, K}, cnt = 1;
        for (int a = 0; a < dims; a++)
            cnt *= K;
        convolve_filter *f = NULL;
        convolve_status st;
        if (gauss) {
            double *t = malloc(K * sizeof *t), s = 0, sig = r / 4.0 + 0.5;
            for (size_t k = 0; k < K; k++)
                s += t[k] = exp(-((double)k - r) * ((double)k - r) / (2 * sig * sig));
            for (size_t k = 0; k < K; k++)
                t[k] /= s;
            const double *taps[3] = {t, t, t};
            st = convolve_filter_create_separable(ctx, &f, dims, ks, taps);
            free(t);
        } else {
            double *w = malloc(cnt * sizeof *w);
            unsigned long long s = 88172645463325252ull;
            for (size_t k = 0; k < cnt; k++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                w[k] = (double)(s >> 11) * 0x1.0p-53 / (double)cnt;
            }
            st = convolve_filter_create(ctx, &f, dims, ks, w);
            free(w);
        }
        convolve_options o;
        convolve_options_init(&o);
        o.operation = CONVOLVE_OP_CORRELATE;
        o.backend = CONVOLVE_BACKEND_CPU;
        o.strategy = strategy;
        o.threads = threads;
        convolve_plan *plan = NULL;
        convolve_timing tm;
        if (st == CONVOLVE_OK)
            st = convolve_plan_create(ctx, &plan, &lay, &lay, f, &o);
        if (st == CONVOLVE_OK)
            st = convolve_plan_benchmark(plan, 2, runs, &tm);
        if (st != CONVOLVE_OK)
            printf("r=%2d: %s: %s\n", r, convolve_status_name(st), convolve_last_error(ctx));
        else
            printf("r=%2d: %8.2f ms (min %.2f, max %.2f)  x copy %.2f  [%s]\n", r, tm.median_ms,
                   tm.min_ms, tm.max_ms, tm.median_ms / copy, convolve_plan_strategy(plan));
        fflush(stdout);
        convolve_plan_free(plan);
        convolve_filter_free(f);
    }
    convolve_context_free(ctx);
    return 0;
}

/*
 * test_auto_backend.c - AUTO's choice of backend is made before CUDA is
 * touched: a photo-sized problem plans on the CPU without probing the
 * device (so the CLI never pays CUDA's start-up for it), a large one asks
 * for the device (in a build with CUDA), work a started GPU does faster
 * rents CUDA's start-up until the time forgone pays for it, and the two
 * backends' estimates order as the model says. Looks inside the context (internal.h) for
 * whether the device was probed.
 */
#include "harness.h"
#include "backend.h"
#include "internal.h"

#include <math.h>
#include <string.h>

static convolve_plan *plan_for(convolve_context *ctx, convolve_dtype t, int ndim,
                               const size_t *shape, size_t channels, int extent)
{
    convolve_layout l;
    convolve_filter *f = NULL;
    convolve_plan *plan = NULL;
    size_t ks[CONVOLVE_MAX_DIMS];
    size_t nw = 1;
    for (int a = 0; a < ndim; a++)
        ks[a] = (size_t)extent, nw *= ks[a];
    double *w = malloc(nw * sizeof *w);
    CHECK(w != NULL, "out of memory");
    if (!w)
        return NULL;
    for (size_t i = 0; i < nw; i++)
        w[i] = h_uniform(-1.0, 1.0);
    convolve_options o;
    convolve_options_init(&o);
    o.threads = 1;
    CHECK_OK(ctx, convolve_layout_init(&l, t, ndim, shape, channels));
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, ndim, ks, w));
    CHECK_OK(ctx, convolve_plan_create(ctx, &plan, &l, &l, f, &o));
    convolve_filter_free(f);
    free(w);
    return plan;
}

int main(void)
{
    h_seed("test_auto_backend");
    const int cuda_built = convolve_backend_built(CONVOLVE_BACKEND_CUDA);

    /* the bundled photo's shape, RGB uint8, a 17x17 filter (gaussian:2's
     * extent): the CPU, and the device never looked at */
    convolve_context *ctx = NULL;
    CHECK_OK(NULL, convolve_context_create(&ctx));
    const size_t photo[2] = {600, 512};
    convolve_plan *plan = plan_for(ctx, CONVOLVE_UINT8, 2, photo, 3, 17);
    if (plan) {
        CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CPU, "photo: planned on %s",
              convolve_backend_name(convolve_plan_backend(plan)));
        CHECK(ctx->cuda_probed == 0, "photo: AUTO probed the CUDA device");
        if (cuda_built && cvcu_backend.estimate_ms) {
            double gpu = cvcu_backend.estimate_ms(&plan->problem, 0);
            double cpu = cvcpu_backend.estimate_ms(&plan->problem, 0);
            printf("test_auto_backend: photo: estimates cpu %.2f ms, gpu %.2f ms (with start-up)\n",
                   cpu, gpu);
            CHECK(gpu > cpu, "photo: the GPU estimated faster (%g < %g ms)", gpu, cpu);
        }
    }
    convolve_plan_free(plan);
    convolve_context_free(ctx);

    /* CUDA's start-up rented: float32 1024^2 with a dense 13x13 filter on one
     * thread, which a started GPU does faster, though not by the start-up.
     * Each execution of the plan on the CPU adds what the GPU would have
     * saved (its time less the GPU's estimate) to the process's sum, and
     * the first after the sum reaches the start-up probes the device and,
     * if one is usable, moves the plan there; its results stay those of
     * the CPU's runs */
    const size_t mid[2] = {1024, 1024}, n = mid[0] * mid[1];
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *first = malloc(n * sizeof *x);
    CHECK(x && y && first, "out of memory");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    const uint64_t weights_seed = h_rng_state; /* the second plan draws the same weights */
    plan = x && y && first ? plan_for(ctx, CONVOLVE_FLOAT32, 2, mid, 1, 13) : NULL;
    if (plan && cuda_built && cvcu_backend.estimate_ms) {
        h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
        const double gpu = cvcu_backend.estimate_ms(&plan->problem, 1);
        const double cpu = cvcpu_backend.estimate_ms(&plan->problem, 0);
        const double start_up = cvcu_backend.estimate_ms(&plan->problem, 0) - gpu;
        const double saving = cpu - gpu; /* by the estimates */
        printf("test_auto_backend: 1024^2 13x13, one thread: estimates cpu %.2f ms, gpu %.2f ms "
               "started, start-up %.0f ms\n",
               cpu, gpu, start_up);
        CHECK(saving > 0.0 && saving < start_up, "1024^2 13x13 is no case for renting (%g, %g)",
              saving, start_up);
        CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CPU && !ctx->cuda_probed,
              "1024^2 13x13 planned on %s, probed %d",
              convolve_backend_name(convolve_plan_backend(plan)), ctx->cuda_probed);
        int runs = 0, moved = 0;
        while (runs < 4000 && !ctx->cuda_probed) {
            const double before = cvi_auto_forgone_ms();
            h_poison(CONVOLVE_FLOAT32, y, n);
            const double t0 = cvi_now_s();
            CHECK_OK(ctx, convolve_execute(plan, x, y));
            const double ms = (cvi_now_s() - t0) * 1e3;
            runs++;
            const double sum = cvi_auto_forgone_ms();
            if (runs == 1)
                memcpy(first, y, n * sizeof *y);
            if (!ctx->cuda_probed) {
                CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CPU, "run %d on %s", runs,
                      convolve_backend_name(convolve_plan_backend(plan)));
                CHECK(sum >= before && sum - before <= (ms > gpu ? ms - gpu : 0.0) + 0.01,
                      "run %d of %g ms added %g ms forgone (the GPU's estimate %g ms)", runs, ms,
                      sum - before, gpu);
                CHECK(before < start_up, "run %d: %g ms forgone of %g, no probe", runs, before,
                      start_up);
            } else {
                CHECK(before >= start_up - 0.001 && sum == before,
                      "run %d probed with %g -> %g ms forgone of %g", runs, before, sum, start_up);
                moved = convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA;
                CHECK(moved == ctx->cuda.info.available, "a usable GPU %d, the plan on %s",
                      ctx->cuda.info.available, convolve_backend_name(convolve_plan_backend(plan)));
            }
            if (runs > 1 && (runs % 64 == 0 || ctx->cuda_probed)) {
                h_diff d = h_compare(CONVOLVE_FLOAT32, y, CONVOLVE_FLOAT32, first, n, 1e-5, 1e-5);
                CHECK(d.bad == 0, "run %d on %s: %zu of %zu differ from the first run (rel L2 %g)",
                      runs, convolve_backend_name(convolve_plan_backend(plan)), d.bad, n, d.rel_l2);
            }
        }
        printf("test_auto_backend: 1024^2 13x13: the device probed at run %d (%.1f ms forgone "
               "a run), the plan on %s\n",
               runs, runs > 1 ? cvi_auto_forgone_ms() / (runs - 1) : 0.0,
               convolve_backend_name(convolve_plan_backend(plan)));
        CHECK(ctx->cuda_probed, "no probe after %d runs", runs);
        CHECK(runs > 1, "the first run probed");
        /* another plan of it: the GPU if CUDA started, else no probe again */
        convolve_context *ctx2 = NULL;
        CHECK_OK(NULL, convolve_context_create(&ctx2));
        h_rng_state = weights_seed;
        convolve_plan *plan2 = plan_for(ctx2, CONVOLVE_FLOAT32, 2, mid, 1, 13);
        if (plan2) {
            const int started = cvi_cuda_started(ctx2);
            CHECK(started == moved, "CUDA started %d, the plan moved %d", started, moved);
            h_poison(CONVOLVE_FLOAT32, y, n);
            CHECK_OK(ctx2, convolve_execute(plan2, x, y));
            CHECK(convolve_plan_backend(plan2) ==
                      (started ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU),
                  "after the start-up was spent: CUDA started %d, planned on %s", started,
                  convolve_backend_name(convolve_plan_backend(plan2)));
            CHECK(started || !ctx2->cuda_probed, "no GPU, yet a new context probed again");
            h_diff d = h_compare(CONVOLVE_FLOAT32, y, CONVOLVE_FLOAT32, first, n, 1e-5, 1e-5);
            CHECK(d.bad == 0, "a second plan: %zu of %zu differ (rel L2 %g)", d.bad, n, d.rel_l2);
        }
        convolve_plan_free(plan2);
        convolve_context_free(ctx2);
    }
    convolve_plan_free(plan);
    convolve_context_free(ctx);
    free(x);
    free(y);
    free(first);

    /* 8192^2 float32 with a dense 31x31 filter: worth a GPU, so AUTO asks
     * for one in a build with CUDA (none here may answer: then the CPU) */
    CHECK_OK(NULL, convolve_context_create(&ctx));
    const size_t big[2] = {8192, 8192};
    plan = plan_for(ctx, CONVOLVE_FLOAT32, 2, big, 1, 31);
    if (plan) {
        CHECK(ctx->cuda_probed == cuda_built, "big: probed %d, CUDA built %d", ctx->cuda_probed,
              cuda_built);
        if (cuda_built && cvcu_backend.estimate_ms) {
            double gpu = cvcu_backend.estimate_ms(&plan->problem, 0);
            double cpu = cvcpu_backend.estimate_ms(&plan->problem, 0);
            printf("test_auto_backend: 8192^2 31x31: estimates cpu %.1f ms, gpu %.1f ms\n", cpu,
                   gpu);
            CHECK(gpu < cpu, "big: the CPU estimated faster (%g < %g ms)", cpu, gpu);
            /* once started, CUDA's start-up no longer counts */
            CHECK(cvcu_backend.estimate_ms(&plan->problem, 1) < gpu, "started costs the same");
        }
        if (cuda_built && ctx->cuda.info.available)
            CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA, "big: planned on %s",
                  convolve_backend_name(convolve_plan_backend(plan)));
    }
    convolve_plan_free(plan);
    convolve_context_free(ctx);

    /* a new context once another found the GPU (the Python package makes a
     * context a plan): CUDA's start-up is not counted again, so work of
     * tens of milliseconds goes to the GPU: 8192^2 float32 31x31 (with the
     * start-up counted, the CPU's estimate wins on a 16-core host) */
    CHECK_OK(NULL, convolve_context_create(&ctx));
    plan = plan_for(ctx, CONVOLVE_FLOAT32, 2, big, 1, 31);
    if (plan && cuda_built && cvcu_backend.estimate_ms) {
        const int started = cvi_cuda_started(ctx), usable = cvi_cuda_usable(ctx);
        CHECK(!usable || started, "a new context: CUDA usable but not counted as started");
        printf("test_auto_backend: 8192^2 31x31, a second context: planned on %s\n",
               convolve_backend_name(convolve_plan_backend(plan)));
        if (usable)
            CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA,
                  "8192^2 31x31, a second context: planned on %s",
                  convolve_backend_name(convolve_plan_backend(plan)));
    }
    convolve_plan_free(plan);
    convolve_context_free(ctx);
    return h_finish("test_auto_backend");
}

/*
 * test_auto_backend.c - AUTO's choice of backend is made before CUDA is
 * touched: a photo-sized problem plans on the CPU without probing the
 * device (so the CLI never pays CUDA's start-up for it), a large one asks
 * for the device (in a build with CUDA), and the two backends' estimates
 * order as the model says. Looks inside the context (internal.h) for
 * whether the device was probed.
 */
#include "harness.h"
#include "backend.h"
#include "internal.h"

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

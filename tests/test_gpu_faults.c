/*
 * test_gpu_faults.c - the GPU running out of memory. The test takes nearly
 * all free device memory itself, then checks that
 *   - backend CUDA fails with DEVICE_OUT_OF_MEMORY and a message naming it,
 *     leaving the output untouched (poison intact) and the context usable;
 *   - backend AUTO (no strategy named) still writes the right result, by
 *     moving the plan to the CPU (convolve_plan_backend then says CPU);
 *   - a named GPU strategy under AUTO reports the error rather than moving;
 * and, once the memory is given back, that the GPU serves again.
 * Without a usable GPU it prints why and exits 77 (skipped).
 */
#include "harness.h"

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define MAX_HOLDS 4096

int main(void)
{
    h_seed("test_gpu_faults");
    convolve_context *ctx;
    CHECK_OK(NULL, convolve_context_create(&ctx));
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
#ifndef CONVOLVE_WITH_CUDA
    dev.available = 0;
#endif
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA) || !dev.available) {
        printf("test_gpu_faults: SKIPPED: no usable CUDA device (%s)\n", dev.reason);
        convolve_context_free(ctx);
        return 77;
    }
#ifdef CONVOLVE_WITH_CUDA
    /* 2048 x 2048 float32, 5x5 dense, reflect: 16 MiB in and out */
    const size_t shape[2] = {2048, 2048}, K[2] = {5, 5}, n = shape[0] * shape[1];
    double w[25];
    for (int i = 0; i < 25; i++)
        w[i] = h_uniform(-1.0, 1.0);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, K, w));
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref);
    h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
    convolve_layout lref;
    convolve_layout_init(&lref, CONVOLVE_FLOAT64, 2, shape, 1);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "reference";
    CHECK_OK(ctx, convolve_run(ctx, &l, x, &lref, ref, f, &o));
    double scale = 0;
    for (int i = 0; i < 25; i++)
        scale += fabs(w[i]);

    /* take the device memory: big pieces first, down to 1 MiB */
    void *hold[MAX_HOLDS];
    int held = 0;
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess, "cudaMemGetInfo");
    for (size_t piece = (size_t)1 << 30; piece >= ((size_t)1 << 20) && held < MAX_HOLDS;) {
        if (cudaMalloc(&hold[held], piece) == cudaSuccess)
            held++;
        else
            piece /= 2;
    }
    (void)cudaGetLastError();
    size_t left = 0;
    cudaMemGetInfo(&left, &total_b);
    printf("test_gpu_faults: holding %d pieces; %zu of %zu MiB free before, %zu after\n", held,
           free_b >> 20, total_b >> 20, left >> 20);

    /* backend CUDA: a clear error, the output left as it was */
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = NULL;
    convolve_plan *plan = NULL;
    h_poison(CONVOLVE_FLOAT32, y, n);
    convolve_status st = convolve_plan_create(ctx, &plan, &l, &l, f, &o);
    if (st == CONVOLVE_OK)
        st = convolve_execute(plan, x, y);
    CHECK(st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY, "backend cuda: got %s (%s)",
          convolve_status_name(st), convolve_last_error(ctx));
    CHECK(strstr(convolve_last_error(ctx), "memory") != NULL, "message: %s",
          convolve_last_error(ctx));
    printf("test_gpu_faults: backend cuda: %s: %s\n", convolve_status_name(st),
           convolve_last_error(ctx));
    int poisoned = 1;
    for (size_t i = 0; i < n; i++)
        if (!isnan(y[i])) {
            poisoned = 0;
            break;
        }
    CHECK(poisoned, "a failed run wrote to the output");
    convolve_plan_free(plan);

    /* a named GPU strategy under AUTO: the error, no silent move */
    o.backend = CONVOLVE_BACKEND_AUTO;
    o.strategy = "direct";
    plan = NULL;
    st = convolve_plan_create(ctx, &plan, &l, &l, f, &o);
    if (st == CONVOLVE_OK && convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA)
        st = convolve_execute(plan, x, y);
    CHECK(st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY, "auto + direct: got %s (%s)",
          convolve_status_name(st), convolve_last_error(ctx));
    convolve_plan_free(plan);

    /* AUTO, nothing named: the right result, from the CPU */
    o.strategy = NULL;
    plan = NULL;
    h_poison(CONVOLVE_FLOAT32, y, n);
    CHECK_OK(ctx, convolve_plan_create(ctx, &plan, &l, &l, f, &o));
    if (plan) {
        CHECK_OK(ctx, convolve_execute(plan, x, y));
        CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CPU,
              "auto plan still on %s after running out of device memory",
              convolve_backend_name(convolve_plan_backend(plan)));
        h_diff d = h_compare(CONVOLVE_FLOAT32, y, CONVOLVE_FLOAT64, ref, n, 2e-5 * scale, 1e-5);
        CHECK(d.bad == 0 && d.rel_l2 <= 1e-5, "auto fallback: %zu differ, relL2 %g", d.bad,
              d.rel_l2);
        printf("test_gpu_faults: backend auto: ran '%s' on the %s, relL2 %.2e\n",
               convolve_plan_strategy(plan), convolve_backend_name(convolve_plan_backend(plan)),
               d.rel_l2);
    }
    convolve_plan_free(plan);

    /* memory back: the GPU serves again, in the same context */
    for (int i = 0; i < held; i++)
        cudaFree(hold[i]);
    o.backend = CONVOLVE_BACKEND_CUDA;
    h_poison(CONVOLVE_FLOAT32, y, n);
    CHECK_OK(ctx, convolve_run(ctx, &l, x, &l, y, f, &o));
    h_diff d = h_compare(CONVOLVE_FLOAT32, y, CONVOLVE_FLOAT64, ref, n, 2e-5 * scale, 1e-5);
    CHECK(d.bad == 0, "after the memory came back: %zu differ", d.bad);

    convolve_filter_free(f);
    free(x), free(y), free(ref);
#endif
    convolve_context_free(ctx);
    return h_finish("test_gpu_faults");
}

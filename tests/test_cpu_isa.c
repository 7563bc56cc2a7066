/*
 * test_cpu_isa.c - the instruction set of the CPU kernels (src/cpu/isa.c):
 * CONVOLVE_CPU_ISA's values, its cap on what this CPU has (the test asks
 * the CPU itself), cvcpu_fast_limit_isa's cap below it and its removal,
 * the same answer from every thread, and the image strategy refused below
 * AVX2 with the reason named. CTest runs it once without CONVOLVE_CPU_ISA
 * and once per value (tests/CMakeLists.txt).
 */
#include "harness.h"
#include "cpu/cpu_backend.h"
#include "cpu/fast.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What this CPU has, asked here independently of the library. */
static int cpu_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return CVCPU_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return CVCPU_ISA_AVX2;
#endif
    return CVCPU_ISA_PORTABLE;
}

static void *other_thread(void *arg)
{
    *(int *)arg = cvcpu_isa();
    return NULL;
}

/* A plan of the image strategy on a small RGB uint8 image. */
static convolve_status image_plan(convolve_context *ctx)
{
    size_t shape[2] = {17, 23};
    convolve_layout lay;
    convolve_layout_init(&lay, CONVOLVE_UINT8, 2, shape, 3);
    convolve_filter *f = NULL;
    convolve_status st = convolve_filter_create_named(ctx, &f, "gaussian:1", 2);
    if (st != CONVOLVE_OK)
        return st;
    convolve_options o;
    convolve_options_init(&o);
    o.strategy = "image";
    convolve_plan *plan = NULL;
    st = convolve_plan_create(ctx, &plan, &lay, &lay, f, &o);
    convolve_plan_free(plan);
    convolve_filter_free(f);
    return st;
}

int main(void)
{
    CHECK(cvcpu_isa_parse("portable") == CVCPU_ISA_PORTABLE, "portable");
    CHECK(cvcpu_isa_parse("scalar") == CVCPU_ISA_PORTABLE, "scalar");
    CHECK(cvcpu_isa_parse("avx2") == CVCPU_ISA_AVX2, "avx2");
    CHECK(cvcpu_isa_parse("avx512") == CVCPU_ISA_AVX512, "avx512");
    CHECK(cvcpu_isa_parse("AVX2") == -1 && cvcpu_isa_parse("") == -1 &&
              cvcpu_isa_parse("avx") == -1 && cvcpu_isa_parse(NULL) == -1,
          "other values set no cap");

    const char *env = getenv("CONVOLVE_CPU_ISA");
    const int asked = cvcpu_isa_parse(env), cpu = cpu_isa();
    const int want = asked >= 0 && asked < cpu ? asked : cpu;
    CHECK(cvcpu_isa() == want, "CONVOLVE_CPU_ISA=%s on a CPU of level %d: %d, want %d",
          env ? env : "(unset)", cpu, cvcpu_isa(), want);
    int there = -1;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &there) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(there == want, "another thread: %d, want %d", there, want);

    /* the tests' cap: below the level only, and removed again */
    for (int cap = CVCPU_ISA_PORTABLE; cap <= CVCPU_ISA_AVX512; cap++) {
        cvcpu_fast_limit_isa(cap);
        CHECK(cvcpu_isa() == (cap < want ? cap : want), "cap %d: %d", cap, cvcpu_isa());
    }
    cvcpu_fast_limit_isa(-1);
    CHECK(cvcpu_isa() == want, "cap removed: %d, want %d", cvcpu_isa(), want);

    convolve_context *ctx = NULL;
    CHECK_OK(NULL, convolve_context_create(&ctx));
    if (want >= CVCPU_ISA_AVX2) {
        CHECK_OK(ctx, image_plan(ctx));
        cvcpu_fast_limit_isa(CVCPU_ISA_PORTABLE);
    }
    CHECK_STATUS(ctx, image_plan(ctx), CONVOLVE_ERROR_UNSUPPORTED);
    CHECK(strstr(convolve_last_error(ctx), "needs AVX2 and FMA") != NULL, "message: %s",
          convolve_last_error(ctx));
    cvcpu_fast_limit_isa(-1);
    convolve_context_free(ctx);
    return h_finish("test_cpu_isa");
}

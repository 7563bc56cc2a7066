/*
 * isa.c - the instruction set of the CPU backend's kernels: the CPU's
 * features and CONVOLVE_CPU_ISA, read once per process (the only place that
 * asks the CPU), and the tests' cap.
 */
#include "fast.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_isa;                             /* the CPU's, capped by CONVOLVE_CPU_ISA */
static atomic_int g_limit = CVCPU_ISA_AVX512; /* cvcpu_fast_limit_isa's cap */

int cvcpu_isa_parse(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "portable") || !strcmp(name, "scalar"))
        return CVCPU_ISA_PORTABLE;
    if (!strcmp(name, "avx2"))
        return CVCPU_ISA_AVX2;
    if (!strcmp(name, "avx512"))
        return CVCPU_ISA_AVX512;
    return -1;
}

static void read_cpu(void)
{
    int isa = CVCPU_ISA_PORTABLE;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        isa = CVCPU_ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa = CVCPU_ISA_AVX2;
#endif
    const int asked = cvcpu_isa_parse(getenv("CONVOLVE_CPU_ISA"));
    g_isa = asked >= 0 && asked < isa ? asked : isa;
}

int cvcpu_isa(void)
{
    pthread_once(&g_once, read_cpu);
    const int limit = atomic_load_explicit(&g_limit, memory_order_relaxed);
    return g_isa < limit ? g_isa : limit;
}

void cvcpu_fast_limit_isa(int isa)
{
    atomic_store_explicit(&g_limit, isa < 0 ? CVCPU_ISA_AVX512 : isa, memory_order_relaxed);
}

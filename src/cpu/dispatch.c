/*
 * dispatch.c - the CPU backend's strategy table, its "auto" choice, and the
 * dispatch of a plan to the chosen strategy.
 */
#include "cpu_backend.h"

#ifdef _OPENMP
#include <omp.h>
#endif

enum { CPU_REFERENCE = 0 };

static const cvi_strategy k_cpu_strategies[] = {
    {"reference", CONVOLVE_BACKEND_CPU, 7u, CPU_REFERENCE,
     "exact loops accumulating in double: the oracle every strategy is tested against", NULL,
     {0, 0, 0}},
};

const cvi_strategy *cvi_cpu_strategies(size_t *count)
{
    *count = sizeof k_cpu_strategies / sizeof k_cpu_strategies[0];
    return k_cpu_strategies;
}

const cvi_strategy *cvi_cpu_pick(const cvi_problem *p)
{
    (void)p;
    return &k_cpu_strategies[0];
}

int cvi_cpu_threads(const cvi_problem *p)
{
    if (p->threads > 0)
        return p->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

convolve_status cvi_cpu_execute(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p,
                                const void *in, void *out)
{
    convolve_status st;
    switch (s->id) {
    case CPU_REFERENCE:
        st = cvi_cpu_reference(p, in, out);
        break;
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "unknown CPU strategy %d", s->id);
    }
    if (st == CONVOLVE_ERROR_OUT_OF_MEMORY)
        return cvi_error(ctx, st, "out of memory in CPU strategy '%s'", s->name);
    return st;
}

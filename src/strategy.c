/*
 * strategy.c - the registry of named strategies: the CPU backend's table
 * followed by the CUDA backend's (empty when CUDA is not built).
 */
#include "internal.h"
#include "cpu/cpu_backend.h"
#include "cuda/backend.h"

#include <string.h>

size_t cvi_strategy_total(void)
{
    size_t ncpu, ncuda;
    cvi_cpu_strategies(&ncpu);
    cvcu_strategies(&ncuda);
    return ncpu + ncuda;
}

const cvi_strategy *cvi_strategy_at(size_t i)
{
    size_t ncpu, ncuda;
    const cvi_strategy *cpu = cvi_cpu_strategies(&ncpu);
    const cvi_strategy *cuda = cvcu_strategies(&ncuda);
    if (i < ncpu)
        return &cpu[i];
    if (i - ncpu < ncuda)
        return &cuda[i - ncpu];
    return NULL;
}

const cvi_strategy *cvi_strategy_find(convolve_backend backend, const char *name)
{
    for (size_t i = 0, n = cvi_strategy_total(); i < n; i++) {
        const cvi_strategy *s = cvi_strategy_at(i);
        if (s->backend == backend && strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

size_t convolve_strategy_count(void)
{
    return cvi_strategy_total();
}

convolve_status convolve_strategy_get(size_t index, convolve_strategy_info *info)
{
    const cvi_strategy *s = cvi_strategy_at(index);
    if (!s || !info)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    info->name = s->name;
    info->backend = s->backend;
    info->dims = s->dims;
    info->summary = s->summary;
    for (int a = 0; a < 3; a++)
        info->tile[a] = s->tile[a];
    return CONVOLVE_OK;
}

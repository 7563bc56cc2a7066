/*
 * strategy.c - the backends' tables and the registry of named strategies:
 * the CPU backend's strategies followed by the CUDA backend's (none when
 * CUDA is not built).
 */
#include "backend.h"
#include "internal.h"

#include <string.h>

const cvi_backend *cvi_backend_of(convolve_backend id)
{
    return id == CONVOLVE_BACKEND_CUDA ? &cvcu_backend : &cvcpu_backend;
}

int convolve_backend_built(convolve_backend backend)
{
    switch (backend) {
    case CONVOLVE_BACKEND_AUTO:
    case CONVOLVE_BACKEND_CPU: return 1;
    case CONVOLVE_BACKEND_CUDA: return cvcu_backend.prepare != NULL;
    }
    return 0;
}

/* The registry: the CPU strategies, then the CUDA ones. */
static size_t strategy_total(void)
{
    return cvcpu_backend.strategy_count + cvcu_backend.strategy_count;
}

static const cvi_strategy *strategy_at(size_t i)
{
    if (i < cvcpu_backend.strategy_count)
        return &cvcpu_backend.strategies[i];
    i -= cvcpu_backend.strategy_count;
    if (i < cvcu_backend.strategy_count)
        return &cvcu_backend.strategies[i];
    return NULL;
}

const cvi_strategy *cvi_strategy_find(convolve_backend backend, const char *name)
{
    if (backend != CONVOLVE_BACKEND_CPU && backend != CONVOLVE_BACKEND_CUDA)
        return NULL;
    const cvi_backend *b = cvi_backend_of(backend);
    for (size_t i = 0; i < b->strategy_count; i++)
        if (strcmp(b->strategies[i].name, name) == 0)
            return &b->strategies[i];
    return NULL;
}

size_t convolve_strategy_count(void)
{
    return strategy_total();
}

convolve_status convolve_strategy_get(size_t index, convolve_strategy_info *info)
{
    const cvi_strategy *s = strategy_at(index);
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

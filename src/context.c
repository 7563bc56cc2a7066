/*
 * context.c - contexts: creation, the last-error message, and the lazily
 * probed CUDA device.
 */
#include "internal.h"
#include "cuda/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

convolve_status cvi_error(convolve_context *ctx, convolve_status status, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

convolve_status cvi_ok(convolve_context *ctx)
{
    if (ctx)
        ctx->message[0] = '\0';
    return CONVOLVE_OK;
}

convolve_status convolve_context_create(convolve_context **ctx)
{
    if (!ctx)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *ctx = calloc(1, sizeof **ctx);
    return *ctx ? CONVOLVE_OK : CONVOLVE_ERROR_OUT_OF_MEMORY;
}

void convolve_context_free(convolve_context *ctx)
{
    if (ctx)
        cvi_wisdom_free(ctx->wisdom);
    free(ctx);
}

const char *convolve_last_error(const convolve_context *ctx)
{
    return ctx ? ctx->message : "no context";
}

int cvi_cuda_usable(convolve_context *ctx)
{
    if (!ctx->cuda_probed) {
        memset(&ctx->device, 0, sizeof ctx->device);
        cvcu_probe(&ctx->device, &ctx->shared_memory_per_block);
        ctx->cuda_probed = 1;
    }
    return ctx->device.available;
}

convolve_status convolve_device_query(convolve_context *ctx, convolve_device_info *info)
{
    if (!ctx || !info)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_device_query: NULL argument");
    cvi_cuda_usable(ctx);
    *info = ctx->device;
    return cvi_ok(ctx);
}
